import torch
from model import Net
torch.manual_seed(0)
model = Net(upscale_factor=3).eval()
