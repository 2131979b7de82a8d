# capture: call=f inputs=x:f32[2,5,16],lengths:i64[2]
# A key-padding mask only, in eval mode, batch first, nested tensors enabled: torch 1.13 converts
# src to a nested tensor when the mask is left-aligned and returns the output cut to the longest
# unpadded length, a shape known only from the mask's values: a graph break with the fix.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2).eval()
T = 5


def f(x, lengths):
    pad = torch.arange(T)[None, :] >= (lengths + 1)[:, None]
    return enc(x, src_key_padding_mask=pad)
