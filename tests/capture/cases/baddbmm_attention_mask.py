# capture: call=f inputs=q:f32[6,5,4],k:f32[6,5,4]
# torch.baddbmm as F.multi_head_attention_forward uses it: a [1, L, S] float mask with -inf
# broadcast over the batch as `input`, and beta/alpha given by keyword. beta=0 is not compared
# here: torch 1.13's eager returned NaN for it now and then in this harness (an uninitialised
# buffer read on some path, whatever `input` holds), so eager is no reference for it.
import torch


def f(q, k):
    mask = torch.triu(torch.full((5, 5), float("-inf")), diagonal=1).unsqueeze(0)
    scores = torch.baddbmm(mask, q, k.transpose(-2, -1))
    scaled = torch.baddbmm(mask, q, k.transpose(-2, -1), beta=0.5, alpha=0.25)
    return torch.softmax(scores, -1), scaled
