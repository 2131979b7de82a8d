# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(2):
            setattr(self, f"fc{i}", nn.Linear(4, 4))

    def forward(self, x):
        for i in range(2):
            x = getattr(self, f"fc{i}")(x)
        name = f"{x.shape[0]}x{x.shape[1]:d}"
        assert name == "2x4", name
        return x


model = M()
