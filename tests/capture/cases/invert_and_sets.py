# capture: call=f inputs=x:f32[2,3],m:bool[2,3],i:i64[2,3]
import torch

SIZES = {1, 2} | {3}


def f(x, m, i):
    doubled = {k * 2 for k in range(3)}
    scale = len(SIZES) + (4 in doubled) + (5 in doubled) + (~7 + 8)  # 3 + True + False + 0
    return torch.where(~m, x * scale, x), ~i
