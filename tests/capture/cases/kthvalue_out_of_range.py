# capture: call=f inputs=x:f32[4,7]
import torch


def f(x):
    return torch.kthvalue(x, 8)
