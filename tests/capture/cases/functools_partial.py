# capture: call=f inputs=x:f32[2,3]
import torch
import torch.nn as nn
import functools

act = functools.partial(torch.softmax, dim=-1)


def add(a, b, alpha):
    return a + b * alpha


def f(x):
    g = functools.partial(add, alpha=0.5)
    return act(x), g(x, x)
