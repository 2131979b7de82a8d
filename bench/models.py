# The models `make bench` times against torch eager (issue 6): random weights (no downloads),
# eval mode, random batch-norm statistics so that every layer matters. bench/models.yaml names
# them with their input shapes; bench/run_bench.py compiles each one and runs both.
import copy
import pathlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

HERE = pathlib.Path(__file__).resolve().parent
SUPPORT = str(HERE.parent / "tests" / "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)
from model_setup import load_module, randomise_batch_norm  # noqa: E402 (tests/support)


class MLP(nn.Module):
    """784-512-512-10 with ReLU."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 512)
        self.fc3 = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def matmul(a, b):
    return a @ b


def top_k_sampling(logits):
    """A step of nanoGPT's generate(): the 200 likeliest tokens' probabilities, the rest 0."""
    v, _ = torch.topk(logits, 200)
    logits = logits.masked_fill(logits < v[:, -1:], float("-inf"))
    return F.softmax(logits, dim=-1)


def top_p_sampling(logits):
    """Nucleus sampling's filter (transformers' TopPLogitsWarper, p = 0.9): the vocabulary
    sorted, the likeliest tokens whose probabilities reach p kept, the rest 0."""
    sorted_logits, order = torch.sort(logits, descending=False)
    remove = sorted_logits.softmax(dim=-1).cumsum(dim=-1) <= 1 - 0.9
    remove = remove.scatter(1, order, remove)
    return F.softmax(logits.masked_fill(remove, float("-inf")), dim=-1)


torch.manual_seed(0)
mlp = MLP().eval()
# BERT-base encoder layer: hidden 768, 12 heads, feed-forward 3072, GELU, post-norm.
bert_layer = nn.TransformerEncoderLayer(768, 12, dim_feedforward=3072, activation="gelu",
                                        batch_first=True).eval()
# One block of the GPT-2-style model of the capture tests, at GPT-2 small's width.
_gpt2 = load_module(HERE.parent / "tests" / "capture" / "models" / "gpt2.py", "aotrace_bench_gpt2")
gpt2_block = _gpt2.Block(_gpt2.GPTConfig(block_size=128, n_head=12, n_embd=768)).eval()
resnet18 = randomise_batch_norm(torchvision.models.resnet18())
mobilenet_v2 = randomise_batch_norm(torchvision.models.mobilenet_v2())
efficientnet_b0 = randomise_batch_norm(torchvision.models.efficientnet_b0())
resnet50 = randomise_batch_norm(torchvision.models.resnet50())
# Grouped convs (groups of 8 channels) with squeeze-excitation.
regnet_y_400mf = randomise_batch_norm(torchvision.models.regnet_y_400mf())
# bfloat16 copies (the same weights, rounded).
bert_layer_bf16 = copy.deepcopy(bert_layer).to(torch.bfloat16)
resnet18_bf16 = copy.deepcopy(resnet18).to(torch.bfloat16)
mobilenet_v2_bf16 = copy.deepcopy(mobilenet_v2).to(torch.bfloat16)
