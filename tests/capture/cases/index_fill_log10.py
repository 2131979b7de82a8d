# capture: call=f inputs=x:f32[3,6],i:i64[2]
import torch


def f(x, i):
    a = x.clone().index_fill_(1, torch.tensor([0, 5]), 7.0)
    b = x.index_fill(0, i - 4, -1.0)
    yy, xx = torch.meshgrid(torch.arange(3.0), torch.arange(6.0), indexing="xy")
    return a, b, x.abs().log10(), xx + yy
