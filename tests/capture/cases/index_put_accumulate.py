# capture: call=f inputs=x:f32[6,3],i:i64[6],j:i64[6]
# index_put(_) with one or two index tensors; accumulate=True sums values whose indices repeat
# (the integer inputs are small, so they do), and without it a repeated index keeps the last
# write, as torch's CPU loop (a bool tensor's sums: any).
import torch


def f(x, i, j):
    a = torch.zeros(4, 3).index_put_((i,), x, accumulate=True)
    b = torch.zeros(4, 3).index_put((i, j % 3), x[:, 0], accumulate=True)
    c = torch.ones(4, 3)
    c.index_put_((i[:1],), x[:1])
    d = torch.zeros(4, 3)
    d[i] = x
    e = torch.zeros(4, 3)
    e[i, j % 3] = x[:, 1]
    m = torch.zeros(4, dtype=torch.bool).index_put((i,), x[:, 0] > 0, accumulate=True)
    return a, b, c, d, e, m
