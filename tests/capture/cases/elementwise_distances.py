# capture: call=f inputs=x:f32[2,3,4],w:f32[3],w1:f32[1],a:f32[2,5,4],b:f32[2,6,4],p:f32[6,4],q:f32[6,4],l:f32[5,3],r:f32[5,2],bw:f32[4,3,2],bb:f32[4]
# prelu (per channel and shared), nan_to_num, frac, cdist (several p), pairwise_distance and
# bilinear; nn.PReLU and nn.Bilinear through their modules.
import torch
import torch.nn.functional as F


def f(x, w, w1, a, b, p, q, l, r, bw, bb):
    odd = torch.log(x) / (x * 0.0)  # NaN, +inf and -inf
    return (
        torch.prelu(x, w), F.prelu(x, w1), F.prelu(x[:, :, 0], w), x.prelu(w),
        torch.nan_to_num(odd), torch.nan_to_num(odd, nan=1.5, posinf=9.0), odd.nan_to_num(neginf=-7.0),
        torch.nan_to_num(odd.double()), torch.nan_to_num(odd.half()),
        torch.frac(x * 3.7), (x * -2.3).frac(),
        torch.cdist(a, b), torch.cdist(a, b, p=1), torch.cdist(a[0], b[0], p=3.0), torch.cdist(a, b, p=0),
        torch.cdist(a, b, p=float("inf")), torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
        F.pairwise_distance(p, q), F.pairwise_distance(p, q, p=1.0, keepdim=True),
        torch.pairwise_distance(p, q[0], 3.0, 1e-3),
        F.bilinear(l, r, bw, bb), torch.bilinear(l[None], r[None], bw, None), F.bilinear(l, r, bw),
    )
