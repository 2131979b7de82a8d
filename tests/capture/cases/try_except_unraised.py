# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    try:
        y = torch.relu(x)
    except RuntimeError:
        y = x
    try:
        import math
        s = math.sqrt(4.0)
    finally:
        pass
    return y * s
