# capture: call=f inputs=h:f16[2,3],n:i32[2,3]
import torch

def f(h, n):
    # eager: a 0-dim tensor does not widen a dimensioned operand of the same category
    a = h + torch.tensor(2.0)   # eager f16
    b = n + torch.tensor(5)     # eager i32
    c = n * h.sum()             # eager f16 (category changes, 0-dim's dtype f16)
    return a, b, c
