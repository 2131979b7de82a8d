# capture: call=f inputs=x:f32[3]
import torch


def f(x):
    parts = [x * i for i in range(1, 4)]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    for i, p in enumerate(parts):
        if i % 2 == 0:
            total = total - p
    return total, sum(parts)
