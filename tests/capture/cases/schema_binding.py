# capture: call=f inputs=x:f32[4,6]
# Arguments bind through torch's schemas, by name, whichever form the call takes.
import torch
import torch.nn.functional as F


def f(x):
    a = torch.sum(x, dim=1, keepdim=True) + x.sum(1, True) + torch.sum(x, axis=1, keepdims=True)  # numpy names too
    b = torch.max(x, 1, True).values + x.amax(dim=(1,), keepdim=True)
    c = torch.transpose(input=x, dim0=0, dim1=1)                  # `input=` is aten's `self`
    d = x.view(6, -1).permute((1, 0)) + x.view(-1, 6).permute(1, 0).t()
    e = torch.var(x, 0, False, True) + x.std(dim=0, unbiased=False, keepdim=True)
    g = torch.clamp(x, max=0.5) + x.clamp(None, 0.25)
    h = torch.softmax(x, 1, torch.float64)                        # softmax.int: dtype is argument 2
    i = F.softmax(x, 1, 3, torch.float64)                         # F.softmax: _stacklevel, then dtype
    j = torch.zeros(4, 6, dtype=torch.float64, requires_grad=False) + torch.full((4, 6), 2.0)
    k = torch.arange(1, 7, 2) * torch.arange(end=3)
    m = torch.cat(tensors=[x, x], dim=0)
    n = torch.split(x, 2, dim=0)[1] + x.split(split_size=2)[0]
    return a, b, c, d, e, g, h, i, j, k, m, n
