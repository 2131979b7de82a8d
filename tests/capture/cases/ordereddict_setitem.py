# capture: call=f inputs=x:f32[2,3]
import collections
import torch

def f(x):
    od = collections.OrderedDict()
    od["a"] = x + 1
    return od["a"]
