# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    scales = {"a": x, "b": x * 2, "c": x * 3}
    total = x
    for name, v in scales.items():
        if name != "b":
            total = total + v
    for k in scales:
        total = total + scales[k]
    assert len(scales) == 3 and "a" in scales
    return total
