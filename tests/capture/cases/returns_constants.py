# capture: call=f inputs=x:f32[2,3]
# nanoGPT returns (logits, None) without targets; plain values in the output are constants.
import torch


def f(x, targets=None):
    logits = x * 2
    loss = None if targets is None else (logits - targets).pow(2).mean()
    return logits, loss, {"n": x.shape[0], "ok": True, "scale": 0.5, "name": "gpt"}
