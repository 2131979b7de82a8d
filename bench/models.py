# The models `make bench` times against torch eager (issue 6): random weights (no downloads),
# eval mode, random batch-norm statistics so that every layer matters. bench/models.yaml names
# them with their input shapes; bench/run_bench.py compiles each one and runs both.
import importlib.util
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

HERE = pathlib.Path(__file__).resolve().parent


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _randomise_batch_norm(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.8, 1.5)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
    return model.eval()


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


torch.manual_seed(0)
mlp = MLP().eval()
# BERT-base encoder layer: hidden 768, 12 heads, feed-forward 3072, GELU, post-norm.
bert_layer = nn.TransformerEncoderLayer(768, 12, dim_feedforward=3072, activation="gelu",
                                        batch_first=True).eval()
# One block of the GPT-2-style model of the capture tests, at GPT-2 small's width.
_gpt2 = _load(HERE.parent / "tests" / "capture" / "models" / "gpt2.py", "aotrace_bench_gpt2")
gpt2_block = _gpt2.Block(_gpt2.GPTConfig(block_size=128, n_head=12, n_embd=768)).eval()
resnet18 = _randomise_batch_norm(torchvision.models.resnet18())
mobilenet_v2 = _randomise_batch_norm(torchvision.models.mobilenet_v2())
