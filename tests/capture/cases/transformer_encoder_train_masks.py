# capture: call=f inputs=x:f32[2,5,16],lengths:i64[2]
# nn.TransformerEncoder in training mode (dropout p=0, so eager is deterministic): no fast path;
# a float causal mask with a key-padding mask, and a key-padding mask alone (relu, GELU).
import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2).train()
gelu = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu",
                                                        batch_first=True), 1).train()
T = 5


def f(x, lengths):
    pad = torch.arange(T)[None, :] >= (lengths + 1)[:, None]
    causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    return enc(x, mask=causal, src_key_padding_mask=pad), gelu(x, src_key_padding_mask=pad)
