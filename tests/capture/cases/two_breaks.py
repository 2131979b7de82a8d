# capture: call=f inputs=x:f32[4]
import torch
import torch.nn as nn


def f(x):
    y = x * 2
    print("y is", y)
    z = torch.relu(y)
    if z.sum() > 0:
        z = z + 1
    return z - 1
