# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.b = nn.Linear(4, 3)
        self.a = nn.Linear(3, 5)
        self.c = nn.ReLU()
        self.shared = self.b  # registered twice: children() yields it once

    def forward(self, x):
        for m in self.children():
            x = m(x)
        return x


torch.manual_seed(0)
model = M()
