// Builders of the torch op table for small linear-algebra and elementwise functions, composed
// of graph ops: broadcast_tensors, outer/ger, mv, dot/vdot, trace, diagonal, diag, diag_embed,
// rot90, prelu, nan_to_num, frac, cdist, pairwise_distance and bilinear.
#include <algorithm>
#include <cmath>
#include <limits>

#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

ValueId c(Translator& t, double v, ValueId like) { return constant(t, v, type_of(t, like).dtype); }

ValueId arange_of(Translator& t, ir::SymExpr n, DType dt = DType::i64) {
  return node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{n}).set("start", 0.0).set("step", 1.0).set("dtype", dt));
}

ValueId slice_of(Translator& t, ValueId x, int axis, int64_t start, int64_t end, int64_t step = 1) {
  return node(t, OpKind::Slice, {x}, ir::Attrs().set("axis", int64_t{axis}).set("start", start).set("end", end).set("step", step));
}

// The broadcast of two shapes (numpy's rule; a symbolic dim against 1 wins).
ir::Shape broadcast(Translator& t, const ir::Shape& a, const ir::Shape& b) {
  ir::Shape r(std::max(a.size(), b.size()), ir::SymExpr(1));
  for (size_t i = 0; i < r.size(); ++i) {
    const ir::SymExpr* x = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const ir::SymExpr* y = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    ir::SymExpr& out = r[r.size() - 1 - i];
    if (!x || x->as_constant() == 1) out = y ? *y : ir::SymExpr(1);
    else if (!y || y->as_constant() == 1 || *x == *y) out = *x;
    else user_error("broadcast_tensors: shapes " + ir::shape_str(a) + " and " + ir::shape_str(b) +
                        " do not broadcast (torch raises here too)", t.loc());
  }
  return r;
}

ValueId expand_to(Translator& t, ValueId v, const ir::Shape& shape) {
  return type_of(t, v).shape == shape ? v : node(t, OpKind::Expand, {v}, ir::Attrs().set("shape", shape));
}

}  // namespace

// torch.broadcast_tensors(*tensors): each expanded to the common shape (a tuple).
VarRef broadcast_tensors(Translator& t, const CallArgs& a) {
  std::vector<VarRef> args = a.args;
  if (args.size() == 1)
    if (auto items = sequence_items(t, args[0])) args = *items;
  ir::Shape shape;
  std::vector<ValueId> values;
  for (const VarRef& v : args) {
    values.push_back(tensor(t, v, "broadcast_tensors"));
    shape = broadcast(t, shape, type_of(t, values.back()).shape);
  }
  std::vector<VarRef> out;
  for (ValueId v : values) out.push_back(wrap_value(expand_to(t, v, shape)));
  return sequence(std::move(out));
}

// torch.outer(a, b) = a[:, None] * b[None, :] (torch.ger).
VarRef outer(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::outer", call);
  ValueId x = tensor(t, a.kw("self"), "outer"), y = tensor(t, a.kw("vec2"), "outer");
  if (type_of(t, x).rank() != 1 || type_of(t, y).rank() != 1) user_error("outer: expects two 1-D tensors (torch raises here too)", t.loc());
  return binary(t, OpKind::Mul, wrap_value(unsqueeze_at(t, x, 1)), wrap_value(unsqueeze_at(t, y, 0)));
}

VarRef mv(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::mv", call);
  ValueId m = tensor(t, a.kw("self"), "mv"), v = tensor(t, a.kw("vec"), "mv");
  if (type_of(t, m).rank() != 2 || type_of(t, v).rank() != 1) user_error("mv: expects a 2-D matrix and a 1-D vector", t.loc());
  return add(t, OpKind::Matmul, {m, v});
}

// torch.dot / torch.vdot of two 1-D tensors of one dtype (vdot conjugates: nothing on reals).
VarRef dot(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "dot"), y = tensor(t, a.get(1, "tensor|other"), "dot");
  if (type_of(t, x).rank() != 1 || type_of(t, y).rank() != 1) user_error("dot: expects two 1-D tensors (torch raises here too)", t.loc());
  if (type_of(t, x).dtype != type_of(t, y).dtype) user_error("dot: the two tensors must have the same dtype (torch raises here too)", t.loc());
  if (!ir::is_floating(type_of(t, x).dtype))
    return add(t, OpKind::ReduceSum, {node(t, OpKind::Mul, {x, y})}, axes_attrs({0}, false));
  return add(t, OpKind::Matmul, {x, y});
}

ValueId diagonal_of(Translator& t, ValueId x, int64_t offset, int dim1, int dim2) {
  const int rank = type_of(t, x).rank();
  if (dim1 == dim2) user_error("diagonal: dim1 and dim2 must differ (torch raises here too)", t.loc());
  std::vector<int64_t> perm;
  for (int d = 0; d < rank; ++d)
    if (d != dim1 && d != dim2) perm.push_back(d);
  perm.push_back(dim1), perm.push_back(dim2);
  ValueId m = permute_to(t, x, perm);
  const int64_t rows = static_dim(t, m, rank - 2, "diagonal"), cols = static_dim(t, m, rank - 1, "diagonal");
  const int64_t r0 = std::max<int64_t>(0, -offset), c0 = std::max<int64_t>(0, offset);
  const int64_t n = std::max<int64_t>(0, std::min(rows - r0, cols - c0));
  ir::Shape batch = type_of(t, m).shape;
  batch.resize(static_cast<size_t>(rank - 2));
  ir::Shape out = batch;
  out.push_back(ir::SymExpr(n));
  if (n == 0) return node(t, OpKind::Full, {}, ir::Attrs().set("shape", out).set("value", 0.0).set("dtype", type_of(t, x).dtype));
  // The n x n block from (r0, c0) flattened; its diagonal is every (n + 1)-th element.
  ValueId block = m;
  if (r0 != 0 || n != rows) block = slice_of(t, block, rank - 2, r0, r0 + n);
  if (c0 != 0 || n != cols) block = slice_of(t, block, rank - 1, c0, c0 + n);
  ir::Shape flat = batch;
  flat.push_back(ir::SymExpr(n * n));
  return slice_of(t, reshape_to(t, block, flat), rank - 2, 0, n * n, n + 1);
}

// torch.diagonal(input, offset=0, dim1=0, dim2=1) / Tensor.diagonal.
VarRef diagonal(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::diagonal", call);
  ValueId x = tensor(t, a.kw("self"), "diagonal");
  const int rank = type_of(t, x).rank();
  const int64_t offset = is_none(a.kw("offset")) ? 0 : int_arg(t, a.kw("offset"), "diagonal");
  const int d1 = normalise_dim(t, is_none(a.kw("dim1")) ? 0 : int_arg(t, a.kw("dim1"), "diagonal"), rank, "diagonal");
  const int d2 = normalise_dim(t, is_none(a.kw("dim2")) ? 1 : int_arg(t, a.kw("dim2"), "diagonal"), rank, "diagonal");
  return wrap_value(diagonal_of(t, x, offset, d1, d2));
}

// torch.trace: the sum of a matrix's main diagonal (integers sum to int64).
VarRef trace(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "trace");
  if (type_of(t, x).rank() != 2) user_error("trace: expects a matrix (torch raises here too)", t.loc());
  return add(t, OpKind::ReduceSum, {diagonal_of(t, x, 0, 0, 1)}, axes_attrs({0}, false));
}

namespace {

// [..., n] -> [..., n + |k|, n + |k|] with x on diagonal k, zeros elsewhere.
ValueId embed_diagonal(Translator& t, ValueId x, int64_t k) {
  const int rank = type_of(t, x).rank();
  const int64_t len = static_dim(t, x, rank - 1, "diag_embed"), n = len + std::abs(k);
  std::vector<int64_t> low(static_cast<size_t>(rank), 0), high = low;
  high.back() = std::abs(k);
  ValueId padded = node(t, OpKind::Pad, {x}, ir::Attrs().set("low", low).set("high", high).set("value", 0.0));
  ValueId rows = unsqueeze_at(t, arange_of(t, ir::SymExpr(n)), 1), cols = unsqueeze_at(t, arange_of(t, ir::SymExpr(n)), 0);
  ValueId on = node(t, OpKind::Eq, {node(t, OpKind::Sub, {cols, rows}), constant(t, static_cast<double>(k), DType::i64)});
  // Row r holds x[r] (k >= 0); column c holds x[c] (k < 0).
  ValueId values = unsqueeze_at(t, padded, k >= 0 ? rank : rank - 1);
  return node(t, OpKind::Where, {on, values, c(t, 0, x)});
}

}  // namespace

// torch.diag(input, diagonal=0): 1-D -> the matrix with it on that diagonal; 2-D -> the diagonal.
VarRef diag(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "diag");
  const int64_t k = int_or(t, a, 1, "diagonal", 0);
  const int rank = type_of(t, x).rank();
  if (rank == 1) return wrap_value(embed_diagonal(t, x, k));
  if (rank == 2) return wrap_value(diagonal_of(t, x, k, 0, 1));
  user_error("diag: expects a 1-D or 2-D tensor (torch raises here too)", t.loc());
}

// torch.diag_embed(input, offset=0, dim1=-2, dim2=-1): the last dim becomes the diagonal of the
// new dims dim1, dim2 (of the result's rank).
VarRef diag_embed(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::diag_embed", call);
  ValueId x = tensor(t, a.kw("self"), "diag_embed");
  const int out_rank = type_of(t, x).rank() + 1;
  const int64_t offset = is_none(a.kw("offset")) ? 0 : int_arg(t, a.kw("offset"), "diag_embed");
  const int d1 = normalise_dim(t, is_none(a.kw("dim1")) ? -2 : int_arg(t, a.kw("dim1"), "diag_embed"), out_rank, "diag_embed");
  const int d2 = normalise_dim(t, is_none(a.kw("dim2")) ? -1 : int_arg(t, a.kw("dim2"), "diag_embed"), out_rank, "diag_embed");
  if (d1 == d2) user_error("diag_embed: dim1 and dim2 must differ (torch raises here too)", t.loc());
  ValueId m = embed_diagonal(t, x, offset);  // [batch..., rows, cols]
  std::vector<int64_t> perm(static_cast<size_t>(out_rank));
  for (int d = 0, b = 0; d < out_rank; ++d) perm[static_cast<size_t>(d)] = d == d1 ? out_rank - 2 : d == d2 ? out_rank - 1 : b++;
  return wrap_value(permute_to(t, m, perm));
}

// torch.rot90(input, k=1, dims=[0, 1]): flips and a transpose, as torch composes it.
VarRef rot90(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::rot90", call);
  ValueId x = tensor(t, a.kw("self"), "rot90");
  const int rank = type_of(t, x).rank();
  std::vector<int64_t> dims = is_none(a.kw("dims")) ? std::vector<int64_t>{0, 1} : int_tuple(t, a.kw("dims"), 2, "rot90 dims");
  if (dims.size() != 2) user_error("rot90: dims must have two entries (torch raises here too)", t.loc());
  const int d0 = normalise_dim(t, dims[0], rank, "rot90"), d1 = normalise_dim(t, dims[1], rank, "rot90");
  if (d0 == d1) user_error("rot90: the two dims must differ (torch raises here too)", t.loc());
  const int64_t k = ((is_none(a.kw("k")) ? 1 : int_arg(t, a.kw("k"), "rot90")) % 4 + 4) % 4;
  auto flip = [&](ValueId v, std::vector<int64_t> axes) {
    std::sort(axes.begin(), axes.end());
    return node(t, OpKind::Flip, {v}, ir::Attrs().set("axes", axes));
  };
  auto swap = [&](ValueId v) {
    std::vector<int64_t> perm;
    for (int d = 0; d < rank; ++d) perm.push_back(d == d0 ? d1 : d == d1 ? d0 : d);
    return permute_to(t, v, perm);
  };
  if (k == 1) return wrap_value(swap(flip(x, {d1})));
  if (k == 2) return wrap_value(flip(x, {d0, d1}));
  if (k == 3) return wrap_value(swap(flip(x, {d0})));
  return wrap_value(x);
}

// torch.prelu(input, weight) / F.prelu / nn.PReLU: x > 0 ? x : w · x, w one value or one per
// channel (dim 1; dim 0 of a 1-D input).
VarRef prelu(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "prelu"), w = tensor(t, a.get(1, "weight"), "prelu");
  const int rank = type_of(t, x).rank();
  w = cast(t, w, type_of(t, x).dtype);
  const ir::SymExpr count = type_of(t, w).numel();
  if (count.as_constant() == 1) {
    w = reshape_to(t, w, {});
  } else {
    if (rank == 0) user_error("prelu: a 0-D input takes one weight", t.loc());
    ir::Shape s(static_cast<size_t>(rank >= 2 ? rank - 1 : 1), ir::SymExpr(1));
    s[0] = count;
    w = reshape_to(t, w, s);
  }
  return add(t, OpKind::Where, {node(t, OpKind::Gt, {x, c(t, 0, x)}), x, node(t, OpKind::Mul, {w, x})});
}

// torch.nan_to_num(input, nan=0.0, posinf=None, neginf=None): None is the dtype's largest /
// lowest finite value; integers are returned unchanged.
VarRef nan_to_num(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::nan_to_num", call);
  ValueId x = tensor(t, a.kw("self"), "nan_to_num");
  const DType dt = type_of(t, x).dtype;
  if (!ir::is_floating(dt)) return wrap_value(x);
  const double largest = dt == DType::f64 ? std::numeric_limits<double>::max()
                         : dt == DType::f16 ? 65504.0
                         : dt == DType::bf16 ? 3.3895313892515355e38
                                             : static_cast<double>(std::numeric_limits<float>::max());
  auto value = [&](const char* name, double fallback) {
    VarRef v = a.kw(name);
    return c(t, !v || is_none(v) ? fallback : float_arg(t, v, "nan_to_num"), x);
  };
  ValueId r = node(t, OpKind::Where, {node(t, OpKind::Eq, {x, c(t, INFINITY, x)}), value("posinf", largest), x});
  r = node(t, OpKind::Where, {node(t, OpKind::Eq, {x, c(t, -INFINITY, x)}), value("neginf", -largest), r});
  return add(t, OpKind::Where, {node(t, OpKind::Ne, {x, x}), value("nan", 0.0), r});
}

// torch.frac: x - trunc(x), floating only.
VarRef frac(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "frac");
  if (!ir::is_floating(type_of(t, x).dtype)) user_error("frac: needs a floating point tensor (torch raises here too)", t.loc());
  return add(t, OpKind::Sub, {x, tensor(t, trunc(t, CallArgs{{wrap_value(x)}, {}}), "frac")});
}

// torch.cdist(x1 [..., P, M], x2 [..., R, M], p=2.0, compute_mode): the p-norm of every row
// difference, [..., P, R], computed directly (compute_mode's matmul shortcut is not taken).
VarRef cdist(Translator& t, const CallArgs& a) {
  ValueId x1 = tensor(t, a.get(0, "x1"), "cdist"), x2 = tensor(t, a.get(1, "x2"), "cdist");
  if (type_of(t, x1).rank() < 2 || type_of(t, x2).rank() < 2) user_error("cdist: expects at least 2-D inputs (torch raises here too)", t.loc());
  if (!ir::is_floating(type_of(t, x1).dtype)) user_error("cdist: needs floating point inputs (torch raises here too)", t.loc());
  const double p = float_or(t, a, 2, "p", 2.0);
  if (p < 0) user_error("cdist: p must be non-negative (torch raises here too)", t.loc());
  ValueId d = node(t, OpKind::Sub, {unsqueeze_at(t, x1, type_of(t, x1).rank() - 1), unsqueeze_at(t, x2, type_of(t, x2).rank() - 2)});
  PyRef pv = PyRef::steal(PyFloat_FromDouble(p));
  return norm(t, CallArgs{{wrap_value(d), t.constant(pv.get()), int_var(t, -1)}, {}});
}

// torch.pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False): ‖x1 - x2 + eps‖_p over the last dim.
VarRef pairwise_distance(Translator& t, const CallArgs& a) {
  VarRef d = binary(t, OpKind::Sub, a.get(0, "x1"), a.get(1, "x2"));
  ValueId v = to_floating(t, tensor(t, d, "pairwise_distance"));
  v = node(t, OpKind::Add, {v, c(t, float_or(t, a, 3, "eps", 1e-6), v)});
  PyRef pv = PyRef::steal(PyFloat_FromDouble(float_or(t, a, 2, "p", 2.0)));
  VarRef keepdim = a.get(4, "keepdim");
  return norm(t, CallArgs{{wrap_value(v), t.constant(pv.get()), int_var(t, -1), keepdim ? keepdim : t.constant(Py_False)}, {}});
}

// torch.bilinear(x1 [..., I], x2 [..., J], weight [O, I, J], bias [O]):
// y[..., o] = Σ_ij x1[..., i] W[o, i, j] x2[..., j] + b[o], as (x1 @ W') · x2 summed over j.
VarRef bilinear(Translator& t, const CallArgs& a) {
  ValueId x1 = tensor(t, a.get(0, "input1"), "bilinear"), x2 = tensor(t, a.get(1, "input2"), "bilinear");
  ValueId w = tensor(t, a.get(2, "weight"), "bilinear");
  if (type_of(t, w).rank() != 3) user_error("bilinear: weight must be 3-D [out, in1, in2]", t.loc());
  const ir::Shape ws = type_of(t, w).shape;
  ir::Shape batch = type_of(t, x1).shape;
  batch.pop_back();
  ir::SymExpr items = 1;
  for (const auto& d : batch) items = items * d;
  ValueId f1 = reshape_to(t, x1, {items, ws[1]}), f2 = reshape_to(t, x2, {items, ws[2]});
  ValueId wm = reshape_to(t, permute_to(t, w, {1, 0, 2}), {ws[1], ws[0] * ws[2]});
  ValueId left = reshape_to(t, node(t, OpKind::Matmul, {f1, wm}), {items, ws[0], ws[2]});
  ValueId y = node(t, OpKind::ReduceSum, {node(t, OpKind::Mul, {left, unsqueeze_at(t, f2, 1)})}, axes_attrs({2}, false));
  if (VarRef b = a.get(3, "bias"); !is_none(b)) y = node(t, OpKind::Add, {y, tensor(t, b, "bilinear")});
  batch.push_back(ws[0]);
  return wrap_value(reshape_to(t, y, batch));
}

}  // namespace aotrace::embed::ops
