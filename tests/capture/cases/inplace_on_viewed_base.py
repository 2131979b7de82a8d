# capture: call=f inputs=x:f32[4,3]
import torch


def f(x):
    a = x * 1.0
    flat = a.view(12)
    a.mul_(2.0)  # flat sees the update in torch
    return flat
