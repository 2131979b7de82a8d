# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.full((4,), 0.5))
        self.register_buffer("scale", torch.full((4,), 2.0), persistent=False)

    def forward(self, x):
        return (x - self.mean) * self.scale


model = M()
