# capture: call=model inputs=x:f32[3]
import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x):
        self.last = x * 2
        return self.last + 1


model = M()
