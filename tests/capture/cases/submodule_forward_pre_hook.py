# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
model[0].register_forward_pre_hook(lambda mod, inp: (inp[0] * 2.0,))   # submodule pre-hook ignored
