# capture: call=f inputs=b:f32[5,4]
import torch


def f(b):
    b = b.clone()
    b[:, 0::2] = b[:, 0::2].clamp(0, 1)
    return b
