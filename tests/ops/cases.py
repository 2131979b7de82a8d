# Op test cases: each function is captured by aotrace (zero graph breaks expected), its graph is
# run by ir::evaluate and compared with this same function run by torch eager on the same
# random inputs (tests/ops/ops_test.cpp). A case is declared by the comment line above it:
#   # case: <name> inputs=x:f32[2,3],i:i64[4]{0,3}
# where {lo,hi} bounds the random values (integers: inclusive). Tolerances: ops_test.cpp.
import torch
import torch.nn.functional as F

# Modules used by the cases are built here, once, with fixed random weights.
torch.manual_seed(0)
ACTIVATIONS = [torch.nn.ReLU(), torch.nn.ReLU6(inplace=True), torch.nn.GELU(), torch.nn.SiLU(),
               torch.nn.Hardswish(), torch.nn.Hardsigmoid(), torch.nn.LeakyReLU(0.1), torch.nn.ELU(),
               torch.nn.Softplus(), torch.nn.Hardtanh(), torch.nn.Dropout(0.3).eval(), torch.nn.Identity()]
BN = torch.nn.BatchNorm2d(4).eval()
with torch.no_grad():
    BN.running_mean.uniform_(-1, 1)
    BN.running_var.uniform_(0.5, 2)
    BN.weight.uniform_(0.5, 1.5)
GN = torch.nn.GroupNorm(2, 4)
LN = torch.nn.LayerNorm(5)
INORM = torch.nn.InstanceNorm2d(4)
EMB = torch.nn.Embedding(10, 4)
MHA = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
LAYER_POST = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()
LAYER_PRE = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, norm_first=True,
                                             activation='gelu').eval()
UPSAMPLE = torch.nn.Upsample(scale_factor=2, mode='nearest')


# ---------------------------------------------------------------------------------------------
# Elementwise math, dtypes and promotion

# case: unary_float inputs=x:f32[3,4]
def unary_float(x):
    return (torch.exp(x), torch.log(x.abs() + 1), torch.tanh(x), torch.sigmoid(x), x.sqrt(),
            torch.rsqrt(x.abs() + 0.5), torch.erf(x), x.floor(), x.ceil(), x.sin(), x.cos(), -x, x.abs())

# case: unary_f64 inputs=x:f64[5]
def unary_f64(x):
    return torch.exp(x), torch.erf(x), torch.rsqrt(x.abs() + 1), x.floor()

# case: unary_f16 inputs=x:f16[6]
def unary_f16(x):
    # torch 1.13 has few f16 kernels on CPU: arithmetic, where, abs, reductions, casts.
    return x * 2 + 1, torch.where(x > 0, x, -x), x.abs(), x.sum(-1), x.amax(), -x, x.float().exp().half(), x / 3

# case: unary_bf16 inputs=x:bf16[6]
def unary_bf16(x):
    return torch.sigmoid(x), x + x, F.gelu(x)

# case: unary_int_to_float inputs=x:i64[5]{-4,4}
def unary_int_to_float(x):
    return torch.exp(x), torch.sqrt(x.abs()), x.floor(), x.abs(), -x

# case: nan_inf_unary inputs=x:f32[4]
def nan_inf_unary(x):
    y = torch.log(x)          # NaN for negatives, -inf at 0
    return torch.relu(y), torch.sqrt(x), y.floor(), torch.exp(-y)

# case: binary_broadcast inputs=x:f32[2,1,4],y:f32[3,1]
def binary_broadcast(x, y):
    return x + y, x - y, x * y, x / y, torch.maximum(x, y), torch.minimum(x, y)

# case: binary_scalars inputs=x:f32[3]
def binary_scalars(x):
    return x + 1, 2 - x, x * 0.5, 1 / (x.abs() + 1), x ** 2, 2 ** x, torch.rsub(x, 3)

# case: int_arith inputs=a:i64[6]{-9,9},b:i64[6]{-4,4}
def int_arith(a, b):
    b = b.abs() + 1  # never zero (capture's example inputs are zeros)
    return a + b, a * b, a - 3, a // b, a % b, torch.remainder(a, -b), torch.div(a, b, rounding_mode='floor'), torch.div(a, b, rounding_mode='trunc'), a / b

# case: float_floor_mod inputs=a:f32[8],b:f32[8]{0.5,3}
def float_floor_mod(a, b):
    return a // b, a % b, torch.remainder(a, -b), torch.div(a, -b, rounding_mode='trunc'), torch.floor_divide(a, b)

# case: int32_promotion inputs=a:i32[4]{-5,5},b:i64[4]{-5,5},c:f32[4]
def int32_promotion(a, b, c):
    return a + b, a * 2, a + c, a * 1.5, a + a

# case: bool_ops inputs=a:bool[5],b:bool[5],x:i64[5]{-3,3}
def bool_ops(a, b, x):
    return (a & b, a | b, torch.bitwise_not(a), torch.logical_not(a), torch.logical_and(a, x), torch.logical_or(a, b),
            a + 1, x.bitwise_not(), x & 6, x | 1, a.sum(), torch.where(a, x, 0))

# case: compare inputs=x:f32[2,3],y:f32[3]
def compare(x, y):
    return x < y, x <= 0.5, x > y, x >= y, x == x, x != y, torch.eq(x, 0), torch.gt(x, y)

# case: compare_int_float inputs=a:i64[4]{-2,2},x:f32[4]
def compare_int_float(a, x):
    return a < x, a == 1, a >= 0.5

# case: pow_cases inputs=x:f32[4]{0.1,3},e:f32[4]{-2,2}
def pow_cases(x, e):
    return torch.pow(x, e), x ** 0.5, x.pow(3), torch.pow(2.0, e)

# case: where_masked_fill inputs=x:f32[2,4],m:bool[4]
def where_masked_fill(x, m):
    return (torch.where(m, x, -x), torch.where(x > 0, x, 0.0), torch.where(m, 1.0, x),
            x.masked_fill(m, float('-inf')), x.masked_fill(x < 0, 0))

# case: clamp_cases inputs=x:f32[6]{-8,8},lo:f32[6]{-2,0}
def clamp_cases(x, lo):
    return (torch.clamp(x, -1, 1), x.clamp(min=0), x.clamp(max=2.5), torch.clip(x, 0, 6),
            torch.clamp(x, min=lo), x.clamp_min(1), x.clamp_max(-1))

# case: clamp_int inputs=x:i64[6]{-9,9}
def clamp_int(x):
    return x.clamp(-2, 3), x.clamp(min=0.5)

# case: nan_clamp_max inputs=x:f32[5]
def nan_clamp_max(x):
    y = torch.log(x)
    return torch.clamp(y, -1, 1), torch.maximum(y, x), F.relu6(y), y.amax(), y.max(), y.argmax()

# ---------------------------------------------------------------------------------------------
# Activations

# case: activations inputs=x:f32[3,5]{-6,6}
def activations(x):
    return (F.relu(x), F.relu6(x), F.gelu(x), F.gelu(x, approximate='tanh'), F.silu(x),
            F.hardswish(x), F.hardsigmoid(x), F.leaky_relu(x), F.leaky_relu(x, 0.2), F.elu(x),
            F.elu(x, alpha=0.5), F.softplus(x), F.softplus(x, beta=2, threshold=3),
            F.hardtanh(x), F.hardtanh(x, -2, 2), torch.sigmoid(x), torch.tanh(x))

# case: activations_f64 inputs=x:f64[7]{-5,5}
def activations_f64(x):
    return F.gelu(x), F.silu(x), F.hardswish(x), F.elu(x), F.softplus(x)

# case: activations_modules inputs=x:f32[2,6]
def activations_modules(x):
    return tuple(m(x * 1) for m in ACTIVATIONS)

# case: softmax_cases inputs=x:f32[2,3,5]{-30,30}
def softmax_cases(x):
    return (F.softmax(x, dim=-1), F.log_softmax(x, dim=1), x.softmax(0), torch.softmax(x, -2),
            F.softmax(x * 100, dim=-1), torch.log_softmax(x * 100, -1))

# case: softmax_inf inputs=x:f32[3,4]
def softmax_inf(x):
    y = x.masked_fill(x < 0, float('-inf'))
    return F.softmax(y.clamp(max=1e9) + 0, dim=-1)

# ---------------------------------------------------------------------------------------------
# Reductions and scans

# case: reductions inputs=x:f32[2,3,4]
def reductions(x):
    return (x.sum(), x.sum(-1), x.sum((0, 2), keepdim=True), x.mean(1), torch.mean(x, (-1, -2)),
            x.amax(-1), x.amin((0, 1)), torch.max(x), torch.min(x), x.var(-1), x.std(1, keepdim=True),
            torch.var(x, unbiased=False), x.var(-1, correction=0))

# case: reduce_max_dim inputs=x:f32[3,5]
def reduce_max_dim(x):
    v, i = torch.max(x, dim=1)
    w, j = x.min(0, keepdim=True)
    return v, i, w, j, torch.max(x, x.flip(0))

# case: arg_reductions inputs=x:f32[3,4,5]
def arg_reductions(x):
    return x.argmax(), x.argmax(-1), x.argmin(1, keepdim=True), torch.argmax(x, dim=0)

# case: arg_reductions_int inputs=x:i64[4,6]{-20,20}
def arg_reductions_int(x):
    return x.argmax(1), x.argmin(0), x.amax(1), x.sum(1), x.sum(0)

# case: int_bool_sum inputs=x:i32[3,4]{-5,5},b:bool[3,4]
def int_bool_sum(x, b):
    return x.sum(1), b.sum(0), b.sum(), x.sum(dtype=torch.float32), b.any(1), b.all(0), torch.any(b)

# case: cumsum_cases inputs=x:f32[3,4],i:i64[5]{-3,3}
def cumsum_cases(x, i):
    return x.cumsum(0), torch.cumsum(x, dim=-1), i.cumsum(0), torch.cumsum(x, 1, dtype=torch.float64)

# case: topk_cases inputs=x:f32[3,8]
def topk_cases(x):
    v, i = torch.topk(x, 3)
    w, j = x.topk(2, dim=0, largest=False)
    return v, i, w, j

# case: reduce_size0 inputs=x:f32[0,4]
def reduce_size0(x):
    return x.sum(0), x.sum(), x.cumsum(0), x.mean(1), x * 2

# case: reduce_size1 inputs=x:f32[1,4,1]
def reduce_size1(x):
    return x.sum(0), x.amax(-1), x.mean((0, 2)), x.argmax(1), x.softmax(-1), x.squeeze(), x.squeeze(0)

# ---------------------------------------------------------------------------------------------
# Shapes and movement

# case: reshape_cases inputs=x:f32[2,3,4]
def reshape_cases(x):
    return (x.view(6, 4), x.reshape(-1), x.reshape(2, -1), x.flatten(1), torch.flatten(x, 0, 1),
            x.view(x.size(0), -1), x.unsqueeze(0), x.unsqueeze(-1), x[None], x.unflatten(2, (2, 2)))

# case: permute_cases inputs=x:f32[2,3,4]
def permute_cases(x):
    return x.permute(2, 0, 1), x.transpose(0, -1), x.transpose(-1, -2), x[0].t(), x.permute(0, 2, 1).contiguous()

# case: expand_repeat inputs=x:f32[3,1],y:f32[2,3,4]
def expand_repeat(x, y):
    return x.expand(3, 4), x.expand(2, -1, 5), x.expand_as(y[0]), x.repeat(2, 3), x.repeat(1, 2, 2)

# case: cat_stack inputs=x:f32[2,3],y:f32[2,5],z:i64[2,3]{0,9}
def cat_stack(x, y, z):
    return (torch.cat([x, y], dim=1), torch.cat((x, x), 0), torch.cat([x, y, x], -1), torch.stack([x, x]),
            torch.stack((x, x, x), dim=-1), torch.cat([x, z], 1))

# case: split_chunk inputs=x:f32[7,4]
def split_chunk(x):
    a, b, c = x.split(3)
    d, e = torch.split(x, [2, 2], dim=1)
    f, g, h = x.chunk(3)
    i, j = x.chunk(2, dim=-1)
    k = x.unbind(1)
    return a, b, c, d, e, f, g, h, i, j, k[0], k[3], x.narrow(0, 2, 3), x.select(1, -1)

# case: getitem_basic inputs=x:f32[4,5,6]
def getitem_basic(x):
    return (x[0], x[-1], x[1:3], x[:, 2], x[..., 1], x[:, None, 1:4], x[1, 2:, ::2], x[::3], x[:, -2:],
            x[None, ..., None], x[2:1], x[:, :, 4:100], x[-100:2])

# case: getitem_tensor inputs=x:f32[5,4],i:i64[3]{-5,4},j:i64[2,2]{0,3}
def getitem_tensor(x, i, j):
    return x[i], x[:, j], x[j], x[1:, j[0]], x[[0, 2]]

# case: gather_index_select inputs=x:f32[3,4],i:i64[3,2]{0,3},k:i64[5]{0,2},l:i32[3]{0,3}
def gather_index_select(x, i, k, l):
    return (torch.gather(x, 1, i), x.gather(-1, i[:, :1]), torch.index_select(x, 0, k), x.index_select(1, l),
            torch.gather(x, 0, k[:4].reshape(1, 4)))

# case: flip_pad inputs=x:f32[2,3,4]
def flip_pad(x):
    return (x.flip(0), torch.flip(x, [1, 2]), x.flip(-1), F.pad(x, (1, 2)), F.pad(x, (0, 0, 2, 1), value=-1.5),
            F.pad(x, [1, 1, 1, 1, 1, 1]), F.pad(x, (-1, 1)))

# case: tril_triu inputs=x:f32[4,5],y:f32[2,3,3]
def tril_triu(x, y):
    return x.tril(), x.triu(), torch.tril(x, 1), torch.triu(x, -1), y.tril(-1), y.triu(2)

# case: factories inputs=x:f32[2,3]
def factories(x):
    return (torch.zeros(2, 3), torch.ones((4,), dtype=torch.int64), torch.full((2, 2), 7.0), torch.full((3,), 2),
            torch.zeros_like(x), torch.ones_like(x, dtype=torch.float64), torch.full_like(x, -2),
            x.new_zeros(3), x.new_ones((2, 2)), x.new_full((1, 2), 4.0),
            torch.arange(5), torch.arange(1, 7, 2), torch.arange(0, 1, 0.25), torch.arange(3, dtype=torch.float32),
            torch.tensor([1.0, 2.0, 3.0]) + x[0], torch.tensor(2) * x.long())

# case: dtype_conversions inputs=x:f32[4]{-3,3},i:i64[4]{-3,3}
def dtype_conversions(x, i):
    return (x.long(), x.int(), x.to(torch.float64), x.double(), x.half(), x.bfloat16(), x.bool(), i.float(),
            i.to(x), x.type_as(i), i.to(dtype=torch.int32), x.type(torch.int64), x.to('cpu'), x.to(torch.float16).float())

# case: embedding_cases inputs=i:i64[2,3]{0,9}
def embedding_cases(i):
    w = torch.arange(40, dtype=torch.float32).reshape(10, 4)
    return F.embedding(i, w), EMB(i), F.embedding(i[0], w)

# case: einsum_cases inputs=a:f32[2,3,4],b:f32[2,4,5],c:f32[3,4]
def einsum_cases(a, b, c):
    return (torch.einsum('bij,bjk->bik', a, b), torch.einsum('bij,kj->bik', a, c), torch.einsum('ij->ji', c),
            torch.einsum('bij->b', a), torch.einsum('ij,ij->i', c, c), torch.einsum('i,j->ij', c[0], c[1]),
            torch.einsum('...ij,...jk->...ik', a, b), torch.einsum('bhqd,bhkd->bhqk', a[None], a[None]))

# case: matmul_cases inputs=a:f32[2,3,4],b:f32[4,5],v:f32[4]
def matmul_cases(a, b, v):
    return a @ b, torch.matmul(a, v), v @ b, torch.bmm(a, a.transpose(1, 2)), torch.mm(a[0], b), v @ v

# ---------------------------------------------------------------------------------------------
# Neural-network functions

# case: conv2d_cases inputs=x:f32[2,4,7,6],w:f32[6,4,3,3],b:f32[6],dw:f32[4,1,3,3],g:f32[6,2,1,2]
def conv2d_cases(x, w, b, dw, g):
    return (F.conv2d(x, w), F.conv2d(x, w, b, stride=2, padding=1), F.conv2d(x, w, b, padding='same', dilation=2),
            F.conv2d(x, w, padding=(0, 2), stride=(2, 1)), F.conv2d(x, dw, groups=4, padding=1),
            F.conv2d(x, g, groups=2, padding='valid'), F.conv2d(x[0], w, b))

# case: conv1d_cases inputs=x:f32[2,3,9],w:f32[4,3,3],b:f32[4]
def conv1d_cases(x, w, b):
    return F.conv1d(x, w, b), F.conv1d(x, w, stride=2, padding=2), F.conv1d(x, w, b, padding='same', dilation=3)

# case: conv_transpose_cases inputs=x:f32[1,4,5,4],w:f32[4,3,3,3],b:f32[3],x1:f32[2,4,6],w1:f32[4,2,4],wg:f32[4,1,2,2]
def conv_transpose_cases(x, w, b, x1, w1, wg):
    return (F.conv_transpose2d(x, w), F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
            F.conv_transpose2d(x, w, stride=(1, 2), dilation=2), F.conv_transpose2d(x, wg, stride=2, groups=4),
            F.conv_transpose1d(x1, w1, stride=3, padding=2), F.conv_transpose2d(x, w, padding=2))

# case: pool_cases inputs=x:f32[2,3,7,8]
def pool_cases(x):
    return (F.max_pool2d(x, 2), F.max_pool2d(x, 3, stride=2, padding=1), F.max_pool2d(x, 3, 2, ceil_mode=True),
            F.max_pool2d(x, 2, dilation=2), F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1),
            F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
            F.avg_pool2d(x, (2, 3), stride=(1, 2)), F.max_pool1d(x[0], 3), F.avg_pool1d(x[0], 2))

# case: adaptive_pool inputs=x:f32[2,3,7,8],y:f32[1,2,9]
def adaptive_pool(x, y):
    return (F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (3, 4)), F.adaptive_avg_pool2d(x, (5, None)),
            F.adaptive_avg_pool2d(x, (7, 8)), F.adaptive_avg_pool1d(y, 4), F.adaptive_avg_pool2d(x[0], 2))

# case: norms inputs=x:f32[2,6,3,4],w:f32[6],b:f32[6],m:f32[6],v:f32[6]{0.5,2},s:f32[2,5,8]
def norms(x, w, b, m, v, s):
    return (F.batch_norm(x, m, v), F.batch_norm(x, m, v, w, b, eps=1e-3), F.layer_norm(s, (8,)),
            F.layer_norm(s, [5, 8], eps=1e-6), F.layer_norm(x, (4,), torch.ones(4) * 2, torch.arange(4.0)),
            F.group_norm(x, 3, w, b), F.group_norm(x, 2), F.instance_norm(x), F.instance_norm(x, weight=w, bias=b),
            F.instance_norm(x, m, v, use_input_stats=False))

# case: norm_modules inputs=x:f32[2,4,5,5]
def norm_modules(x):
    return BN(x), GN(x), LN(x), INORM(x)

# case: interpolate_cases inputs=x:f32[1,2,5,4],y:f32[2,3,6]
def interpolate_cases(x, y):
    return (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(7, 9)), F.interpolate(x, size=3),
            F.interpolate(x, scale_factor=2, mode='bilinear'), F.interpolate(x, size=(8, 3), mode='bilinear'),
            F.interpolate(x, size=(9, 7), mode='bilinear', align_corners=True),
            F.interpolate(x, scale_factor=1.5, mode='nearest'), F.interpolate(y, size=10, mode='linear'),
            F.interpolate(y, scale_factor=0.5), UPSAMPLE(x))

# case: linear_dropout inputs=x:f32[3,5],w:f32[4,5],b:f32[4]
def linear_dropout(x, w, b):
    return F.linear(x, w, b), F.linear(x, w), F.dropout(x, 0.5, training=False), F.dropout2d(x[None], training=False)

# case: mha_fast_path inputs=q:f32[2,5,8]
def mha_fast_path(q):
    out, weights = MHA(q, q, q)
    out2, _ = MHA(q, q, q, need_weights=False)
    out3, w3 = MHA(q, q, q, average_attn_weights=False)
    return out, weights, out2, out3, w3

# case: transformer_layer inputs=x:f32[2,6,8]
def transformer_layer(x):
    return LAYER_POST(x), LAYER_PRE(x), LAYER_PRE(LAYER_POST(x))

# ---------------------------------------------------------------------------------------------
# In-place forms on intermediates (their aliases see the update)

# case: inplace_methods inputs=x:f32[3,4]
def inplace_methods(x):
    y = x * 1
    alias = y
    y.add_(1)
    y.mul_(2)
    z = F.relu(y - 3, inplace=True)
    y.clamp_(max=5)
    w = (x * 1).masked_fill_(x > 0, 0)
    y.sigmoid_()
    return alias, z, w
