# capture: call=f inputs=x:f32[2,5,16],lengths:i64[2]
# nn.TransformerEncoder (eval, batch first, nested tensors enabled) with a float causal mask and a
# key-padding mask built from sequence lengths: both masks given, torch 1.13 keeps src padded
# (its src_key_padding_mask left-alignment check does not decide the path), and each layer runs
# nn.MultiheadAttention's general path (baddbmm with the merged mask).
import torch
import torch.nn as nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
enc = nn.TransformerEncoder(layer, 2).eval()
T = 5


def f(x, lengths):
    pad = torch.arange(T)[None, :] >= (lengths + 2)[:, None]  # lengths 2..5
    causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    return enc(x, mask=causal, src_key_padding_mask=pad)
