# capture: call=f inputs=q:f32[6,5,4],k:f32[6,5,4]
# torch.baddbmm as F.multi_head_attention_forward uses it: a [1, L, S] float mask with -inf
# broadcast over the batch as `input`, and beta/alpha given by keyword. beta=0 ignores `input`:
# a huge one here, not NaN, because torch 1.13's eager propagates NaN through beta=0 on some of
# its threads' paths (the result then depends on the thread count).
import torch


def f(q, k):
    mask = torch.triu(torch.full((5, 5), float("-inf")), diagonal=1).unsqueeze(0)
    scores = torch.baddbmm(mask, q, k.transpose(-2, -1))
    scaled = torch.baddbmm(mask, q, k.transpose(-2, -1), beta=0.5, alpha=0.25)
    zero_beta = torch.baddbmm(torch.full((6, 5, 5), 1e30), q, k.transpose(1, 2), beta=0)
    return torch.softmax(scores, -1), scaled, zero_beta
