# capture: call=f inputs=x:f32[2,8,4,4],a:f32[3,4],b:f32[4,5],c:f32[3,5],i:i64[6],j:i64[6],logits:f32[6,5],t:i64[6]
# Ops real model code uses, composed of graph ops: isnan/isinf/isfinite, log2, trunc, xor,
# addmm/baddbmm, glu, pixel_(un)shuffle, the losses of a `targets` path, fill_/copy_.
import torch
import torch.nn.functional as F


def f(x, a, b, c, i, j, logits, t):
    x.requires_grad_()  # a no-op at inference
    y = torch.log(x)  # NaN below zero
    z = 1.0 / (x * 0.0)  # +inf and -inf
    classes = (torch.isnan(y), torch.isinf(z), torch.isfinite(y), y.isnan(), torch.isfinite(i))
    w = x * 1.0
    w.fill_(2.5)
    u = a * 1.0
    u.copy_(c[:, :4])
    losses = (
        F.cross_entropy(logits, t),
        F.cross_entropy(logits, t, ignore_index=1, reduction="none"),
        F.nll_loss(F.log_softmax(logits, 1), t, reduction="sum"),
    )
    return classes, (
        torch.log2(x.abs() + 1),
        torch.trunc(x * 3),
        i ^ j,
        torch.bitwise_xor(i, 3),
        torch.addmm(c, a, b, beta=0.5, alpha=2),
        torch.baddbmm(c.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)),
        F.glu(x, dim=1),
        F.pixel_shuffle(x, 2),
        F.pixel_unshuffle(x, 2),
        w,
        u,
        x.ndimension() * x,
    ), losses
