# capture: call=block inputs=x:f32[1,3,8,8]
# A CNN block through the op table: conv + batch_norm + hardswish, max/adaptive pooling,
# flatten, linear; one graph, no breaks.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
block = nn.Sequential(
    nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False),
    nn.BatchNorm2d(4),
    nn.Hardswish(),
    nn.MaxPool2d(2, ceil_mode=True),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(4, 2),
).eval()
