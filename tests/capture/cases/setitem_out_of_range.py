# capture: call=f inputs=x:f32[4,4],i:i64[3],j:i64[3]
# x[i, j] = v and x[:, i] = v through index tensors; differential_test's
# IndexWritesPastTheirDimWriteNothing runs it with indices past their dim, where torch raises:
# no other element is written.
import torch


def f(x, i, j):
    y = x * 1.0
    y[i, j] = 5.0
    z = x * 1.0
    z[:, i] = -1.0
    return y, z
