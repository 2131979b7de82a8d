# capture: call=m inputs=x:f32[2,3,8,8]
import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Cfg:
    dim: int = 16
    act: str = "gelu"
    drop: float = 0.0


class ViTish(nn.Module):
    def __init__(self, cfg=Cfg()):
        super().__init__()
        torch.manual_seed(0)
        self.cfg = cfg
        self.proj = nn.Conv2d(3, cfg.dim, 4, 4)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 10, cfg.dim) * 0.02)
        self.norm = nn.LayerNorm(cfg.dim, eps=1e-6)
        self.head = nn.Identity()
        self.opts = {"scale": True}

    @torch.no_grad()
    def forward(self, x):
        assert x.ndim == 4, f"expected 4-D input, got {x.ndim}"
        if torch.jit.is_scripting() or torch.jit.is_tracing():
            warnings.warn("scripting")
        B = x.shape[0]
        x = self.proj(x).flatten(2).transpose(1, 2)
        N = x.shape[1]
        x = torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)
        x = x + self.pos_embed[:, : N + 1]
        act = getattr(F, self.cfg.act)
        x = act(self.norm(x))
        if self.opts.get("scale", False):
            x = x / math.sqrt(self.cfg.dim)
        att = x @ x.transpose(-2, -1)
        mask = torch.ones(N + 1, N + 1, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, torch.finfo(att.dtype).min).softmax(-1)
        assert isinstance(att, torch.Tensor) and torch.is_tensor(x)
        y = F.pad(att, (0, 1)).type_as(x)
        pooled = F.adaptive_max_pool2d(x.unsqueeze(1), (2, 2))
        return self.head(x.mean(dim=(1, 2))), y, pooled, x[:, 0].unsqueeze(1).expand(-1, 3, -1)


m = ViTish()
