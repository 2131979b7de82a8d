# capture: call=f inputs=x:f32[2,3],y:f32[3,2]
import torch


def f(x, y):
    a = x @ y
    b = x.transpose(0, 1)
    c = y.permute(1, 0).t()
    return a, [b, c + 1]
