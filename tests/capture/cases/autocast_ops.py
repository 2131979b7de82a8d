# capture: call=f inputs=x:f32[2,8,16],img:f32[1,3,8,8]
# torch.autocast on the CPU (bfloat16): its lower-precision ops (linear, matmul, bmm, addmm,
# baddbmm, conv2d, einsum) take bfloat16 arguments and give bfloat16, the ops after them compute
# in the dtypes they get (softmax, layer_norm, batch norm with float32 statistics, an add
# promoting to float32), conv_transpose2d and mse_loss (float32 ops) take float32, and an inner
# autocast(enabled=False) turns it off. (Float32 results of bfloat16 math would carry bfloat16's
# rounding, more than the comparison's float32 tolerance: the float32 ones here get exact
# bfloat16 values.)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
lin = nn.Linear(16, 16)
conv = nn.Conv2d(3, 4, 3, padding=1)
bn = nn.BatchNorm2d(4).eval()
bn.running_mean.uniform_(-0.2, 0.2)
deconv = nn.ConvTranspose2d(4, 2, 2, stride=2)
w = torch.randn(16, 16) * 0.2


def f(x, img):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = lin(x)
        att = torch.softmax(h @ h.transpose(1, 2) * 0.25, dim=-1)
        y = F.layer_norm(torch.bmm(att, h), (16,))
        z = torch.einsum("bij,jk->bik", y, w)
        b = torch.baddbmm(x * 0.1, att, x * 0.1)
        m = torch.addmm(x[0], x[0], w).relu()
        c = deconv(bn(conv(img)).relu())
        loss = F.mse_loss(x.bfloat16(), x * 0.5)
        promoted = x.bfloat16() + x
        with torch.autocast("cpu", enabled=False):
            plain = x @ w
    return z, b, m, c, loss, plain, promoted
