# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    y = x * 2
    alias = y
    y += 1
    y.mul_(3)
    return alias
