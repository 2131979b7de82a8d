# capture: call=f inputs=x:f32[2,3,4],ids:i64[2,3]
import torch
import torch.nn.functional as F


def f(x, ids):
    y = x * 1.0
    y.clamp_(min=0).mul_(2).add_(1)
    r = [  # math and tensor functions from real model code, each compared with eager
        F.normalize(x, dim=-1),
        F.cosine_similarity(x, y, dim=-1),
        torch.norm(x, dim=1),
        x.norm(p=2),
        x.std(dim=1),
        F.one_hot(ids, num_classes=5),
        torch.stack([x, y]).mean(0),
        torch.linspace(0, 1, 5),
        x.norm(dim=-1, keepdim=True),
        torch.norm(x, p=1, dim=(1, 2)),
        torch.linalg.vector_norm(x, ord=float("inf"), dim=2),
        torch.cosine_similarity(x, y[:, :1], dim=-1),
        torch.sort(x, dim=1, descending=True).indices,
        torch.roll(x, shifts=(1, -1), dims=(1, 2)),
        torch.roll(x, 5),
        torch.sinh(x), torch.cosh(x),
        torch.eye(3),
        torch.zeros_like(x, dtype=torch.bool),
        x.split([1, 3], dim=2)[1],
        x.mT,
        x.flatten(1),
        F.gelu(x, approximate="tanh"),
        F.mish(x),
        F.logsigmoid(x),
        F.softsign(x),
        torch.sign(x),
        torch.log1p(y),
        torch.expm1(x),
        torch.reciprocal(y),
        torch.square(x),
        torch.tan(x),
        torch.einsum("bij,bkj->bik", x, y),
        torch.argsort(x, dim=-1),
        torch.sort(x, dim=-1).values,
        torch.exp2(x),
        torch.erfc(x),
        torch.sinh(x),
        torch.logical_xor(x > 0, y > 1),
        torch.flip(x, [0, 2]),
        torch.roll(x, 1, dims=2),
        x.repeat_interleave(2, dim=1),
        torch.diff(x, dim=2),
    ]
    return r
