# capture: call=f inputs=x:f32[2,6]
import torch
import torch.nn as nn


def f(x):
    assert x.shape[1] % 4 == 0, "width must be a multiple of 4"
    return x
