# capture: call=model inputs=x:f32[2,4]
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Tanh(), nn.Sigmoid())
