# capture: call=f inputs=x:f32[3]
# A comprehension over aten calls (explain once crashed resuming after it broke).
import torch

aten = torch.ops.aten


def f(x):
    return [aten.pow(x, e) for e in range(-8, 9)]
