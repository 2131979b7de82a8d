# capture: call=m inputs=x:f32[2,3],y:f32[2,3]
# A forward wrapped by a functools.wraps decorator: the entry's frame is the wrapper's, which
# takes the inputs as *args and **kwargs; both stay graph inputs.
import functools
import torch
import torch.nn as nn

def deco(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs) * 2
    return wrapper

class M(nn.Module):
    @deco
    def forward(self, x, y):
        return x - y

m = M()
