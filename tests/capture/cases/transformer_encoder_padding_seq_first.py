# capture: call=f inputs=x:f32[5,2,16],lengths:i64[2]
# A key-padding mask only, sequence first: not the nested-tensor path (batch_first is False), and
# not the layers' fused path either (nn.MultiheadAttention with key_padding_mask).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0), 2).eval()
T = 5


def f(x, lengths):
    pad = torch.arange(T)[None, :] >= (lengths + 1)[:, None]
    return enc(x, src_key_padding_mask=pad)
