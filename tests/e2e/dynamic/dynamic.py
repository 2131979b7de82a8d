# Issue 13's models with dynamic dims (dynamic.yaml): compiled by tests/e2e into one bundle and
# run by the runtime at many sizes of each range against torch eager.
import pathlib
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
SUPPORT = str(HERE.parent.parent / "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)
from model_setup import load_module  # noqa: E402 (tests/support)

torch.manual_seed(0)

# nanoGPT (tests/capture/models/gpt2.py, block_size 16): T dynamic in 1..16; the size-1 case is
# its own static variant, the rest one symbolic variant; `assert t <= block_size` is decided by
# the range.
gpt2 = load_module(HERE.parent.parent / "capture" / "models" / "gpt2.py", "aotrace_dyn_gpt2").model.eval()


def gpt2_logits(idx):
    return gpt2(idx)


# A TransformerEncoder with a causal mask built from T.
encoder = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True), num_layers=2).eval()


def causal_encoder(x):
    t = x.shape[1]
    mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
    return encoder(x, mask=mask)


# Size arithmetic that stays symbolic: shape reads, //, view with -1, arange, slices, split.
def size_arithmetic(x):
    b, t, c = x.shape
    h = x.view(b, t, 4, -1).transpose(1, 2)            # [b, 4, t, c//4]
    pos = torch.arange(t, dtype=torch.float32)        # [t]
    y = h.sum(-1).transpose(1, 2) + pos[None, :, None]  # [b, t, 4]
    first, second = x.split(c // 2, dim=-1)
    z = (first * second).softmax(dim=1)[:, : t // 2]   # [b, t//2, c//2]
    return y, z


# A branch on the size splits the range at the condition.
def branchy(x):
    if x.shape[1] > 24:
        return x.relu() * 2
    return x.sigmoid()


# Issue 13's encoder: d_model 256, 4 layers, batch first, seq in [32, 128], a causal mask and a
# key-padding mask built from the sequence lengths (enable_nested_tensor at its default).
encoder256 = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(256, 8, dim_feedforward=512, batch_first=True), num_layers=4).eval()


def padded_encoder(x, lengths):
    t = x.shape[1]
    causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
    padding = torch.arange(t)[None, :] >= lengths.clamp(min=1)[:, None]
    return encoder256(x, mask=causal, src_key_padding_mask=padding)


# resnet18 with a dynamic batch and a dynamic square image size.
import torchvision  # noqa: E402
from model_setup import randomise_batch_norm  # noqa: E402

resnet18 = randomise_batch_norm(torchvision.models.resnet18(num_classes=10))


# The key-padding mask alone, an input of the entry: torch 1.13 takes its nested-tensor path
# (padded positions come out 0); aotrace guards that the mask is left-aligned with a full row.
nested64 = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True), num_layers=2,
    norm=torch.nn.LayerNorm(64)).eval()


def nested_encoder(x, padding):
    return nested64(x, src_key_padding_mask=padding)
