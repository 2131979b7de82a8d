# capture: call=f inputs=x:f32[4,4]
import torch


def make_scaler(k):
    def scale(t):
        return t * k
    return scale


double = make_scaler(2.0)


def helper(t, bias=1.0, *, negate=False):
    out = double(t) + bias
    return -out if negate else out


def f(x):
    return helper(x, negate=True) + helper(x, bias=0.5)
