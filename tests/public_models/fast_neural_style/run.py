import torch
from transformer_net import TransformerNet
torch.manual_seed(0)
model = TransformerNet().eval()
