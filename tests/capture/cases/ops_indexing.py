# capture: call=f inputs=x:f32[4,6],i:i64[3]
# Tensor indexing (ints, slices, None, Ellipsis, an index tensor), masked_fill with a causal
# mask from tril, topk, cat and split: one graph, no breaks.
import torch


def f(x, i):
    mask = torch.tril(torch.ones(4, 4)) == 0
    scores = (x[:, None, :4] * x[None, :, :4]).sum(-1)
    probs = scores.masked_fill(mask, float("-inf")).softmax(-1)
    values, indices = x[..., 1:].topk(2, dim=-1)
    a, b = x.split(3, dim=1)
    return probs, x[i], x[-1, ::2], values, indices, torch.cat([b, a], dim=-1)
