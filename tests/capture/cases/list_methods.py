# capture: call=f inputs=x:f32[3]
import torch
import torch.nn as nn


def f(x):
    acc = [x]
    acc.append(x * 2)
    acc.extend([x * 3, x * 4])
    acc.insert(0, x * 0)
    last = acc.pop()
    first = acc.pop(0)
    assert len(acc) == 3
    return last + first + acc[-1]
