import torch


def loop_over_sizes(x):
    out = x
    for i in range(x.shape[1]):
        out = out + i
    return out


def split_on_size(x):
    if x.shape[1] % 3 == 0:
        return x * 3
    return x - 1


def specialised(x):
    return x + 1


def top_five(x):
    return torch.topk(x, 5).values
