# capture: call=model inputs=x:f32[2,8]
import torch
import torch.nn as nn

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cfg:
    dims: tuple = (8, 4)
    act: str = "tanh"
    extra: list = field(default_factory=lambda: [1, 2])


class M(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.fc = nn.Linear(*cfg.dims)

    def forward(self, x):
        h = self.fc(x)
        if self.cfg.act == "tanh":
            h = torch.tanh(h)
        return h * sum(self.cfg.extra)


model = M(Cfg())
