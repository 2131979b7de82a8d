# capture: call=m inputs=x:f32[4,5],idx:i64[3,4]
import torch
import torch.nn as nn
import torch.nn.functional as F

HALVES = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 3.0])


class Bags(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.mean_bag = nn.EmbeddingBag(10, 5, mode="mean", padding_idx=0)
        self.sum_bag = nn.EmbeddingBag(10, 5, mode="sum")
        self.max_bag = nn.EmbeddingBag(10, 5, mode="max")

    def forward(self, x, idx):
        y = x * 3
        halves = torch.round(HALVES + x.sum() * 0)  # ties go to even
        weights = torch.ones(3, 4) * 0.5
        return (
            torch.round(y),
            y.round(decimals=1),
            halves,
            torch.fmod(y, 1.5),
            torch.fmod(-y, 2),
            y.fmod(x + 2),
            self.mean_bag(idx),
            self.sum_bag(idx, per_sample_weights=weights),
            self.max_bag(idx),
        )


m = Bags()
