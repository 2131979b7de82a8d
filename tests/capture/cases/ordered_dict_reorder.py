# capture: call=f inputs=x:f32[2,3]
# OrderedDict.move_to_end and popitem reorder a dict of tensors as Python does.
from collections import OrderedDict


def f(x):
    d = OrderedDict()
    d["a"] = x + 1
    d["b"] = x * 2
    d["c"] = x - 3
    d.move_to_end("a")
    d.move_to_end("c", last=False)
    key, last = d.popitem()
    first_key, first = d.popitem(last=False)
    return d, key, last, first_key, first
