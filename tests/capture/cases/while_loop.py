# capture: call=f inputs=x:f32[16]
import torch
import torch.nn as nn


def f(x):
    n = x.shape[0]
    while n > 2:
        x = x.reshape(2, n // 2).sum(0)
        n = n // 2
    return x
