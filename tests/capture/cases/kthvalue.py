# capture: call=f inputs=x:f32[4,7]
import torch


def f(x):
    with_nan = torch.where(x > 1.0, torch.full_like(x, float("nan")), x)
    r = x.round()
    # Equal values: torch's index is whichever its quickselect leaves, so compare what it picks.
    tv, ti = r.kthvalue(4)
    return (torch.kthvalue(x, 3), x.kthvalue(1, dim=0, keepdim=True), torch.kthvalue(x, 7, -1).indices,
            torch.kthvalue(with_nan, k=5, dim=-1), with_nan.kthvalue(2, 0).values,
            tv, r.gather(-1, ti.unsqueeze(-1)), torch.kthvalue(x[0, 0], 1))
