# capture: call=f inputs=x:f32[3,5,4],v:f32[5],i:i64[4,6]
# x[index] = value on intermediate tensors: ints, slices, `...`, a scalar or a tensor value that
# broadcasts, and an integer target keeping its dtype.
import torch


def f(x, v, i):
    y = x.clone()
    y[0] = 1.5
    y[1, 1:4] = v[:4]
    y[..., -1] = -2.0
    y[2, :, 0:2] = v.unsqueeze(1)
    j = i * 1
    j[1:3, 2:] = 7.9  # cast to int64, as torch does
    return y, j
