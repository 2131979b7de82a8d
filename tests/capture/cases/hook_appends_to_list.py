# capture: call=model inputs=x:f32[2,4]
import torch
import torch.nn as nn

acts = [torch.zeros(2, 4)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.fc.register_forward_hook(lambda m, i, o: acts.append(o))

    def forward(self, x):
        y = self.fc(x)
        return y + acts[-1]


torch.manual_seed(0)
model = Net().eval()
