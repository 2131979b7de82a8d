# capture: call=m inputs=x:f32[2,3,9,11],y:f32[2,4,10]
import torch
import torch.nn as nn
import torch.nn.functional as F


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = nn.MaxPool2d(3, stride=2, padding=1, return_indices=True)
        self.u = nn.MaxUnpool2d(3, stride=2, padding=1)

    def forward(self, x, y):
        v, i = self.p(x)
        v2, i2 = F.max_pool2d(x, (2, 3), stride=(2, 2), ceil_mode=True, return_indices=True)
        v3, i3 = F.max_pool1d(y, 3, 2, 1, 2, return_indices=True)
        a = F.adaptive_max_pool2d(x, (4, 3))
        b = F.adaptive_max_pool1d(y, 3)
        c = nn.AdaptiveMaxPool2d((None, 5))(x)
        return v, i, v2, i2, v3, i3, a, b, c


m = M()
