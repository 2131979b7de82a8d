# capture: call=f inputs=x:f32[4,5,6],i:i64[3],j:i64[3],k:i64[2,1]
import torch


def f(x, i, j, k):
    a = x[i, j]                      # [3, 6]
    b = x[:, i, j]                   # [4, 3]
    c = x[i, :, j]                   # not adjacent: [3, 5]
    d = x[k, i]                      # broadcast [2, 3] then [2, 3, 6]
    e = x[torch.arange(4), 1, k[0]]  # int between tensors
    g = x[i - 4, j]                  # negative indices wrap
    y = x.clone()
    y[i, j] = 0.5
    z = x.clone()
    z[:, i, j] = torch.ones(4, 3)
    w = x.clone()
    w[torch.arange(4), i[0]] = -float("inf")
    return a, b, c, d, e, g, y, z, w
