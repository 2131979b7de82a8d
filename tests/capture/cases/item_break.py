# capture: call=f inputs=x:f32[4]
import torch


def f(x):
    if x.sum().item() > 0:
        return x * 2
    return x
