# capture: call=f inputs=x:f32[3]
import torch

def f(x):
    return [torch.lgamma(x) * e for e in range(-8, 9)]
