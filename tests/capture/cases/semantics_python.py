# capture: call=f inputs=x:f32[2,3]
import torch


def add_all(items, extra=None):
    total = items[0]
    for t in items[1:]:
        total = total + t
    if extra is not None:
        total = total + extra
    return total


def f(x):
    a = [x]
    b = a               # the same list
    b.append(x * 2)
    fns = [lambda t, k=k: t * k for k in range(3)]   # default binds each k
    outs = [fn(x) for fn in fns]
    d = {"z": x, "a": x + 1}
    d["m"] = x - 1
    keys = list(d)
    n = x.shape[0]
    n += 1
    s = sum(t.sum() for t in a)
    return add_all(a), outs[2], d[keys[-1]], n, s, x[-1, ::2], x[..., None].shape, x[:, [0, 2]]
