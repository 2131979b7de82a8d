# capture: call=f inputs=x:f32[2,3]
import torch

cache = [torch.zeros(2, 3)]


def f(x):
    cache[0] = x * 2
    return x + cache[0]
