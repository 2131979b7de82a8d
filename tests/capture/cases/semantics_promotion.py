# capture: call=f inputs=x:f32[3,4],i:i64[3,4],b:bool[3,4]
import torch


def f(x, i, b):
    return (
        i * 0.5,            # int tensor * float scalar: float32
        i / 2,              # true division: float32
        i // 3,
        i % 3,
        -i // 2,            # floor toward -inf
        b + b,              # bool + bool: bool? no: torch gives bool for add of bools
        b * 2,              # bool * int: int64
        i.sum(),            # int64
        x + i,              # float32
        i + True,
        torch.where(b, x, 0.0),
        torch.where(b, i, 7),
        x.to(torch.float64) * 2,
        (x * 3).int(),
        torch.tensor(3) + i,
        torch.tensor(2.5) * i,
        x.max(dim=1).values,
        i.max(),
        x.argmax(1, True),
    )
