import torch


def gate(x):
    y = torch.relu(x)
    if y.sum().item() > 0:
        return y * 2
    return y
