# capture: call=f inputs=x:f32[3,4]
# Tensor methods and attributes of inference code: detach/requires_grad_ (no-ops), len,
# ndimension, __class__, torch._shape_as_tensor.
import torch


def f(x):
    a = x.detach().requires_grad_(False)
    n = len(x) + x.ndimension()
    ok = isinstance(x, x.__class__)
    return a * n, ok, torch._shape_as_tensor(x)
