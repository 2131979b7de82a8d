# capture: call=f inputs=x:f32[2,5,16],lengths:i64[2]
# A key-padding mask only, with nested tensors enabled: norm_first=True (and, in g, an odd number
# of heads) keeps torch 1.13 off the nested-tensor path, decided at compile time.
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True),
                            2).eval()
odd = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 1, 32, dropout=0.0, batch_first=True), 2).eval()
T = 5


def f(x, lengths):
    pad = torch.arange(T)[None, :] >= (lengths + 1)[:, None]
    return enc(x, src_key_padding_mask=pad), odd(x, src_key_padding_mask=pad)
