# capture: call=f inputs=logits:f32[4,50],p:f32[6]
# Sampling a token (nanoGPT's generate: softmax, then torch.multinomial(probs, num_samples=1)),
# and one draw from an unnormalised 1-D distribution: the first category whose running sum
# passes a uniform draw times the total (the bundle's generator, not torch's).
import torch
import torch.nn.functional as F


def f(logits, p):
    probs = F.softmax(logits / 0.8, dim=-1)
    idx_next = torch.multinomial(probs, num_samples=1)
    return idx_next, torch.multinomial(p.abs() + 0.1, 1), probs.multinomial(1)
