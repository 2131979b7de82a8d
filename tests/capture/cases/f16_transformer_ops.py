# capture: call=block inputs=x:f16[4,64],mask:bool[4,4]
# A float16 attention block: torch 1.13's CPU build has no float16 layer_norm, linear, matmul,
# softmax or gelu, so eager (the golden vectors' and the differential test's) runs those ops
# widened to float32 and rounds their results (embed/interpreter.cpp kLowPrecisionEager).
import torch

torch.manual_seed(0)
ln = torch.nn.LayerNorm(64).half().eval()
qkv = torch.nn.Linear(64, 192).half().eval()
mlp = torch.nn.Linear(64, 64).half().eval()


def block(x, mask):
    h = ln(x)
    q, k, v = qkv(h).split(64, dim=-1)
    att = (q @ k.transpose(0, 1)) * 0.125
    att = att.masked_fill(mask & ~torch.eye(4, dtype=torch.bool), float('-inf')).softmax(-1)
    y = x + att @ v
    return y + torch.nn.functional.gelu(mlp(y))
