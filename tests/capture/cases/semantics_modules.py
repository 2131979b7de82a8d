# capture: call=m inputs=x:f32[2,4,6]
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    scale = 0.5  # a class attribute

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6), nn.Tanh())
        self.heads = nn.ModuleList([nn.Linear(6, 3) for _ in range(2)])
        self.register_buffer("mask", torch.tril(torch.ones(4, 4)), persistent=False)

    @property
    def width(self):
        return self.layers[0].out_features

    def forward(self, x):
        h = self.layers[0](x)
        h = h.transpose(1, 2)
        h += 1  # in place on a view whose base is gone
        h = h.transpose(1, 2)
        for layer in self.layers[1:]:
            h = layer(h)
        outs = [head(h) * (i + 1) for i, head in enumerate(self.heads)]
        att = h @ h.transpose(-2, -1) * self.scale
        att = att.masked_fill(self.mask == 0, float("-inf")).softmax(dim=-1)
        flat = h.permute(0, 2, 1).contiguous().view(h.size(0), -1)
        a, b, c = torch.chunk(flat, 3, dim=1)
        up = F.interpolate(h.unsqueeze(1), scale_factor=2, mode="nearest")
        return torch.cat(tuple(o for o in outs), dim=-1), att, a + b + c, up, h.new_tensor([1.0, 2.0]) * self.width


m = Block()
