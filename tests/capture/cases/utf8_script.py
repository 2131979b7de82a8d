# capture: call=f inputs=x:f32[3]
# A script that reads a UTF-8 file with the default encoding (the Annotated Transformer's source
# has “quotes” and — dashes) runs under aotrace as under python3.11.
import pathlib

import torch

TEXT = pathlib.Path(__file__).read_text()
SCALE = float(len(TEXT.split("—")))  # 3 pieces: two dashes in this file


def f(x):
    return x * SCALE
