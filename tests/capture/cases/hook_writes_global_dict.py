# capture: call=f inputs=x:f32[2,4]
# Feature extraction with a forward hook writing into a global dict: the dict is one variable,
# so what the hook stores is what the traced code reads back (recorded as an assumption).
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()
features = {}


def hook(module, inputs, output):
    features["hidden"] = output


model[1].register_forward_hook(hook)


def f(x):
    out = model(x)
    return out, features["hidden"], features
