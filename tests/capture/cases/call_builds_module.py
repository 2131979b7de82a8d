# capture: call=torch.nn.Sequential(torch.nn.Linear(3,4),torch.nn.GELU(),torch.nn.Linear(4,2)).eval() inputs=x:f32[2,3]
# `call:` evaluated once per script run: a module it builds with random weights is the one the
# capture, the golden vectors and eager all use (it was built anew for each).
import torch

torch.manual_seed(0)
