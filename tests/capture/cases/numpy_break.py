# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    y = torch.relu(x)
    arr = y.numpy()
    return y * float(arr.shape[0])
