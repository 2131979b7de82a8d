# capture: call=f inputs=p:f32[20000,4]
# Several draws per row (differential_test's Multinomial.* counts them): 2 without replacement
# (the two largest keys log(u) / p: the order of two draws one after the other), 3 with
# replacement (three independent draws).
import torch


def f(p):
    w = p.abs()
    return torch.multinomial(w, 2), w.multinomial(3, replacement=True)
