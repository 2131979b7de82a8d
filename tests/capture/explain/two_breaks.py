import torch


def f(x):
    y = torch.relu(x) * 2
    print("y =", y)
    z = y.exp()
    if z.sum() > 0:
        z = z - 1
    return z + y
