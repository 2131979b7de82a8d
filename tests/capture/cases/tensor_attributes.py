# capture: call=f inputs=x:f32[2,3,4]
import torch
import torch.nn as nn


def f(x):
    n = x.numel()
    d = x.dim() + x.ndim
    s = x.size(1) * x.size(-1)
    if x.dtype == torch.float32 and not x.is_cuda and x.device.type == "cpu":
        x = x * 2
    return x.reshape(n // s, s).T * (d + x.shape.numel())
