# capture: call=f inputs=x:f32[2,5,16],lengths:i64[2]
# nn.TransformerEncoder(enable_nested_tensor=False) with a key-padding mask only: src stays
# padded and each layer takes torch._transformer_encoder_layer_fwd with the mask (mask_type 1).
import torch
import torch.nn as nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="gelu", batch_first=True)
enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
T = 5


def f(x, lengths):
    pad = torch.arange(T)[None, :] >= (lengths + 1)[:, None]
    return enc(x, src_key_padding_mask=pad)
