# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn

USE_TANH = True
SCALE = 3


def f(x):
    if USE_TANH:
        x = torch.tanh(x)
    if SCALE > 2:
        x = x * SCALE
    return x
