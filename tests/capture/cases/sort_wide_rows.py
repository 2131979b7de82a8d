# capture: call=f inputs=logits:f32[2,50257],x:f32[3,3000]
import torch


def f(logits, x):
    # Sorts of more than 1024 positions (a heap in the indices kernel; the values gathered): a
    # vocabulary sorted for top-p sampling (as transformers' TopPLogitsWarper), rows with ties
    # and NaNs in both directions, along a leading axis, the median and kthvalue of wide rows, and
    # sorts of bools.
    # Ties (the f32 normals of 50257 logits have some too) only with stable=True: torch's default
    # sort of more than 16 elements leaves them in no defined order.
    sorted_logits, order = torch.sort(logits, descending=True, stable=True)
    levels = torch.where(x > 2.5, float("nan"), (x * 4).round())  # ~25 values: ties everywhere
    return (
        sorted_logits,
        order,
        torch.cumsum(sorted_logits.softmax(dim=-1), dim=-1),
        torch.argsort(levels, dim=1, descending=True, stable=True),
        torch.sort(levels, dim=1, stable=True),
        torch.sort(levels.t(), dim=0, descending=True, stable=True),
        torch.sort(x, dim=1),
        torch.argsort(x.t(), dim=0, descending=True),
        x.median(dim=1),
        levels.median(dim=1).values,
        torch.kthvalue(x, 2000, dim=1),
        torch.kthvalue(levels, 1500, dim=1).values,
        torch.msort(x.t()),
        torch.sort(x > 0, dim=1, descending=True, stable=True),  # bools: as u8, false before true
        torch.argsort(levels.t() > 1, dim=0, stable=True),
    )
