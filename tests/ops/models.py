# Whole-model op tests (tests/ops/model_test.cpp): torchvision models with random weights (no
# downloads) in eval mode, with random batch-norm statistics so that every layer matters.
import torch
import torchvision


def _randomise_batch_norm(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.8, 1.5)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
    return model.eval()


torch.manual_seed(0)
resnet18 = _randomise_batch_norm(torchvision.models.resnet18())
mobilenet_v3_small = _randomise_batch_norm(torchvision.models.mobilenet_v3_small())
mobilenet_v2 = _randomise_batch_norm(torchvision.models.mobilenet_v2())
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


def _load_gpt2():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "capture" / "models" / "gpt2.py"
    spec = importlib.util.spec_from_file_location("aotrace_gpt2_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.model.eval()


gpt2 = _load_gpt2()
