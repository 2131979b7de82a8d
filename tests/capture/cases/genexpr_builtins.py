# capture: call=f inputs=x:f32[2,3]
import torch
import torch.nn as nn


def f(x):
    parts = [x, x * 2, x * 3]
    total = sum(p for p in parts)
    n = sum(d for d in x.shape)
    big = any(d > 2 for d in x.shape)
    ok = all(d > 0 for d in x.shape)
    dims = tuple(d * 2 for d in x.shape)
    if big and ok:
        total = total + n
    return total.reshape(dims[0] // 2, dims[1] // 2), list(p + 1 for p in parts)[0]
