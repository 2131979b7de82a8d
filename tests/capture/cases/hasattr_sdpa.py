# capture: call=f inputs=x:f32[2,3]
import torch
import torch.nn as nn

import torch.nn.functional as F


def f(x):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(x, x, x)
    return torch.softmax(x @ x.t(), dim=-1) @ x
