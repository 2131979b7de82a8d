# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

    def forward(self, x):
        outs = {}
        for name, head in self.heads.items():
            outs[name] = head(x)
        keys = list(self.heads.keys())
        n = len(list(self.heads.values()))
        assert keys == ["a", "b"] and "a" in self.heads
        return outs, self.heads["a"](x) * n


model = M()
