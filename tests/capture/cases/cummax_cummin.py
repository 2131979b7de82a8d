# capture: call=f inputs=x:f32[4,6],i:i64[3,5]
import torch


def f(x, i):
    ties = (x * 2).round()  # repeated values: torch keeps the latest index of the running max/min
    with_nan = torch.where(x > 1.0, torch.full_like(x, float("nan")), x)
    m = torch.cummax(ties, dim=1)
    lo = ties.cummin(-2)
    v, idx = torch.cummin(with_nan, -1)
    return (m.values, m.indices, lo.values, lo.indices, v, idx, with_nan.cummax(0),
            i.cummax(1), torch.cummin(i, dim=-1), torch.cummax(x[0, 0], 0))
