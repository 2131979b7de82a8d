# Padding buckets (issue 15): an encoder that masks its padding (a key-padding mask) and a
# model that does not (a mean over the sequence), for tests/e2e/e2e_test.cpp PaddingBuckets.*
import torch
torch.manual_seed(0)

class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(64, 8)

    def forward(self, src, mask):
        return self.head(self.encoder(src, src_key_padding_mask=mask))

class NoMask(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 8)

    def forward(self, src):
        return self.proj(src).mean(dim=1)

model = Encoder().eval()
unmasked = NoMask().eval()
