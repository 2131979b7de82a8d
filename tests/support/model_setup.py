# Set-up shared by the scripts that build models (tests/e2e/models/models.py, tests/ops/models.py,
# bench/models.py). They import it by putting this folder on sys.path, found from their own
# __file__, so it loads from any working directory.
import importlib.util

import torch


def randomise_batch_norm(model):
    """Random BatchNorm2d statistics and affine weights, so that every layer matters; eval mode."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.8, 1.5)
                m.weight.uniform_(0.8, 1.2)
                m.bias.uniform_(-0.1, 0.1)
    return model.eval()


def load_module(path, name):
    """Runs the Python file `path` as a module called `name` and returns it."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
