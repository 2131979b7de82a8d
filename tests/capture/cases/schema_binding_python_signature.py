# capture: call=f inputs=x:f32[4,6]
# F.* functions written in Python bind as Python binds them.
import torch.nn.functional as F


def f(x):
    return F.softmax(x, 1, dim=0)
