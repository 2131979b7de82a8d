# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    tmp = x * 2
    out = tmp + 1
    del tmp
    return out
