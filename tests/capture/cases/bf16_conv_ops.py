# capture: call=net inputs=x:bf16[1,16,12,12]
# A bfloat16 CNN's convs on the CPU's kernels for them: a 3×3 conv (Winograd, in float32), a
# mobilenet block run channels-last (1×1 convs as bfloat16 GEMMs, a depthwise conv of 64
# channels as float32 taps, rounded once), a depthwise conv of 32 channels at stride 2 (the
# depthwise kernel, rows widened as they are copied) and a max pool.
import torch
import torch.nn as nn

torch.manual_seed(0)


def bn(c):
    b = nn.BatchNorm2d(c)
    b.running_mean.uniform_(-0.2, 0.2)
    b.running_var.uniform_(0.5, 1.5)
    return b


net = nn.Sequential(
    nn.Conv2d(16, 32, 3, padding=1), bn(32), nn.ReLU(),
    nn.Conv2d(32, 64, 1), bn(64), nn.ReLU6(),
    nn.Conv2d(64, 64, 3, padding=1, groups=64), bn(64), nn.ReLU6(),
    nn.Conv2d(64, 32, 1), bn(32),
    nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=32), nn.ReLU(),
    nn.MaxPool2d(3, 2, 1),
).to(torch.bfloat16).eval()
