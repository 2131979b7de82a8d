# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        h = self.seq[0](x)
        for layer in self.seq[1:]:
            h = layer(h)
        assert len(self.seq) == 3
        return h


model = M()
