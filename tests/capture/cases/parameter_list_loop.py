# capture: call=m inputs=x:f32[2,4]
import torch
import torch.nn as nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([nn.Parameter(torch.randn(4)) for _ in range(2)])
    def forward(self, x):
        for p in self.scales:
            x = x * p
        return x

torch.manual_seed(0)
m = M()
