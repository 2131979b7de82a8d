# Whole-model op tests (tests/ops/model_test.cpp): torchvision models with random weights (no
# downloads) in eval mode, with random batch-norm statistics so that every layer matters.
import pathlib
import sys

import torch
import torchvision

HERE = pathlib.Path(__file__).resolve().parent
SUPPORT = str(HERE.parent / "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)
from model_setup import load_module, randomise_batch_norm  # noqa: E402 (tests/support)


torch.manual_seed(0)
resnet18 = randomise_batch_norm(torchvision.models.resnet18())
mobilenet_v3_small = randomise_batch_norm(torchvision.models.mobilenet_v3_small())
mobilenet_v2 = randomise_batch_norm(torchvision.models.mobilenet_v2())
squeezenet1_1 = torchvision.models.squeezenet1_1().eval()
# vit_b_16's code path (conv patchify, class token, nn.MultiheadAttention fast path, MLP with
# GELU, LayerNorm) at a size the reference loops evaluate quickly.
vit_tiny = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=2,
                                               hidden_dim=32, mlp_dim=64, num_classes=10).eval()
# torchvision initialises the head to zeros: without weights every output would be the bias.
torch.nn.init.normal_(vit_tiny.heads.head.weight, std=0.2)
torch.nn.init.normal_(vit_tiny.heads.head.bias, std=0.2)
transformer_stack = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True), num_layers=2).eval()
gpt2 = load_module(HERE.parent / "capture" / "models" / "gpt2.py", "aotrace_gpt2_model").model.eval()
