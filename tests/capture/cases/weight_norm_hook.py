# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn
from torch.nn.utils import weight_norm

torch.manual_seed(0)
model = nn.Sequential(weight_norm(nn.Linear(4, 3)))   # weight = g * v / |v|, recomputed by a forward pre-hook
with torch.no_grad():
    model[0].weight_g.mul_(2.0)          # a trained/loaded weight_g: the cached .weight is stale
