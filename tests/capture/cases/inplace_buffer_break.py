# capture: call=m inputs=x:f32[2,3]
import torch
import torch.nn as nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.total.add_(x.sum(dim=0))  # state kept across calls: not a Python-free graph
        return x * 2


m = Counter()
