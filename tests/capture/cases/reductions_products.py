# capture: call=f inputs=x:f32[3,4,5],i:i64[3,4],m:f32[4,7]
# var_mean / std_mean (tuples, bound as var and std bind), median (global and along a dim,
# with a NaN), prod (global, dims, keepdim, dtype, integers) and cumprod.
import torch


def f(x, i, m):
    withnan = torch.where(m > 1.5, m / 0.0 * 0.0, m)  # NaN where m > 1.5
    vm = torch.var_mean(x, 1)
    return (
        vm, vm[0], torch.var_mean(x), torch.var_mean(x, dim=(0, 2), unbiased=False, keepdim=True),
        torch.var_mean(x, -1, correction=0), torch.std_mean(x, 2), torch.std_mean(x, [0, 1], keepdim=True),
        torch.median(x), torch.median(x, 1), x.median(dim=-1, keepdim=True).values, torch.median(m, 1).indices,
        torch.median(i), torch.median(i, 0), torch.median(withnan, 1), torch.median(withnan),
        torch.prod(x), torch.prod(x, 1), x.prod(-1, keepdim=True), torch.prod(x * 0.5, 2, dtype=torch.float64),
        torch.prod(i), i.prod(1), torch.prod(i > 1, 0), torch.prod(m, 1),
        torch.cumprod(x, 1), x.cumprod(dim=-1), torch.cumprod(i, 0), torch.cumprod(m, 1, dtype=torch.float64),
    )
