# capture: call=f inputs=x:f32[4,5],s:f32[4,5],i:i64[4,5],k:i64[2,3],j:i64[4],y:f32[6,4],src:f32[4,4],n:i64[4,5]
# scatter (src or value; duplicate indices: the last write wins, as torch's CPU loop),
# scatter_add, index_add (alpha), their in-place forms, and take_along_dim.
import torch


def f(x, s, i, k, j, y, src, n):
    a = x * 1.0
    a.scatter_(1, i, s)
    b = x * 1.0
    b.scatter_add_(0, i, s)
    c = y * 1.0
    c.index_add_(0, j, src, alpha=0.5)
    return (
        torch.scatter(x, 1, i, s), x.scatter(0, i, 2.5), x.scatter(1, k, s), torch.scatter(x, -1, k, src=s),
        x.scatter(0, k, -1.0), n.scatter(1, i, 7),
        torch.scatter_add(x, 1, i, s), x.scatter_add(0, k, s), n.scatter_add(1, i, n),
        torch.index_add(y, 0, j, src), y.index_add(1, j, y[:, :4]), torch.index_add(y, 1, j, y[:, :4] * 3, alpha=2),
        torch.index_add(n, 1, j, n[:, :4]),
        torch.take_along_dim(x, i, 1), torch.take_along_dim(x, i), torch.take_along_dim(x, k[:, :1], dim=0),
        x.take_along_dim(torch.argsort(x, 1), dim=1), torch.take_along_dim(x, j[:, None], 1),
        a, b, c,
    )
