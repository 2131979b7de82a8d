# capture: call=model inputs=x:f32[2,3]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.feats = []

    def forward(self, x):
        self.feats.append(x * 2)
        return x + self.feats[-1] if len(self.feats) else x


model = M().eval()
