# capture: call=f inputs=x:f32[3],y:f32[3]
import torch
import torch.nn as nn


def combine(a, b, **extra):
    out = a + b
    for k, v in extra.items():
        out = out * v
    return out


def f(x, y):
    kw = {"scale": y}
    return combine(x, y, **kw), combine(a=x, b=y, gain=x)
