# capture: call=f inputs=x:f32[4]
import torch
import torch.nn as nn


def f(x):
    y = x + 1
    z = torch.histc(y, bins=4)
    return z * 2
