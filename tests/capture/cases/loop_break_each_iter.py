# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    for i in range(2):
        x = x + 1
        print(x)
    return x
