# capture: call=f inputs=x:f32[2,3]
from collections import OrderedDict

import torch


def f(x):
    out = OrderedDict()
    out["out"] = x * 2
    return out
