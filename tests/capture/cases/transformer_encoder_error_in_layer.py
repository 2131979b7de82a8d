# capture: call=f inputs=x:f32[2,5,16],lengths:i64[2]
# A float key-padding mask with a float mask: nn.MultiheadAttention's masked_fill needs a bool
# mask (torch raises too). The error comes from a layer that nn.TransformerEncoder's builder
# inlined, and is reported at the user's line.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2).eval()
T = 5


def f(x, lengths):
    pad = (torch.arange(T)[None, :] >= (lengths + 1)[:, None]).float() * -1e9
    causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    return enc(x, mask=causal, src_key_padding_mask=pad)
