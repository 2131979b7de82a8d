# The models of issue 4, compiled into one bundle by tests/e2e (models.yaml) and run by the
# runtime at batch 1 and 4 against torch eager. Random weights (no downloads), eval mode, random
# batch-norm statistics so every layer matters. Images are 64x64 to keep `make test` short.
import pathlib
import sys

import torch
import torchvision

HERE = pathlib.Path(__file__).resolve().parent
SUPPORT = str(HERE.parent.parent / "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)
from model_setup import load_module, randomise_batch_norm  # noqa: E402 (tests/support)

torch.manual_seed(0)
resnet18 = randomise_batch_norm(torchvision.models.resnet18())
mobilenet_v2 = randomise_batch_norm(torchvision.models.mobilenet_v2())
mobilenet_v3_small = randomise_batch_norm(torchvision.models.mobilenet_v3_small())
squeezenet1_1 = torchvision.models.squeezenet1_1().eval()
# Grouped convs (groups of 8 channels, a GEMM per group) with squeeze-excitation.
regnet_y_400mf = randomise_batch_norm(torchvision.models.regnet_y_400mf())
# DeepLabV3's ASPP head: 3×3 convs of dilation 12, 24 and 36 over an 8×8 map, whose taps past
# the map read only padding (cut at compile time), and its image pooling branch.
aspp = randomise_batch_norm(torchvision.models.segmentation.deeplabv3.ASPP(64, [12, 24, 36], 32))
# vit_b_16's code path (conv patchify, class token, the MultiheadAttention fast path, GELU MLP,
# LayerNorm) at a width the test can afford; vit_b_16 itself is captured in tests/capture.
vit = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=4,
                                          hidden_dim=64, mlp_dim=128, num_classes=10).eval()
# vit_b_16 itself (12 layers, width 768) on 32x32 images: 4 patches keep lowering and the
# comparison short.
vit_b_16 = torchvision.models.vit_b_16(image_size=32).eval()
# torchvision initialises the classification head to zeros: give it weights, or every output is
# the (zero) bias and the comparison would prove nothing.
for v in (vit, vit_b_16):
    torch.nn.init.normal_(v.heads.head.weight, std=0.2)
    torch.nn.init.normal_(v.heads.head.bias, std=0.2)
transformer = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True), num_layers=2).eval()
# The mask paths of torch 1.13's TransformerEncoder: a float causal mask and a key-padding mask
# from sequence lengths (an input), nested tensors enabled (the default).
masked_encoder = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True), num_layers=2).eval()


def encoder_masks(x, lengths):
    T = x.shape[1]
    pad = torch.arange(T)[None, :] >= lengths.clamp(1, T)[:, None]
    causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    return masked_encoder(x, mask=causal, src_key_padding_mask=pad)


gpt2 = load_module(HERE.parent.parent / "capture" / "models" / "gpt2.py", "aotrace_e2e_gpt2").model.eval()


def gpt2_without_targets(idx, targets=None):
    """nanoGPT's forward called without targets returns (logits, None)."""
    logits = gpt2(idx)
    loss = None if targets is None else torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    return logits, loss


class LambdaBlock(torch.nn.Module):
    """minGPT's Block keeps its MLP in a lambda's closure (self.mlpf): capture reaches those
    weights without an attribute path, and two blocks have weights of the same shapes."""

    def __init__(self):
        super().__init__()
        self.mlp = torch.nn.ModuleDict(dict(c_fc=torch.nn.Linear(32, 64), c_proj=torch.nn.Linear(64, 32)))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(torch.nn.functional.gelu(m.c_fc(x)))

    def forward(self, x):
        return x + self.mlpf(x)


lambda_blocks = torch.nn.Sequential(LambdaBlock(), LambdaBlock()).eval()
