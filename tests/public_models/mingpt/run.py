import torch
from mingpt.model import GPT
torch.manual_seed(0)
config = GPT.get_default_config()
config.model_type = 'gpt-nano'
config.vocab_size = 97
config.block_size = 32
model = GPT(config).eval()
