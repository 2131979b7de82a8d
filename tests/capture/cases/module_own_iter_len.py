# capture: call=m inputs=x:f32[2,4]
import torch
import torch.nn as nn

class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
    def __iter__(self):
        return iter([self.b, self.a])
    def __len__(self):
        return 5
    def forward(self, x):
        for l in self:
            x = l(x)
        return x, len(self)

torch.manual_seed(0)
m = Pair()
