// Builders of the torch op table for reductions and scans: sum, mean, amax/amin, max/min,
// argmax/argmin, var/std, all/any, cumsum, topk, softmax/log_softmax.
#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {


// dim (None, int or sequence) at position 1, keepdim at position 2.
VarRef reduce(Translator& t, const CallArgs& a, OpKind k, const char* what) {
  ValueId x = tensor(t, a.get(0, "input"), what);
  if (auto d = dtype_arg(t, a.kw("dtype"))) x = cast(t, x, *d);
  const int rank = type_of(t, x).rank();
  std::vector<int64_t> axes = dims_arg(t, a.get(1, "dim"), rank, what);
  bool keepdim = bool_arg(t, a.get(2, "keepdim"), false);
  if (k == OpKind::Mean && !ir::is_floating(type_of(t, x).dtype))
    user_error("mean: needs a floating point tensor, got " + type_of(t, x).str(), t.loc(),
               "cast it with .float() or pass dtype=torch.float32");
  return add(t, k, {x}, axes_attrs(axes, keepdim));
}

// argmax/argmin: dim=None reduces the flattened tensor.
VarRef arg_reduce(Translator& t, const CallArgs& a, OpKind k, const char* what) {
  ValueId x = tensor(t, a.get(0, "input"), what);
  VarRef dim = a.get(1, "dim");
  bool keepdim = bool_arg(t, a.get(2, "keepdim"), false);
  const ir::TensorType type = type_of(t, x);
  if (is_none(dim)) {
    ValueId flat = reshape_to(t, x, {type.numel()});
    ValueId r = node(t, k, {flat}, axes_attrs({0}, false));
    if (keepdim) r = reshape_to(t, r, ir::Shape(static_cast<size_t>(type.rank()), ir::SymExpr(1)));
    return wrap_value(r);
  }
  int axis = normalise_dim(t, int_arg(t, dim, what), type.rank(), what);
  if (type.rank() == 0) return add(t, OpKind::Full, {}, ir::Attrs().set("shape", ir::Shape{}).set("value", 0.0).set("dtype", DType::i64));
  return add(t, k, {x}, axes_attrs({axis}, keepdim));
}

// max(x) / max(x, dim, keepdim) -> (values, indices) / max(x, other).
VarRef max_min(Translator& t, const CallArgs& a, bool is_max) {
  const char* what = is_max ? "max" : "min";
  VarRef other = a.get(1, "dim");
  if (is_tensor(other) || a.kw("other")) {
    VarRef o = is_tensor(other) ? other : a.kw("other");
    return binary(t, is_max ? OpKind::Maximum : OpKind::Minimum, a.get(0, "input"), o);
  }
  ValueId x = tensor(t, a.get(0, "input"), what);
  const int rank = type_of(t, x).rank();
  OpKind reduce_kind = is_max ? OpKind::ReduceMax : OpKind::ReduceMin;
  if (is_none(other)) return add(t, reduce_kind, {x}, axes_attrs(dims_arg(t, nullptr, rank, what), false));
  int axis = normalise_dim(t, int_arg(t, other, what), rank, what);
  bool keepdim = bool_arg(t, a.get(2, "keepdim"), false);
  std::vector<int64_t> axes = rank == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{axis};
  VarRef values = add(t, reduce_kind, {x}, axes_attrs(axes, keepdim));
  VarRef indices = rank == 0 ? add(t, OpKind::Full, {}, ir::Attrs().set("shape", ir::Shape{}).set("value", 0.0).set("dtype", DType::i64))
                             : add(t, is_max ? OpKind::ArgMax : OpKind::ArgMin, {x}, axes_attrs(axes, keepdim));
  return named_tuple({values, indices}, {"values", "indices"});
}

// var/std, bound through torch's schemas: var(self, unbiased), var.dim(self, dim, unbiased,
// keepdim), var.correction(self, dim, *, correction, keepdim).
VarRef variance(Translator& t, const CallArgs& call, bool take_sqrt) {
  const char* what = take_sqrt ? "std" : "var";
  const CallArgs a = bind_schema(t, take_sqrt ? "aten::std" : "aten::var", call);
  ValueId x = tensor(t, a.kw("self"), what);
  const int rank = type_of(t, x).rank();
  int64_t correction = 1;
  if (VarRef u = a.kw("unbiased")) correction = t.truth(u) ? 1 : 0;
  if (VarRef c = a.kw("correction"); c && !is_none(c)) correction = int_arg(t, c, what);
  const bool keepdim = bool_arg(t, a.kw("keepdim"), false);
  if (!ir::is_floating(type_of(t, x).dtype)) user_error(std::string(what) + ": needs a floating point tensor", t.loc());
  ir::Attrs attrs = axes_attrs(dims_arg(t, a.kw("dim"), rank, what), keepdim);
  attrs.set("correction", correction);
  ValueId v = node(t, OpKind::Var, {x}, attrs);
  return wrap_value(take_sqrt ? node(t, OpKind::Sqrt, {v}) : v);
}

}  // namespace

VarRef sum(Translator& t, const CallArgs& a) { return reduce(t, a, OpKind::ReduceSum, "sum"); }
VarRef mean(Translator& t, const CallArgs& a) { return reduce(t, a, OpKind::Mean, "mean"); }
VarRef amax(Translator& t, const CallArgs& a) { return reduce(t, a, OpKind::ReduceMax, "amax"); }
VarRef amin(Translator& t, const CallArgs& a) { return reduce(t, a, OpKind::ReduceMin, "amin"); }
VarRef max(Translator& t, const CallArgs& a) { return max_min(t, a, true); }
VarRef min(Translator& t, const CallArgs& a) { return max_min(t, a, false); }
VarRef argmax(Translator& t, const CallArgs& a) { return arg_reduce(t, a, OpKind::ArgMax, "argmax"); }
VarRef argmin(Translator& t, const CallArgs& a) { return arg_reduce(t, a, OpKind::ArgMin, "argmin"); }
VarRef var(Translator& t, const CallArgs& a) { return variance(t, a, false); }
VarRef std_(Translator& t, const CallArgs& a) { return variance(t, a, true); }

// all/any: the bool tensor's min/max.
VarRef all(Translator& t, const CallArgs& a) {
  ValueId x = cast(t, tensor(t, a.get(0, "input"), "all"), DType::b8);
  const int rank = type_of(t, x).rank();
  return add(t, OpKind::ReduceMin, {x}, axes_attrs(dims_arg(t, a.get(1, "dim"), rank, "all"), bool_arg(t, a.get(2, "keepdim"), false)));
}

VarRef any(Translator& t, const CallArgs& a) {
  ValueId x = cast(t, tensor(t, a.get(0, "input"), "any"), DType::b8);
  const int rank = type_of(t, x).rank();
  return add(t, OpKind::ReduceMax, {x}, axes_attrs(dims_arg(t, a.get(1, "dim"), rank, "any"), bool_arg(t, a.get(2, "keepdim"), false)));
}

VarRef cumsum(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "cumsum");
  if (auto d = dtype_arg(t, a.kw("dtype"))) x = cast(t, x, *d);
  const ir::TensorType type = type_of(t, x);
  int axis = normalise_dim(t, int_arg(t, a.get(1, "dim"), "cumsum"), type.rank(), "cumsum");
  if (type.rank() == 0) x = reshape_to(t, x, {1});
  ValueId r = node(t, OpKind::CumSum, {x}, ir::Attrs().set("axis", int64_t{axis}));
  return wrap_value(type.rank() == 0 ? reshape_to(t, r, {}) : r);
}

VarRef topk(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "topk");
  int64_t k = int_arg(t, a.get(1, "k"), "topk");
  int axis = normalise_dim(t, int_or(t, a, 2, "dim", -1), type_of(t, x).rank(), "topk");
  ir::Attrs attrs;
  attrs.set("k", k).set("axis", int64_t{axis})
      .set("largest", int64_t{bool_arg(t, a.get(3, "largest"), true)})
      .set("sorted", int64_t{bool_arg(t, a.get(4, "sorted"), true)});
  // A dynamic dim that may be shorter than k: torch raises on such a call, a bundle would leave
  // the missing results unwritten. (A constant dim: the op rule checks it.)
  const ir::TensorType& type = type_of(t, x);
  if (type.rank() > 0 && !type.shape[static_cast<size_t>(axis)].is_constant()) {
    const ir::SymExpr& dim = type.shape[static_cast<size_t>(axis)];
    if (std::optional<int64_t> n = dim.evaluate(ir::min_bindings(t.graph())); n && *n < k)
      user_error("topk: k = " + std::to_string(k) + " is larger than dim " + std::to_string(axis) + " of " +
                     type.str() + " where " + dim.str() + " = " + std::to_string(*n) +
                     ", the smallest size the spec's dims allow (torch raises on such a call)",
                 t.loc(),
                 "give " + dim.str() + " a min of at least " + std::to_string(k) + " under the spec's `dims:`, or take k = min(" +
                     std::to_string(k) + ", x.size(" + std::to_string(axis) + "))");
  }
  auto r = t.graph().add_node(OpKind::TopK, {x}, attrs, t.loc());
  return named_tuple({wrap_value(r[0]), wrap_value(r[1])}, {"values", "indices"});
}

namespace {

VarRef softmax_like(Translator& t, const CallArgs& a, OpKind k) {
  const char* what = k == OpKind::Softmax ? "softmax" : "log_softmax";
  ValueId x = tensor(t, a.get(0, "input"), what);
  VarRef dim = a.get(1, "dim");
  if (is_none(dim))
    user_error(std::string(what) + " without dim= is ambiguous", t.loc(), "pass dim= explicitly");
  if (auto d = dtype_arg(t, a.get(3, "dtype"))) x = cast(t, x, *d);
  x = to_floating(t, x);
  int axis = normalise_dim(t, int_arg(t, dim, what), type_of(t, x).rank(), what);
  if (type_of(t, x).rank() == 0) {  // softmax of a scalar is 1 (log: 0)
    return add(t, OpKind::Full, {}, ir::Attrs().set("shape", ir::Shape{})
                                        .set("value", k == OpKind::Softmax ? 1.0 : 0.0)
                                        .set("dtype", type_of(t, x).dtype));
  }
  return add(t, k, {x}, ir::Attrs().set("axis", static_cast<int64_t>(axis)));
}

}  // namespace

VarRef softmax(Translator& t, const CallArgs& a) { return softmax_like(t, a, OpKind::Softmax); }
VarRef log_softmax(Translator& t, const CallArgs& a) { return softmax_like(t, a, OpKind::LogSoftmax); }

}  // namespace aotrace::embed::ops
