# capture: call=f inputs=p:f32[4]
# Five draws without replacement from four categories: torch raises, and so does compile.
import torch


def f(p):
    return torch.multinomial(p.abs(), 5)
