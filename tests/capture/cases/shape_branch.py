# capture: call=f inputs=x:f32[4,300]
import torch


def f(x):
    if x.shape[1] > 256:
        return torch.tanh(x)
    return torch.relu(x)
