# capture: call=model inputs=src:f32[5,2,8]
# word_language_model caches its mask on the module in forward: the assignment is applied to the
# capture (later reads see it), the module is left unchanged, and an assumption records it.
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_mask = None
        self.proj = nn.Linear(8, 8)

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            mask = torch.log(torch.tril(torch.ones(len(src), len(src))))
            self.src_mask = mask
        return self.proj(src).transpose(0, 2) @ self.src_mask.softmax(-1)


torch.manual_seed(0)
model = M()
