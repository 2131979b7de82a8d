# capture: call=f inputs=x:f32[6,10]
import torch
import torch.nn as nn
import math


def f(x):
    h, w = x.shape
    a = min(h, w)
    b = max(h, w)
    q, r = divmod(w, 4)
    s = int(math.sqrt(h * w / 15))
    g = math.gcd(h, w)
    k = round(w / 4)
    c = abs(h - w)
    return x.reshape(a * b // g // s, g * s) * float(q + r + k + c)
