# capture: call=f inputs=x:f32[2,3]
import torch
import torch.nn as nn


def g(*ts, scale=1):
    out = ts[0]
    for t in ts[1:]:
        out = out + t
    return out * scale


def f(x):
    args = [x, x * 2]
    kw = {"scale": 3}
    return g(*args, **kw), g(*(x, x), x)
