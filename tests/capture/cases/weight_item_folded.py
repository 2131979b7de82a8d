# capture: call=m inputs=x:f32[2,3]
# A one-element buffer read as a Python number (x.item(), int(x), float(x), a branch on it):
# weights are constant in a bundle, so its value is read at compile time, as an assumption.
import torch


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(0.5))
        self.register_buffer("repeats", torch.tensor(3))
        self.register_buffer("enabled", torch.tensor(True))

    def forward(self, x):
        y = x * self.scale.item()
        for _ in range(int(self.repeats)):
            y = y + float(self.scale)
        if self.enabled:
            y = y.relu()
        return y


torch.manual_seed(0)
m = Scaled().eval()
