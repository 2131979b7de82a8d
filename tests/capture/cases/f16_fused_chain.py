# capture: call=f inputs=x:f16[2,64]
import torch


def f(x):
    return x * 3 + 1    
