# capture: call=f inputs=x:f32[2,3]
# After a data-dependent break, explain resumes with the live tensors as inputs: an in-place
# update of one is reported as carried over from before the break, not as a weight.
import torch


def f(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    y.add_(1)
    return y
