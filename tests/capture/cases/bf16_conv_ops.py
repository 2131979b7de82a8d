# capture: call=net inputs=x:bf16[1,16,12,12]
# f16_conv_ops' CNN in bfloat16: a 3×3 conv (Winograd, in float32), a mobilenet block run
# channels-last, a depthwise conv of 32 channels at stride 2 and a max pool.
import pathlib
import runpy

import torch

net = runpy.run_path(str(pathlib.Path(__file__).with_name("f16_conv_ops.py")))["net"].to(torch.bfloat16)
