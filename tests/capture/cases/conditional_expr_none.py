# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x, bias=None):
    y = x * 2
    y = y if bias is None else y + bias
    z = None
    if z is not None:
        y = y + z
    return y
