# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    y = x * 2
    vals = y.tolist()
    return y + len(vals)
