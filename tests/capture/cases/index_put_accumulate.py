# capture: call=f inputs=x:f32[6,3],i:i64[6],j:i64[6]
# index_put(_) with one or two index tensors; accumulate=True sums values whose indices repeat
# (the integer inputs are small, so they do).
import torch


def f(x, i, j):
    a = torch.zeros(4, 3).index_put_((i,), x, accumulate=True)
    b = torch.zeros(4, 3).index_put((i, j % 3), x[:, 0], accumulate=True)
    c = torch.ones(4, 3)
    c.index_put_((i[:1],), x[:1])
    return a, b, c
