# capture: call=head inputs=x:f32[2,3]
import torch


class Head:
    """Not an nn.Module: a plain object with __call__."""

    def __init__(self):
        self.w = torch.arange(6.0).reshape(3, 2)
        self.bias = 0.5

    def __call__(self, x):
        return x @ self.w + self.bias


head = Head()
