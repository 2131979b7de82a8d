# capture: call=m inputs=x:f32[2,3]
import torch
import torch.nn as nn

class M(nn.Module):
    def forward(self, x):
        fn = getattr(self, "missing", None)
        return x if fn is None else fn(x)

m = M()
