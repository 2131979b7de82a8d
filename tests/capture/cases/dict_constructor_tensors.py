# capture: call=f inputs=x:f32[2,3]
import torch

def f(x):
    d = dict(a=x, b=x * 2)
    return d["b"] + 1
