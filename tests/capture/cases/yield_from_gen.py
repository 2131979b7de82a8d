# capture: call=f inputs=x:f32[2,3]
import torch


def parts(x):
    yield x
    yield from (x * i for i in range(2, 4))
    r = yield from sub(x)
    yield r


def sub(x):
    yield x + 1
    return x - 1


def f(x):
    return torch.stack(list(parts(x)))
