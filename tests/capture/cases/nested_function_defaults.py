# capture: call=f inputs=x:f32[2,3]
import torch
import torch.nn as nn


def norm(t, dim=-1, *, eps=1e-5):
    return t / (t.sum(dim, keepdim=True) + eps)


def f(x):
    return norm(x), norm(x, 0, eps=1.0)
