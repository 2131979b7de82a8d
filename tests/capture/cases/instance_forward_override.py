# capture: call=model inputs=x:f32[2,4]
import types
import torch
import torch.nn as nn


def scaled_forward(self, x):
    return nn.Linear.forward(self, x) * 10.0


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3))
model[0].forward = types.MethodType(scaled_forward, model[0])   # monkeypatched instance forward
