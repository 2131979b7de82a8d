# capture: call=f inputs=x:f32[3,4],b:f32[4]
import torch


def f(x, b):
    y = x * 2.0 + b
    return 1 - torch.sigmoid(y) / 3
