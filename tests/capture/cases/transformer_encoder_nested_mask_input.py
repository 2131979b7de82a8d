# capture: call=f inputs=x:f32[3,6,16],pad:b8[3,6]
# A key-padding mask only, an input of the entry, in eval mode, batch first, nested tensors
# enabled: torch 1.13's nested-tensor path, taken as the padded one with zeros at the padded
# positions (to_padded_tensor(0.)) before the final norm, and a PaddingMask guard on the mask
# (left-aligned with a full row, where the nested path keeps the length).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2,
                            norm=nn.LayerNorm(16)).eval()
with torch.no_grad():
    enc.norm.bias.uniform_(-1, 1)


def f(x, pad):
    return enc(x, src_key_padding_mask=pad)
