# torchvision models of issue 3, built on first use with random weights (no download).
import functools

import torch
import torchvision


@functools.lru_cache(maxsize=None)
def model(name):
    torch.manual_seed(0)
    # ViT at 32x32 (4 patches) keeps the reference evaluation of its 12 layers short.
    kwargs = {"image_size": 32} if name.startswith("vit") else {}
    m = getattr(torchvision.models, name)(**kwargs)
    if name.startswith("vit"):
        # torchvision initialises the head to zeros: without weights every output is the bias.
        torch.nn.init.normal_(m.heads.head.weight, std=0.2)
        torch.nn.init.normal_(m.heads.head.bias, std=0.2)
    return m
