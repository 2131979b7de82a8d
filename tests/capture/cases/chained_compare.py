# capture: call=f inputs=x:f32[2,5]
import torch
import torch.nn as nn


def f(x):
    if 1 < x.shape[0] <= 2 < x.shape[1]:
        return x + 1
    return x
