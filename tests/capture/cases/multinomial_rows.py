# capture: call=f inputs=p:f32[20000,4]
# One draw per row of 20000 (differential_test's Multinomial.* feeds rows [0.1, 0, 0.6, 0.3] and
# counts the categories drawn).
import torch


def f(p):
    return torch.multinomial(p.abs(), 1)
