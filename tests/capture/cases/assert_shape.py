# capture: call=f inputs=x:f32[2,8]
import torch
import torch.nn as nn


def f(x):
    assert x.dim() == 2, "expects a matrix"
    assert x.shape[1] % 4 == 0
    return x.reshape(x.shape[0], 2, 4).sum(-1)
