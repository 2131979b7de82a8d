# capture: call=f inputs=x:f32[3,4]
# isinstance and type() see the Python type of each traced value: a dataclass instance is its
# class, not a dict; lists, tuples and torch.Size of tensors or shapes are what they are.
from dataclasses import dataclass

import torch


@dataclass
class Out:
    a: torch.Tensor
    b: torch.Tensor


def f(x):
    o = Out(x + 1, x * 2)
    r = []
    if isinstance(o, Out) and not isinstance(o, dict):
        r.append(o.a)
    if type([x]) is list and type((x,)) is tuple and type(o) is Out:
        r.append(o.b)
    if isinstance(x.shape, torch.Size) and isinstance(x, torch.Tensor) and isinstance(x.shape, (list, tuple)):
        r.append(x - 1)
    r.append(x * len(r) + len(x))
    return r
