# capture: call=model inputs=x:f32[2,3]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
        self.mode = "relu"

    def forward(self, x):
        if isinstance(x, torch.Tensor) and isinstance(self.act, nn.ReLU):
            x = self.act(x)
        if isinstance((x, x), tuple):
            x = x + 1
        fn = getattr(torch, self.mode)
        if hasattr(self, "missing"):
            x = x * 100
        return fn(getattr(self, "act")(x))


model = M()
