# capture: call=f inputs=x:f32[2,3],y:f32[3,4]
# torch.ops.aten.* (overload packets and overloads) and torch._C._nn.* map to the same ops as
# their torch.* forms.
import torch

aten = torch.ops.aten


def f(x, y):
    a = aten.pow(x, 2)
    b = aten.add.Tensor(a, x, alpha=2)
    c = aten.relu.default(b)
    d = aten.mm(c, y)
    e = torch._C._nn.gelu(d)
    return aten.sum.dim_IntList(e, [1], True), aten.var(x, -1, True)
