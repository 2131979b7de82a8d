# capture: call=f inputs=x:f32[5,2,16],lengths:i64[2]
# nn.TransformerEncoder, sequence first, pre-norm, GELU, a final LayerNorm: a bool causal mask
# and a bool key-padding mask from sequence lengths.
import torch
import torch.nn as nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="gelu", norm_first=True)
enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16)).eval()
T = 5


def f(x, lengths):
    pad = torch.arange(T)[None, :] >= (lengths + 1)[:, None]  # lengths 1..4
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return enc(x, mask=causal, src_key_padding_mask=pad)
