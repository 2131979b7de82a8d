# capture: call=f inputs=m:bool[3,4]
# torch.where on two Python scalars promotes as torch.result_type does: int64 for ints, bool for
# bools (it was float32 for both).
import torch


def f(m):
    return torch.where(m, 1, 2), torch.where(m, True, False), torch.where(m, 1, 2.5)
