# capture: call=f inputs=x:f32[2,3,4]
# Updates through split, diagonal and unbind views reach their base and each other.
import torch
def f(x):
    a = x.clone()
    q, k = a.split(2, dim=-1)
    q.mul_(torch.arange(2.0))
    k.copy_(q.flip(-1))
    d = a.diagonal(dim1=-2, dim2=-1)
    d.zero_()
    u = a.unbind(0)
    u[1].neg_()
    return a, q, k, d
