// Math functions real code calls that are compositions of graph ops: sign, log1p/expm1 (in f64,
// so that small arguments keep their precision), reciprocal, square, tan, sinh/cosh, exp2, erfc,
// softsign, mish, logsigmoid, norms (torch.norm, Tensor.norm, linalg.vector_norm),
// cosine_similarity, one_hot, sort/argsort (through topk), roll, diff, repeat_interleave and
// logical_xor.
#include <algorithm>
#include <cmath>
#include <limits>

#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

ValueId input_of(Translator& t, const CallArgs& a, const char* what) { return tensor(t, a.get(0, "input"), what); }

// f(x) computed in f64 and returned in x's floating dtype (f32 for integers).
template <class F>
VarRef in_double(Translator& t, ValueId x, F f) {
  const DType out = ir::is_floating(type_of(t, x).dtype) ? type_of(t, x).dtype : DType::f32;
  return wrap_value(cast(t, f(cast(t, x, DType::f64)), out));
}

ValueId c(Translator& t, double v, ValueId like) { return constant(t, v, type_of(t, like).dtype); }

}  // namespace

// torch.sign: -1, 0 or 1 in x's dtype (bools: x).
VarRef sign(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "sign");
  const DType dt = type_of(t, x).dtype;
  if (dt == DType::b8) return wrap_value(x);
  ValueId pos = cast(t, node(t, OpKind::Gt, {x, c(t, 0, x)}), dt);
  ValueId neg = cast(t, node(t, OpKind::Lt, {x, c(t, 0, x)}), dt);
  return add(t, OpKind::Sub, {pos, neg});
}

VarRef log1p(Translator& t, const CallArgs& a) {
  return in_double(t, input_of(t, a, "log1p"), [&](ValueId x) { return node(t, OpKind::Log, {node(t, OpKind::Add, {x, c(t, 1, x)})}); });
}

VarRef expm1(Translator& t, const CallArgs& a) {
  return in_double(t, input_of(t, a, "expm1"), [&](ValueId x) { return node(t, OpKind::Sub, {node(t, OpKind::Exp, {x}), c(t, 1, x)}); });
}

VarRef reciprocal(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "reciprocal"));
  return add(t, OpKind::Div, {c(t, 1, x), x});
}

VarRef square(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "square");
  if (type_of(t, x).dtype == DType::b8) x = cast(t, x, DType::i64);  // torch: bool squares to int64
  return add(t, OpKind::Mul, {x, x});
}

VarRef tan(Translator& t, const CallArgs& a) {
  return in_double(t, input_of(t, a, "tan"), [&](ValueId x) { return node(t, OpKind::Div, {node(t, OpKind::Sin, {x}), node(t, OpKind::Cos, {x})}); });
}

// sinh/cosh: (e^x ∓ e^-x) / 2.
VarRef hyperbolic(Translator& t, const CallArgs& a, bool cosine) {
  return in_double(t, input_of(t, a, cosine ? "cosh" : "sinh"), [&](ValueId x) {
    ValueId ep = node(t, OpKind::Exp, {x}), en = node(t, OpKind::Exp, {node(t, OpKind::Neg, {x})});
    return node(t, OpKind::Mul, {node(t, cosine ? OpKind::Add : OpKind::Sub, {ep, en}), c(t, 0.5, x)});
  });
}

VarRef exp2(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "exp2"));
  return add(t, OpKind::Exp, {node(t, OpKind::Mul, {x, c(t, std::log(2.0), x)})});
}

VarRef erfc(Translator& t, const CallArgs& a) {
  return in_double(t, input_of(t, a, "erfc"), [&](ValueId x) { return node(t, OpKind::Sub, {c(t, 1, x), node(t, OpKind::Erf, {x})}); });
}

VarRef softsign(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "softsign"));
  return add(t, OpKind::Div, {x, node(t, OpKind::Add, {c(t, 1, x), node(t, OpKind::Abs, {x})})});
}

// mish(x) = x · tanh(softplus(x)); logsigmoid(x) = -softplus(-x).
VarRef mish(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "mish"));
  ir::Attrs sp = ir::Attrs().set("beta", 1.0).set("threshold", 20.0);
  VarRef r = add(t, OpKind::Mul, {x, node(t, OpKind::Tanh, {node(t, OpKind::Softplus, {x}, sp)})});
  if (bool_arg(t, a.get(1, "inplace"), false)) return inplace(t, a.get(0, "input"), r, "mish");
  return r;
}

VarRef logsigmoid(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "logsigmoid"));
  ir::Attrs sp = ir::Attrs().set("beta", 1.0).set("threshold", 20.0);
  return add(t, OpKind::Neg, {node(t, OpKind::Softplus, {node(t, OpKind::Neg, {x})}, sp)});
}

// torch.norm(input, p='fro', dim=None, keepdim=False, dtype=None), Tensor.norm,
// torch.linalg.vector_norm(x, ord=2, dim=None, keepdim=False): vector p-norms over `dim` (all
// dims when None): p = 2 / 'fro', 1, inf, -inf, 0 and other real p.
VarRef norm(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "norm"));
  const int rank = type_of(t, x).rank();
  VarRef pv = a.get(1, "p|ord");
  double p = 2;
  if (!is_none(pv)) {
    PyRef o = t.to_python(pv);
    if (o && PyUnicode_Check(o.get())) {
      if (py_str(o.get()) != "fro")
        unsupported(t, "torch.norm(p='" + py_str(o.get()) + "')", "use p=2 ('fro') or a number");
    } else {
      p = float_arg(t, pv, "norm p");
    }
  }
  VarRef dim = a.get(2, "dim");
  std::vector<int64_t> axes = dims_arg(t, is_none(dim) ? nullptr : dim, rank, "norm");
  const bool keepdim = bool_arg(t, a.get(3, "keepdim"), false);
  ValueId ax = node(t, OpKind::Abs, {x});
  if (std::isinf(p)) return add(t, p > 0 ? OpKind::ReduceMax : OpKind::ReduceMin, {ax}, axes_attrs(axes, keepdim));
  if (p == 0) return add(t, OpKind::ReduceSum, {cast(t, node(t, OpKind::Ne, {x, c(t, 0, x)}), type_of(t, x).dtype)}, axes_attrs(axes, keepdim));
  if (p == 1) return add(t, OpKind::ReduceSum, {ax}, axes_attrs(axes, keepdim));
  if (p == 2) return add(t, OpKind::Sqrt, {node(t, OpKind::ReduceSum, {node(t, OpKind::Mul, {x, x})}, axes_attrs(axes, keepdim))});
  ValueId s = node(t, OpKind::ReduceSum, {node(t, OpKind::Pow, {ax, c(t, p, x)})}, axes_attrs(axes, keepdim));
  return add(t, OpKind::Pow, {s, c(t, 1.0 / p, x)});
}

// torch.cosine_similarity(x1, x2, dim=1, eps=1e-8): Σx1·x2 / sqrt(max(Σx1² · Σx2², eps²)).
VarRef cosine_similarity(Translator& t, const CallArgs& a) {
  VarRef prod = binary(t, OpKind::Mul, a.get(0, "x1"), a.get(1, "x2"));
  ValueId x1 = to_floating(t, tensor(t, a.get(0, "x1"), "cosine_similarity"));
  ValueId x2 = to_floating(t, tensor(t, a.get(1, "x2"), "cosine_similarity"));
  ValueId p = to_floating(t, tensor(t, prod, "cosine_similarity"));
  const int rank = type_of(t, p).rank();
  const int64_t axis = normalise_dim(t, int_or(t, a, 2, "dim", 1), rank, "cosine_similarity");
  const double eps = float_or(t, a, 3, "eps", 1e-8);
  auto sum = [&](ValueId v) { return node(t, OpKind::ReduceSum, {v}, axes_attrs({axis}, false)); };
  // Each operand broadcast to the common shape first, as torch sums them.
  const ir::Shape common = type_of(t, p).shape;
  auto broadcast = [&](ValueId v) {
    v = cast(t, v, type_of(t, p).dtype);
    return type_of(t, v).shape == common ? v : node(t, OpKind::Expand, {v}, ir::Attrs().set("shape", common));
  };
  x1 = broadcast(x1);
  x2 = broadcast(x2);
  ValueId s1 = sum(node(t, OpKind::Mul, {x1, x1}));
  ValueId s2 = sum(node(t, OpKind::Mul, {x2, x2}));
  ValueId denom = node(t, OpKind::Sqrt, {node(t, OpKind::Maximum, {node(t, OpKind::Mul, {s1, s2}), c(t, eps * eps, p)})});
  return add(t, OpKind::Div, {sum(p), denom});
}

// F.one_hot(tensor, num_classes): num_classes from the data (-1) is a value read.
VarRef one_hot(Translator& t, const CallArgs& a) {
  ValueId ids = tensor(t, a.get(0, "input"), "one_hot");
  const int64_t n = int_or(t, a, 1, "num_classes", -1);
  if (n < 0) value_read(t, "F.one_hot without num_classes (the largest index)");
  ValueId classes = node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{ir::SymExpr(n)}).set("start", 0.0)
                                                     .set("step", 1.0).set("dtype", type_of(t, ids).dtype));
  ValueId eq = node(t, OpKind::Eq, {unsqueeze_at(t, ids, type_of(t, ids).rank()), classes});
  return wrap_value(cast(t, eq, DType::i64));
}

// torch.sort(input, dim=-1, descending=False, stable=False) / argsort: topk over the whole dim.
// Its order is stable either way (ties: the lower index first; NaN the largest), so stable=True
// needs nothing more.
VarRef sort(Translator& t, const CallArgs& a, bool indices_only) {
  ValueId x = input_of(t, a, indices_only ? "argsort" : "sort");
  const int rank = type_of(t, x).rank();
  const int axis = normalise_dim(t, int_or(t, a, 1, "dim", -1), rank, "sort");
  VarRef descending = a.get(2, "descending");
  if (!is_none(a.kw("stable"))) bool_arg(t, a.kw("stable"), false);  // a bool, as torch requires
  auto n = type_of(t, x).shape[static_cast<size_t>(axis)].as_constant();
  if (!n) unsupported(t, "sort over a dynamic dim", "declare the dim static");
  ir::Attrs attrs;
  attrs.set("k", *n).set("axis", int64_t{axis}).set("largest", int64_t{bool_arg(t, descending, false)}).set("sorted", int64_t{1});
  // torch sorts bools (topk does not): as u8, false before true.
  const bool bools = type_of(t, x).dtype == DType::b8;
  auto r = t.graph().add_node(OpKind::TopK, {bools ? cast(t, x, DType::u8) : x}, attrs, t.loc());
  if (indices_only) return wrap_value(r[1]);
  return named_tuple({wrap_value(bools ? cast(t, r[0], DType::b8) : r[0]), wrap_value(r[1])}, {"values", "indices"});
}

// torch.roll(input, shifts, dims): each dim a concat of its two slices (no dims: the flattened input).
VarRef roll(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "roll");
  const ir::TensorType type = type_of(t, x);
  VarRef shifts_v = a.get(1, "shifts");
  auto items = sequence_items(t, shifts_v);
  std::vector<int64_t> shifts = int_tuple(t, shifts_v, items ? items->size() : 1, "roll shifts");
  VarRef dims_v = a.get(2, "dims");
  const bool flat = is_none(dims_v);
  std::vector<int64_t> dims = flat ? std::vector<int64_t>{0} : int_tuple(t, dims_v, shifts.size(), "roll dims");
  if (dims.size() != shifts.size()) user_error("roll: shifts and dims must have the same length (torch raises here too)", t.loc());
  ValueId v = flat ? reshape_to(t, x, {type.numel()}) : x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int axis = normalise_dim(t, dims[i], type_of(t, v).rank(), "roll");
    auto n = type_of(t, v).shape[static_cast<size_t>(axis)].as_constant();
    if (!n) unsupported(t, "roll over a dynamic dim", "declare the dim static");
    if (*n == 0) continue;
    const int64_t s = ((shifts[i] % *n) + *n) % *n;
    if (s == 0) continue;
    auto slice = [&](int64_t start, int64_t end) {
      return node(t, OpKind::Slice, {v}, ir::Attrs().set("axis", int64_t{axis}).set("start", start).set("end", end).set("step", int64_t{1}));
    };
    v = node(t, OpKind::Concat, {slice(*n - s, *n), slice(0, *n - s)}, ir::Attrs().set("axis", int64_t{axis}));
  }
  return wrap_value(flat ? reshape_to(t, v, type.shape) : v);
}

// torch.diff(input, n=1, dim=-1): x[1:] - x[:-1] along dim, n times (no prepend/append).
VarRef diff(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "diff");
  if (!is_none(a.get(3, "prepend")) || !is_none(a.get(4, "append"))) unsupported(t, "torch.diff(prepend=/append=)", "torch.cat them first");
  const int64_t times = int_or(t, a, 1, "n", 1);
  const int axis = normalise_dim(t, int_or(t, a, 2, "dim", -1), type_of(t, x).rank(), "diff");
  for (int64_t k = 0; k < times; ++k) {
    auto n = type_of(t, x).shape[static_cast<size_t>(axis)].as_constant();
    if (!n) unsupported(t, "diff over a dynamic dim", "declare the dim static");
    if (*n == 0) break;
    auto slice = [&](int64_t start, int64_t end) {
      return node(t, OpKind::Slice, {x}, ir::Attrs().set("axis", int64_t{axis}).set("start", start).set("end", end).set("step", int64_t{1}));
    };
    x = type_of(t, x).dtype == DType::b8 ? node(t, OpKind::Ne, {slice(1, *n), slice(0, *n - 1)})
                                         : node(t, OpKind::Sub, {slice(1, *n), slice(0, *n - 1)});
  }
  return wrap_value(x);
}

// Tensor.repeat_interleave(repeats: int, dim=None): each element `repeats` times in a row.
VarRef repeat_interleave(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "repeat_interleave");
  VarRef rv = a.get(1, "repeats");
  if (is_tensor(rv)) unsupported(t, "repeat_interleave with a tensor of repeats", "use an int");
  const int64_t r = int_arg(t, rv, "repeat_interleave repeats");
  VarRef dim = a.get(2, "dim");
  if (is_none(dim)) x = reshape_to(t, x, {type_of(t, x).numel()});
  const int axis = is_none(dim) ? 0 : normalise_dim(t, int_arg(t, dim, "repeat_interleave dim"), type_of(t, x).rank(), "repeat_interleave");
  ir::Shape shape = type_of(t, x).shape;
  ValueId u = unsqueeze_at(t, x, axis + 1);
  ir::Shape expanded = type_of(t, u).shape;
  expanded[static_cast<size_t>(axis + 1)] = ir::SymExpr(r);
  u = node(t, OpKind::Expand, {u}, ir::Attrs().set("shape", expanded));
  shape[static_cast<size_t>(axis)] = shape[static_cast<size_t>(axis)] * ir::SymExpr(r);
  return wrap_value(reshape_to(t, u, shape));
}

VarRef logical_xor(Translator& t, const CallArgs& a) {
  ValueId x = cast(t, tensor(t, a.get(0, "input"), "logical_xor"), DType::b8);
  ValueId y = cast(t, tensor_or_scalar(t, a.get(1, "other"), DType::b8, "logical_xor"), DType::b8);
  return add(t, OpKind::Ne, {x, y});
}

}  // namespace aotrace::embed::ops

namespace aotrace::embed::ops {

// torch.logsumexp(input, dim, keepdim=False): m + log Σ exp(x - m), m the max over dim (0
// where it is infinite, so that all -inf gives -inf and +inf gives +inf, as torch).
VarRef logsumexp(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "logsumexp"));
  const ir::TensorType type = type_of(t, x);
  std::vector<int64_t> axes = dims_arg(t, a.get(1, "dim"), type.rank(), "logsumexp");
  const bool keepdim = bool_arg(t, a.get(2, "keepdim"), false);
  ValueId m = node(t, OpKind::ReduceMax, {x}, axes_attrs(axes, true));
  ValueId finite = node(t, OpKind::Lt, {node(t, OpKind::Abs, {m}), c(t, INFINITY, m)});
  m = node(t, OpKind::Where, {finite, m, c(t, 0, m)});
  ValueId s = node(t, OpKind::ReduceSum, {node(t, OpKind::Exp, {node(t, OpKind::Sub, {x, m})})}, axes_attrs(axes, true));
  ValueId r = node(t, OpKind::Add, {node(t, OpKind::Log, {s}), m});
  if (keepdim) return wrap_value(r);
  ir::Shape out;
  for (int d = 0; d < type.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(type.shape[static_cast<size_t>(d)]);
  return wrap_value(reshape_to(t, r, out));
}

// F.celu(x, alpha=1): x > 0 ? x : alpha * (exp(x / alpha) - 1).
VarRef celu(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "celu"));
  const double alpha = float_or(t, a, 1, "alpha", 1.0);
  ValueId neg = node(t, OpKind::Mul, {c(t, alpha, x), node(t, OpKind::Sub, {node(t, OpKind::Exp, {node(t, OpKind::Div, {x, c(t, alpha, x)})}), c(t, 1, x)})});
  VarRef r = add(t, OpKind::Where, {node(t, OpKind::Gt, {x, c(t, 0, x)}), x, neg});
  if (bool_arg(t, a.get(2, "inplace"), false)) return inplace(t, a.get(0, "input"), r, "celu");
  return r;
}

// F.threshold(x, threshold, value): x > threshold ? x : value.
VarRef threshold(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "threshold");
  ValueId th = scalar(t, a.get(1, "threshold"), type_of(t, x).dtype);
  ValueId value = cast(t, scalar(t, a.get(2, "value"), type_of(t, x).dtype), type_of(t, x).dtype);
  VarRef r = add(t, OpKind::Where, {node(t, OpKind::Gt, {x, th}), x, value});
  if (bool_arg(t, a.get(3, "inplace"), false)) return inplace(t, a.get(0, "input"), r, "threshold");
  return r;
}

// torch.addcmul / addcdiv(input, tensor1, tensor2, value=1): input + value * (t1 ∘ t2).
VarRef addc(Translator& t, const CallArgs& a, bool divide) {
  VarRef prod = divide ? ops::divide(t, CallArgs{{a.get(1, "tensor1"), a.get(2, "tensor2")}, {}})
                       : binary(t, OpKind::Mul, a.get(1, "tensor1"), a.get(2, "tensor2"));
  VarRef value = a.get(3, "value");
  if (!is_none(value)) prod = binary(t, OpKind::Mul, prod, value);
  return binary(t, OpKind::Add, a.get(0, "input"), prod);
}

// torch.lerp(input, end, weight): input + weight * (end - input).
VarRef lerp(Translator& t, const CallArgs& a) {
  VarRef diff = binary(t, OpKind::Sub, a.get(1, "end"), a.get(0, "input"));
  return binary(t, OpKind::Add, a.get(0, "input"), binary(t, OpKind::Mul, a.get(2, "weight"), diff));
}

// Tensor.zero_(): fill_(0).
VarRef zero_inplace(Translator& t, const CallArgs& a) {
  PyRef zero = PyRef::steal(PyLong_FromLong(0));
  return fill_inplace(t, CallArgs{{a.get(0, "self"), t.constant(zero.get())}, {}});
}

// Tensor.element_size(): bytes per element.
VarRef element_size(Translator& t, const CallArgs& a) {
  PyRef n = PyRef::steal(PyLong_FromSize_t(ir::dtype_size(type_of(t, input_of(t, a, "element_size")).dtype)));
  return t.constant(n.get());
}

}  // namespace aotrace::embed::ops

namespace aotrace::embed::ops {

// torch._weight_norm(v, g, dim=0) (nn.utils.weight_norm's hook): v * g / ‖v‖, the norm over
// every dim but `dim` (over all of them for dim=-1).
VarRef weight_norm(Translator& t, const CallArgs& a) {
  ValueId v = tensor(t, a.get(0, "v"), "_weight_norm"), g = tensor(t, a.get(1, "g"), "_weight_norm");
  const int rank = type_of(t, v).rank();
  const int64_t dim = int_or(t, a, 2, "dim", 0);
  std::vector<int64_t> axes;
  for (int d = 0; d < rank; ++d)
    if (dim == -1 || d != normalise_dim(t, dim, rank, "_weight_norm")) axes.push_back(d);
  ValueId norm = node(t, OpKind::Sqrt, {node(t, OpKind::ReduceSum, {node(t, OpKind::Mul, {v, v})}, axes_attrs(axes, true))});
  return add(t, OpKind::Mul, {v, node(t, OpKind::Div, {g, norm})});
}

}  // namespace aotrace::embed::ops

namespace aotrace::embed::ops {

VarRef log10(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, input_of(t, a, "log10"));
  return add(t, OpKind::Mul, {node(t, OpKind::Log, {x}), c(t, 1.0 / std::log(10.0), x)});
}

// a << b and a >> b on integers: a * 2^b and floor(a / 2^b) (an arithmetic shift), as torch.
VarRef shift(Translator& t, const CallArgs& a, bool left) {
  VarRef lhs = a.get(0, "input"), rhs = a.get(1, "other");
  ValueId x = tensor_or_scalar(t, lhs, is_tensor(rhs) ? type_of(t, tensor(t, rhs, "shift")).dtype : DType::i64, "shift");
  if (ir::is_floating(type_of(t, x).dtype)) user_error("shift operators need integer tensors", t.loc());
  ValueId k = tensor_or_scalar(t, rhs, type_of(t, x).dtype, "shift");
  ValueId power = node(t, OpKind::Pow, {constant(t, 2, type_of(t, k).dtype), k});
  return add(t, left ? OpKind::Mul : OpKind::FloorDiv, {x, cast(t, power, type_of(t, x).dtype)});
}

// torch.meshgrid(*tensors, indexing='ij'): each 1-D input spread along its own dim; with
// 'xy' the first two outputs' dims are swapped (Cartesian indexing).
VarRef meshgrid(Translator& t, const CallArgs& a) {
  std::vector<VarRef> inputs = a.args;
  if (inputs.size() == 1)
    if (auto items = sequence_items(t, inputs[0])) inputs = *items;
  const std::string indexing = str_arg(t, a.kw("indexing"), "meshgrid indexing", "ij");
  if (indexing != "ij" && indexing != "xy") user_error("meshgrid: indexing must be 'ij' or 'xy'", t.loc());
  const bool xy = indexing == "xy" && inputs.size() >= 2;
  std::vector<ValueId> xs;
  for (const VarRef& v : inputs) {
    ValueId x = tensor(t, v, "meshgrid");
    if (type_of(t, x).rank() > 1) user_error("meshgrid expects 0-D or 1-D tensors", t.loc());
    xs.push_back(reshape_to(t, x, {type_of(t, x).numel()}));
  }
  auto dim_of = [&](size_t i) { return xy && i < 2 ? 1 - i : i; };
  ir::Shape full(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) full[dim_of(i)] = type_of(t, xs[i]).shape[0];
  std::vector<VarRef> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    ir::Shape s(xs.size(), ir::SymExpr(1));
    s[dim_of(i)] = full[dim_of(i)];
    out.push_back(add(t, OpKind::Expand, {reshape_to(t, xs[i], s)}, ir::Attrs().set("shape", full)));
  }
  return sequence(std::move(out));
}

// x.index_fill(dim, index, value): value where a position along `dim` is in `index`.
VarRef index_fill(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "index_fill");
  const ir::TensorType type = type_of(t, x);
  const int dim = normalise_dim(t, int_arg(t, a.get(1, "dim"), "index_fill"), std::max(type.rank(), 1), "index_fill");
  ValueId index = cast(t, tensor(t, a.get(2, "index"), "index_fill"), DType::i64);
  index = reshape_to(t, index, {type_of(t, index).numel()});
  const ir::SymExpr n = type.rank() ? type.shape[static_cast<size_t>(dim)] : ir::SymExpr(1);
  ValueId wrapped = node(t, OpKind::Where, {node(t, OpKind::Lt, {index, constant(t, 0, DType::i64)}),
                                            node(t, OpKind::Add, {index, constant(t, static_cast<double>(n.constant()), DType::i64)}), index});
  ValueId positions = node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{n}).set("start", 0.0).set("step", 1.0).set("dtype", DType::i64));
  ValueId hit = node(t, OpKind::Eq, {reshape_to(t, positions, {n, ir::SymExpr(1)}), reshape_to(t, wrapped, {ir::SymExpr(1), type_of(t, wrapped).shape[0]})});
  ValueId selected = node(t, OpKind::ReduceMax, {cast(t, hit, DType::i32)}, axes_attrs({1}, false));
  ir::Shape mshape(static_cast<size_t>(type.rank()), ir::SymExpr(1));
  if (type.rank()) mshape[static_cast<size_t>(dim)] = n;
  ValueId mask = reshape_to(t, node(t, OpKind::Gt, {selected, constant(t, 0, DType::i32)}), mshape);
  VarRef value = a.get(3, "value");
  ValueId v = cast(t, is_tensor(value) ? tensor(t, value, "index_fill") : constant(t, float_arg(t, value, "index_fill"), type.dtype), type.dtype);
  return add(t, OpKind::Where, {mask, v, x});
}

VarRef index_fill_inplace(Translator& t, const CallArgs& a) {
  refuse_inplace_on_outside(t, a.get(0, "self"), "Tensor.index_fill_", "x = x.index_fill(dim, index, value)");
  return inplace(t, a.get(0, "self"), index_fill(t, a), "Tensor.index_fill_");
}

// torch.ops.aten.slice(self, dim=0, start=None, end=None, step=1).
VarRef aten_slice(Translator& t, const CallArgs& a) {
  VarRef x = a.get(0, "self");
  const int rank = type_of(t, tensor(t, x, "aten.slice")).rank();
  const int dim = normalise_dim(t, int_or(t, a, 1, "dim", 0), rank, "aten.slice");
  auto or_none = [&](size_t pos, const char* name) { VarRef v = a.get(pos, name); return v ? v : t.constant(Py_None); };
  VarRef sl = std::make_shared<SliceVar>(or_none(2, "start"), or_none(3, "end"), or_none(4, "step"));
  std::vector<VarRef> items;
  for (int d = 0; d < dim; ++d) items.push_back(std::make_shared<SliceVar>(t.constant(Py_None), t.constant(Py_None), t.constant(Py_None)));
  items.push_back(sl);
  return getitem(t, CallArgs{{x, sequence(std::move(items))}, {}});
}

// torch.ops.aten.native_layer_norm(x, normalized_shape, weight, bias, eps): (out, mean, rstd),
// the statistics over the normalised dims with those dims kept as 1.
VarRef native_layer_norm(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "native_layer_norm");
  const int rank = type_of(t, x).rank();
  auto items = sequence_items(t, a.get(1, "normalized_shape"));
  const int k = items ? static_cast<int>(items->size()) : 1;
  std::vector<int64_t> axes;
  for (int d = rank - k; d < rank; ++d) axes.push_back(d);
  const double eps = float_arg(t, a.get(4, "eps"), "native_layer_norm eps");
  VarRef out = layer_norm(t, CallArgs{{a.get(0, "input"), a.get(1, "normalized_shape"), a.get(2, "weight"), a.get(3, "bias"), a.get(4, "eps")}, {}});
  ValueId mean = node(t, OpKind::Mean, {x}, axes_attrs(axes, true));
  ValueId d = node(t, OpKind::Sub, {x, mean});
  ValueId var = node(t, OpKind::Mean, {node(t, OpKind::Mul, {d, d})}, axes_attrs(axes, true));
  ValueId rstd = node(t, OpKind::Rsqrt, {node(t, OpKind::Add, {var, c(t, eps, var)})});
  return sequence({out, wrap_value(mean), wrap_value(rstd)});
}

}  // namespace aotrace::embed::ops

namespace aotrace::embed::ops {

// torch.nansum(x, dim=None, keepdim=False): the sum with NaNs counted as 0.
VarRef nansum(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "nansum");
  if (ir::is_floating(type_of(t, x).dtype)) x = node(t, OpKind::Where, {node(t, OpKind::Ne, {x, x}), c(t, 0, x), x});
  return sum(t, CallArgs{{wrap_value(x), a.get(1, "dim"), a.get(2, "keepdim")}, {}});
}

// torch.count_nonzero(x, dim=None): int64 counts.
VarRef count_nonzero(Translator& t, const CallArgs& a) {
  ValueId x = input_of(t, a, "count_nonzero");
  VarRef dim = a.get(1, "dim");
  std::vector<int64_t> axes = dims_arg(t, is_none(dim) ? nullptr : dim, type_of(t, x).rank(), "count_nonzero");
  ValueId nz = cast(t, node(t, OpKind::Ne, {x, c(t, 0, x)}), DType::i64);
  return add(t, OpKind::ReduceSum, {nz}, axes_attrs(axes, false));
}

// torch.msort(x): sorted along dim 0.
VarRef msort(Translator& t, const CallArgs& a) {
  PyRef zero = PyRef::steal(PyLong_FromLong(0));
  VarRef r = sort(t, CallArgs{{a.get(0, "input"), t.constant(zero.get())}, {}}, false);
  return as<SequenceVar>(r)->items[0];
}

// torch.tensordot(a, b, dims=2 | ([a dims], [b dims])): the contracted dims of a moved last
// and of b first, then one matmul of the flattened operands.
VarRef tensordot(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "a"), "tensordot"), y = tensor(t, a.get(1, "b"), "tensordot");
  const int rx = type_of(t, x).rank(), ry = type_of(t, y).rank();
  std::vector<int64_t> dx, dy;
  VarRef dims = a.get(2, "dims");
  auto pair = is_none(dims) ? std::nullopt : sequence_items(t, dims);
  if (pair && pair->size() == 2 && sequence_items(t, (*pair)[0])) {
    // The pairing order matters: the dims as given, not sorted.
    const std::vector<VarRef> ax = *sequence_items(t, (*pair)[0]);
    const std::vector<VarRef> by = sequence_items(t, (*pair)[1]).value_or(std::vector<VarRef>{(*pair)[1]});
    for (const VarRef& v : ax) dx.push_back(normalise_dim(t, int_arg(t, v, "tensordot"), rx, "tensordot"));
    for (const VarRef& v : by) dy.push_back(normalise_dim(t, int_arg(t, v, "tensordot"), ry, "tensordot"));
  } else {
    const int64_t k = is_none(dims) ? 2 : int_arg(t, dims, "tensordot dims");
    for (int64_t i = 0; i < k; ++i) {
      dx.push_back(rx - k + i);
      dy.push_back(i);
    }
  }
  if (dx.size() != dy.size()) user_error("tensordot: both operands need as many contracted dims", t.loc());
  std::vector<int64_t> px, py;
  ir::Shape keep_x, keep_y;
  ir::SymExpr kx(1), ky(1), k(1);
  for (int d = 0; d < rx; ++d)
    if (std::find(dx.begin(), dx.end(), d) == dx.end()) {
      px.push_back(d);
      keep_x.push_back(type_of(t, x).shape[static_cast<size_t>(d)]);
      kx = kx * keep_x.back();
    }
  for (int64_t d : dx) {
    px.push_back(d);
    k = k * type_of(t, x).shape[static_cast<size_t>(d)];
  }
  for (int64_t d : dy) py.push_back(d);
  for (int d = 0; d < ry; ++d)
    if (std::find(dy.begin(), dy.end(), d) == dy.end()) {
      py.push_back(d);
      keep_y.push_back(type_of(t, y).shape[static_cast<size_t>(d)]);
      ky = ky * keep_y.back();
    }
  ValueId mx = reshape_to(t, permute_to(t, x, px), {kx, k});
  ValueId my = reshape_to(t, permute_to(t, y, py), {k, ky});
  ir::Shape out = keep_x;
  out.insert(out.end(), keep_y.begin(), keep_y.end());
  return wrap_value(reshape_to(t, node(t, OpKind::Matmul, {mx, my}), out));
}

}  // namespace aotrace::embed::ops
