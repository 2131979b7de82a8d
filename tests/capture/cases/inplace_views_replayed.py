# capture: call=f inputs=x:f32[4,6]
# In-place updates through views reach their base, and updates of a base reach its live views,
# as in torch: views of views, splits, stepped slices, transposes and selects.
import torch


def f(x):
    a = x * 1.0
    a[:, 0].fill_(1.0)          # a temporary view
    row = a[1]
    row.add_(2.0)               # through a view into its base
    t = a.t()
    t[0].mul_(3.0)              # a view of a view
    parts = a.split(2, dim=0)
    parts[1].sub_(1.0)
    v = a.view(24)
    v[::5].zero_()              # a stepped slice of a flat view
    a.mul_(0.5)                 # the base: every live view sees it
    u = a.unsqueeze(0).squeeze(0).permute(1, 0)
    u.add_(1.0)
    d = a.select(1, 2)
    d.div_(2.0)
    n = a.narrow(1, 3, 2)
    n.clamp_(max=0.7)
    c = a[[0, 2]]               # advanced indexing copies: its update stays its own
    c.add_(100.0)
    return a, row, t, parts[0], parts[1], v, u, d, n, c
