# capture: call=m inputs=mu:f32[4,8],logvar:f32[4,8]
import torch
import torch.nn as nn
import torch.nn.functional as F


class Sampler(nn.Module):
    """A VAE's reparameterisation, plus the other random ops models use."""

    def forward(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        z = mu + eps * std
        u = torch.rand(4, 8)
        keep = torch.bernoulli(torch.full_like(mu, 0.25))
        ids = torch.randint(0, 10, (4, 8))
        dropped = F.dropout(mu, 0.5, training=True)
        return z, u, keep, ids, dropped, F.dropout(mu, 0.5, training=self.training)


m = Sampler()
