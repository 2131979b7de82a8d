# capture: call=model inputs=q:f32[2,3,8],mem:f32[2,5,8]
import torch
import torch.nn as nn


class Cross(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, q, mem):
        return self.attn(q, mem, mem, need_weights=False)[0]   # key is value, query is not


torch.manual_seed(0)
model = Cross().eval()
