# capture: call=f inputs=x:f32[3,4,6],y:f32[6,5]
import torch
import torch.nn.functional as F


def f(x, y):
    z = torch.where(x > 1.0, torch.full_like(x, float("nan")), x)
    return (z.nansum(-1), torch.nansum(z), torch.count_nonzero(x > 0, dim=1), torch.msort(x),
            torch.tensordot(x, y, dims=1), torch.tensordot(x, x, dims=([1, 2], [1, 2])),
            F.interpolate(x.unsqueeze(0), size=(2, 4), mode="area"))
