import torch
from model import GPT, GPTConfig
torch.manual_seed(0)
config = GPTConfig(block_size=32, vocab_size=97, n_layer=2, n_head=2, n_embd=32, dropout=0.0, bias=True)
model = GPT(config).eval()
