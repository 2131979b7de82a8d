# capture: call=m inputs=x:f32[2,4]
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn as nn


@dataclass
class Output:
    logits: torch.Tensor
    loss: Optional[torch.Tensor] = None
    extra: list = field(default_factory=list)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        out = Output(self.fc(x))
        if out.loss is None:
            out2 = Output(logits=out.logits.softmax(-1), loss=out.logits.sum())
        return out2


m = M()
