# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * x

    @staticmethod
    def backward(ctx, g):
        return g


def f(x):
    y = x + 1
    return Square.apply(y) * 2
