# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def helper(t):
    return t, (t * 2, [t * 3])


def f(x):
    a, (b, [c]) = helper(x)
    return {"sum": a + b + c, "parts": (a, b)}
