# capture: call=model inputs=x:f32[2,3,4,6,6],a:f32[2,5],b:f32[2,4],t:f32[2,3,4,6,6]
# Modules whose forward reaches the new ops: nn.PReLU, nn.Conv3d, nn.MaxPool3d / AvgPool3d,
# nn.Unfold / Fold, nn.Bilinear, nn.PairwiseDistance and the loss modules.
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 4, 3, padding=1)
        self.act = nn.PReLU(4)
        self.pool = nn.MaxPool3d(2)
        self.avg = nn.AvgPool3d(2, ceil_mode=True)
        self.unfold = nn.Unfold(2, stride=2)
        self.fold = nn.Fold((6, 6), 2, stride=2)
        self.bil = nn.Bilinear(5, 4, 3)
        self.dist = nn.PairwiseDistance()
        self.huber = nn.HuberLoss(delta=0.5)
        self.bce = nn.BCEWithLogitsLoss()

    def forward(self, x, a, b, t):
        y = self.act(self.conv(x))
        cols = self.unfold(y.flatten(1, 2))
        return (self.pool(y), self.avg(y), self.fold(cols), self.bil(a, b), self.dist(a[:, :4], b),
                self.huber(x, t), self.bce(x, torch.sigmoid(t)))


torch.manual_seed(0)
model = M().eval()
