# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))
        self.hidden = 4

    @property
    def scaled(self):
        return self.w * 2

    @property
    def width(self):
        return self.hidden

    def forward(self, x):
        assert x.shape[1] == self.width
        return x * self.scaled


model = M()
