# capture: call=f inputs=x:f32[3]
# Graph breaks (torch.lgamma has no mapping) inside a closure, a comprehension, a generator
# expression and a `with` block: explain resumes after each and reports all of them.
import torch

aten = torch.ops.aten


def f(x):
    scale = 2.0

    def inner(e):
        return torch.lgamma(x) * e * scale

    ys = [inner(e) for e in range(2)]
    g = sum(torch.lgamma(x) * e for e in range(3))
    with torch.no_grad():
        z = torch.lgamma(x) + 1
    return ys[0] + ys[1] + g + z
