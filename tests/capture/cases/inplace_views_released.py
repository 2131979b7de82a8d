# capture: call=f inputs=x:f32[4,3]
import torch


def f(x):
    a = x * 2.0
    a = a.view(12)  # the base is no longer reachable: updating the view is safe
    a.add_(1.0)
    c = a.float()  # the same tensor (already float32): an alias
    c.mul_(3.0)
    y = x.t().contiguous() * 1.0
    y += 1.0
    return a, y
