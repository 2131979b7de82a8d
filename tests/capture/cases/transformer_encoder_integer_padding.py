# capture: call=f inputs=x:f32[2,5,16],lengths:i64[2]
# An integer key-padding mask: torch 1.13's TransformerEncoder.forward raises AssertionError.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2).eval()
T = 5


def f(x, lengths):
    pad = (torch.arange(T)[None, :] >= (lengths + 1)[:, None]).long()
    return enc(x, src_key_padding_mask=pad)
