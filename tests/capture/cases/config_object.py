# capture: call=model inputs=x:f32[2,8]
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class Config:
    d: int = 8
    use_tanh: bool = True
    scale: float = 0.5


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.proj = nn.Linear(cfg.d, cfg.d)

    def forward(self, x):
        h = self.proj(x) * (self.cfg.scale / math.sqrt(self.cfg.d))
        if self.cfg.use_tanh:
            h = torch.tanh(h)
        if self.training:
            h = h * 0
        return h


model = Block(Config())
