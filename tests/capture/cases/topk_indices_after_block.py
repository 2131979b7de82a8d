# capture: call=f inputs=x:f32[1,3,8]
# Only topk's indices used, over a transformer block (minGPT's greedy generate): fusion once
# inlined the whole model into topk's loops and LLVM never finished.
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
c_attn = torch.nn.Linear(8, 24)
c_proj = torch.nn.Linear(8, 8)
head = torch.nn.Linear(8, 10, bias=False)
ln, ln1, ln2 = torch.nn.LayerNorm(8), torch.nn.LayerNorm(8), torch.nn.LayerNorm(8)
fc, mproj = torch.nn.Linear(8, 32), torch.nn.Linear(32, 8)
bias = torch.tril(torch.ones(3, 3)).view(1, 1, 3, 3)


def attn(x):
    B, T, C = x.size()
    q, k, v = c_attn(x).split(8, dim=2)
    k = k.view(B, T, 1, C).transpose(1, 2)
    q = q.view(B, T, 1, C).transpose(1, 2)
    v = v.view(B, T, 1, C).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(bias[:, :, :T, :T] == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
    return c_proj(y)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def f(x):
    x = x + attn(ln1(x))
    x = x + mproj(gelu(fc(ln2(x))))
    return torch.topk(head(ln(x))[:, -1, :], k=1, dim=-1)[1]
