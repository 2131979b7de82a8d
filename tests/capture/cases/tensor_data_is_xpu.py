# capture: call=f inputs=x:f32[2,3]
import torch


def f(x):
    y = x.data.clone()
    if x.is_cuda or x.is_xpu or not x.is_leaf or x.grad is not None:
        return x * 2
    return y.fill_(0.5) + x
