# capture: call=f inputs=x:f32[4,3],mask:bool[4,3]
import torch


def f(x, mask):
    x[0] = 0.0  # updates the caller's tensor: written back after the call
    x.masked_fill_(mask, -1.0)
    return x.sum(dim=1)
