# capture: call=f inputs=x:f32[4,8]
# minGPT's NewGELU: torch.pow(x, 3.0) of negative x is -|x|^3, not NaN.
import math

import torch


def f(x):
    return torch.pow(x, 3.0), x ** 2.0, 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
