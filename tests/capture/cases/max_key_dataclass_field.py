# capture: call=f inputs=a:f32[2,3],b:f32[2,5]
# max/min by key= over tensors (the key computed at compile time), and a field of a dataclass
# instance assigned after it was built (HF ModelOutput style).
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class Out:
    h: torch.Tensor
    p: Optional[torch.Tensor] = None


def f(a, b):
    widest = max([a, b], key=lambda t: t.shape[1])
    narrowest = min(a, b, key=lambda t: t.shape[1])
    o = Out(h=widest * 2)
    o.p = narrowest.sum(-1)
    return o.h + o.p[:, None], max([3, 1, 2]), min((a.shape[1], 4))
