# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    k = 3
    scale = lambda t: t * k
    add = lambda a, b=2: a + b
    return add(scale(x))
