// Builders of the torch op table for scatters and the reductions that need more than one
// reduce op: scatter/scatter_add (and their in-place forms) and index_add as scatter ops;
// take_along_dim (gather); var_mean and std_mean; median and kthvalue (through topk);
// cummax/cummin (a scan of value-index pairs); prod and cumprod over a static dim (products of
// slices).
#include <cmath>

#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

ValueId arange_of(Translator& t, ir::SymExpr n) {
  return node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{n}).set("start", 0.0).set("step", 1.0).set("dtype", DType::i64));
}

ValueId slice_of(Translator& t, ValueId x, int axis, int64_t start, int64_t end, int64_t step = 1) {
  return node(t, OpKind::Slice, {x}, ir::Attrs().set("axis", int64_t{axis}).set("start", start).set("end", end).set("step", step));
}

}  // namespace

// self with src (the index's extent of it) written (or added) at index along dim: a scatter op,
// a kernel walking each row in order, so that a repeated index keeps the last write (sums in
// order), as torch's CPU loop does.
ValueId scatter_into(Translator& t, ValueId self, int dim, ValueId index, ValueId src, bool accumulate, const char* what) {
  const ir::TensorType st = type_of(t, self), it = type_of(t, index);
  const int r = st.rank();
  if (it.rank() != r || type_of(t, src).rank() != r)
    user_error(std::string(what) + ": self, index and src must have the same number of dims (torch raises here too)", t.loc());
  if (!ir::is_integral(it.dtype) || it.dtype == DType::b8) user_error(std::string(what) + ": index must be an integer tensor", t.loc());
  if (it.dtype != DType::i64 && it.dtype != DType::i32) index = cast(t, index, DType::i64);
  for (int d = 0; d < r; ++d) {
    const auto i = static_cast<size_t>(d);
    if (d == dim || st.shape[i] == it.shape[i]) continue;
    auto a = it.shape[i].as_constant(), b = st.shape[i].as_constant();
    if (!a || !b) unsupported(t, std::string(what) + " with an index smaller than self in a dynamic dim", "declare the dim static");
    if (*a > *b) user_error(std::string(what) + ": the index is larger than self outside dim (torch raises here too)", t.loc());
  }
  for (int d = 0; d < r; ++d)  // the index's extent of src
    if (!(type_of(t, src).shape[static_cast<size_t>(d)] == it.shape[static_cast<size_t>(d)]))
      src = slice_of(t, src, d, 0, static_dim(t, index, d, what));
  const ir::Attrs attrs = ir::Attrs().set("axis", int64_t{dim}).set("accumulate", int64_t{accumulate});
  if (accumulate && st.dtype == DType::b8) {  // sums of bools: counted in i64, then any
    ValueId sum = node(t, OpKind::Scatter, {cast(t, self, DType::i64), index, cast(t, src, DType::i64)}, attrs);
    return node(t, OpKind::Ne, {sum, constant(t, 0, DType::i64)});
  }
  return node(t, OpKind::Scatter, {self, index, cast(t, src, st.dtype)}, attrs);
}

// torch.scatter / Tensor.scatter(dim, index, src | value) and scatter_add(dim, index, src);
// the in-place forms (scatter_, scatter_add_) go through the table's IN_PLACE.
VarRef scatter(Translator& t, const CallArgs& call, bool accumulate) {
  const char* what = accumulate ? "scatter_add" : "scatter";
  CallArgs a = bind_schema(t, accumulate ? "aten::scatter_add" : "aten::scatter", call);
  if (VarRef reduce = a.kw("reduce"); reduce && !is_none(reduce))
    unsupported(t, "scatter(reduce=...)", "use scatter_add, or compose the reduction");
  ValueId self = tensor(t, a.kw("self"), what);
  const int dim = normalise_dim(t, int_arg(t, a.kw("dim"), what), type_of(t, self).rank(), what);
  ValueId index = tensor(t, a.kw("index"), what);
  if (type_of(t, self).rank() == 0) unsupported(t, std::string(what) + " into a 0-D tensor");
  ValueId src;
  if (VarRef s = a.kw("src")) {
    src = tensor(t, s, what);
  } else {
    ValueId v = scalar(t, a.kw("value"), type_of(t, self).dtype);
    src = node(t, OpKind::Expand, {cast(t, v, type_of(t, self).dtype)}, ir::Attrs().set("shape", type_of(t, index).shape));
  }
  return wrap_value(scatter_into(t, self, dim, index, src, accumulate, what));
}

// index_add(self, dim, index [m], source, *, alpha=1): self[.., index[i], ..] += alpha ·
// source[.., i, ..]: a scatter_add of source (broadcast to self outside dim, as torch does) at
// the index broadcast to it, summed in index order as torch's loop.
VarRef index_add(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::index_add", call);
  ValueId self = tensor(t, a.kw("self"), "index_add");
  const ir::TensorType st = type_of(t, self);
  const int dim = normalise_dim(t, int_arg(t, a.kw("dim"), "index_add"), st.rank(), "index_add");
  ValueId index = tensor(t, a.kw("index"), "index_add");
  ValueId source = tensor(t, a.kw("source"), "index_add");
  if (type_of(t, index).rank() != 1 || st.rank() == 0) unsupported(t, "index_add other than a 1-D index into a tensor of rank >= 1");
  if (type_of(t, source).rank() != st.rank())
    user_error("index_add: source must have self's number of dims (torch raises here too)", t.loc());
  if (VarRef alpha = a.kw("alpha"); alpha && !is_none(alpha)) source = tensor(t, binary(t, OpKind::Mul, wrap_value(source), alpha), "index_add");
  ir::Shape shape = st.shape, along(st.shape.size(), ir::SymExpr(1));
  shape[static_cast<size_t>(dim)] = along[static_cast<size_t>(dim)] = type_of(t, index).shape[0];
  if (!(type_of(t, source).shape[static_cast<size_t>(dim)] == shape[static_cast<size_t>(dim)]))
    user_error("index_add: source's dim " + std::to_string(dim) + " must have the index's length (torch raises here too)", t.loc());
  auto broadcast = [&](ValueId v) {
    return type_of(t, v).shape == shape ? v : node(t, OpKind::Expand, {v}, ir::Attrs().set("shape", shape));
  };
  source = broadcast(source);
  index = broadcast(reshape_to(t, index, along));
  return wrap_value(scatter_into(t, self, dim, index, source, true, "index_add"));
}

// torch.take_along_dim(input, indices, dim=None): gather, the two broadcast outside dim (dim
// None: over the flattened input).
VarRef take_along_dim(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::take_along_dim", call);
  ValueId x = tensor(t, a.kw("self"), "take_along_dim"), idx = tensor(t, a.kw("indices"), "take_along_dim");
  VarRef dim_v = a.kw("dim");
  if (!dim_v || is_none(dim_v)) {
    ValueId flat = reshape_to(t, x, {type_of(t, x).numel()});
    return add(t, OpKind::Gather, {flat, reshape_to(t, idx, {type_of(t, idx).numel()})}, ir::Attrs().set("axis", int64_t{0}));
  }
  const int rank = type_of(t, x).rank();
  if (type_of(t, idx).rank() != rank) user_error("take_along_dim: input and indices must have the same number of dims", t.loc());
  const int dim = normalise_dim(t, int_arg(t, dim_v, "take_along_dim"), rank, "take_along_dim");
  ir::Shape xs = type_of(t, x).shape, is = type_of(t, idx).shape;
  for (int d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    if (d == dim || xs[i] == is[i]) continue;
    if (xs[i].as_constant() == 1) xs[i] = is[i];
    else if (is[i].as_constant() == 1) is[i] = xs[i];
    else user_error("take_along_dim: input and indices do not broadcast outside dim (torch raises here too)", t.loc());
  }
  if (!(xs == type_of(t, x).shape)) x = node(t, OpKind::Expand, {x}, ir::Attrs().set("shape", xs));
  if (!(is == type_of(t, idx).shape)) idx = node(t, OpKind::Expand, {idx}, ir::Attrs().set("shape", is));
  return add(t, OpKind::Gather, {x, idx}, ir::Attrs().set("axis", int64_t{dim}));
}

// torch.var_mean / std_mean: (var or std, mean), bound as torch.var binds (var's builder), the
// mean over the same dims.
VarRef var_mean(Translator& t, const CallArgs& call, bool take_sqrt) {
  CallArgs a = bind_schema(t, take_sqrt ? "aten::std_mean" : "aten::var_mean", call);
  VarRef spread = take_sqrt ? std_(t, call) : var(t, call);
  VarRef dim = a.kw("dim"), keepdim = a.kw("keepdim");
  VarRef m = mean(t, CallArgs{{a.kw("self"), dim ? dim : t.constant(Py_None), keepdim ? keepdim : t.constant(Py_False)}, {}});
  return sequence({spread, m});
}

namespace {

// The (k + 1)-th smallest along `axis` (kept, size 1) as (values, indices), by topk: NaN counts
// as larger than everything, as torch's selection does; of equal values, the lower index.
std::pair<ValueId, ValueId> kth_smallest(Translator& t, ValueId x, int axis, int64_t k) {
  ir::Attrs attrs;
  attrs.set("k", k + 1).set("axis", int64_t{axis}).set("largest", int64_t{0}).set("sorted", int64_t{1});
  auto r = t.graph().add_node(OpKind::TopK, {x}, attrs, t.loc());
  return {slice_of(t, r[0], axis, k, k + 1), slice_of(t, r[1], axis, k, k + 1)};
}

ValueId drop_axis(Translator& t, ValueId v, int axis) {
  ir::Shape s = type_of(t, v).shape;
  s.erase(s.begin() + axis);
  return reshape_to(t, v, s);
}

VarRef values_indices(ValueId values, ValueId indices) {
  return named_tuple({wrap_value(values), wrap_value(indices)}, {"values", "indices"});
}

}  // namespace

// torch.median(input) (the lower median of all elements) / median(input, dim, keepdim) ->
// (values, indices): the ((n - 1) // 2)-th smallest; a NaN along dim gives NaN (and its first
// index), as torch.
VarRef median(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::median", call);
  ValueId x = tensor(t, a.kw("self"), "median");
  VarRef dim_v = a.kw("dim");
  const bool global = !dim_v;
  if (global) x = reshape_to(t, x, {type_of(t, x).numel()});
  const int rank = type_of(t, x).rank();
  if (rank == 0) return global ? wrap_value(x) : values_indices(x, constant(t, 0, DType::i64));
  const int axis = global ? 0 : normalise_dim(t, int_arg(t, dim_v, "median"), rank, "median");
  const bool keepdim = !global && bool_arg(t, a.kw("keepdim"), false);
  const int64_t n = static_dim(t, x, axis, "median");
  if (n == 0) user_error("median of an empty dim (torch raises here too)", t.loc());
  auto [values, indices] = kth_smallest(t, x, axis, (n - 1) / 2);
  if (ir::is_floating(type_of(t, x).dtype)) {
    ValueId nan = node(t, OpKind::Ne, {x, x});
    ValueId any = node(t, OpKind::ReduceMax, {nan}, axes_attrs({axis}, true));
    values = node(t, OpKind::Where, {any, constant(t, NAN, type_of(t, x).dtype), values});
    ValueId first = node(t, OpKind::ArgMax, {cast(t, nan, DType::i32)}, axes_attrs({axis}, true));
    indices = node(t, OpKind::Where, {any, first, indices});
  }
  if (!keepdim) values = drop_axis(t, values, axis), indices = drop_axis(t, indices, axis);
  if (global) return wrap_value(values);
  return values_indices(values, indices);
}

// torch.kthvalue(input, k, dim=-1, keepdim=False) -> (values, indices): the k-th smallest (from
// 1), NaN the largest. Where the k-th value occurs more than once, torch's index is whichever
// its quickselect's swaps leave there; this gives the lowest.
VarRef kthvalue(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "kthvalue");
  const int64_t k = int_arg(t, a.get(1, "k"), "kthvalue k");
  const int rank = type_of(t, x).rank();
  const int axis = normalise_dim(t, int_or(t, a, 2, "dim", -1), rank, "kthvalue");
  const int64_t n = rank == 0 ? 1 : static_dim(t, x, axis, "kthvalue");
  if (k < 1 || k > n)
    user_error("kthvalue: k = " + std::to_string(k) + " is out of range for a dim of size " + std::to_string(n) +
                   " (torch raises here too)", t.loc(), "k counts from 1 to the size of dim");
  if (rank == 0) return values_indices(x, constant(t, 0, DType::i64));
  auto [values, indices] = kth_smallest(t, x, axis, k - 1);
  if (!bool_arg(t, a.get(3, "keepdim"), false))
    values = drop_axis(t, values, axis), indices = drop_axis(t, indices, axis);
  return values_indices(values, indices);
}

// torch.cummax / cummin(input, dim) -> (values, indices): an inclusive scan of (value, index)
// pairs over a static dim in log2(n) steps (Hillis-Steele). At step s a position keeps its own
// pair when its value is at least as large as the one s back (cummax; as small: cummin), or NaN,
// or nothing lies s back; else it takes that pair. So ties and NaNs keep the latest index and
// values stay NaN after the first NaN, as torch's loop (`isnan(x) || x >= best`) does.
VarRef cumulative_extreme(Translator& t, const CallArgs& a, bool is_max) {
  const char* what = is_max ? "cummax" : "cummin";
  ValueId x = tensor(t, a.get(0, "self"), what);
  const int rank = type_of(t, x).rank();
  const int axis = normalise_dim(t, int_arg(t, a.get(1, "dim"), what), rank, what);
  if (rank == 0) return values_indices(x, constant(t, 0, DType::i64));
  const int64_t n = static_dim(t, x, axis, what);
  ir::Shape along(static_cast<size_t>(rank), ir::SymExpr(1));
  along[static_cast<size_t>(axis)] = ir::SymExpr(n);
  ValueId pos = reshape_to(t, arange_of(t, ir::SymExpr(n)), along);
  ValueId values = x;
  ValueId indices = node(t, OpKind::Expand, {pos}, ir::Attrs().set("shape", type_of(t, x).shape));
  const bool floating = ir::is_floating(type_of(t, x).dtype);
  for (int64_t s = 1; s < n; s *= 2) {
    std::vector<int64_t> low(static_cast<size_t>(rank), 0), high = low;
    low[static_cast<size_t>(axis)] = s, high[static_cast<size_t>(axis)] = -s;
    auto shifted = [&](ValueId v) {  // v[i - s] at i >= s
      return node(t, OpKind::Pad, {v}, ir::Attrs().set("low", low).set("high", high).set("value", 0.0));
    };
    ValueId earlier = shifted(values);
    ValueId own = node(t, OpKind::Or, {node(t, is_max ? OpKind::Ge : OpKind::Le, {values, earlier}),
                                       node(t, OpKind::Lt, {pos, constant(t, static_cast<double>(s), DType::i64)})});
    if (floating) own = node(t, OpKind::Or, {own, node(t, OpKind::Ne, {values, values})});
    values = node(t, OpKind::Where, {own, values, earlier});
    indices = node(t, OpKind::Where, {own, indices, shifted(indices)});
  }
  return values_indices(values, indices);
}

namespace {

// The product along `axis` (kept, size 1) of a static dim: a tree of products of strided halves.
ValueId product_along(Translator& t, ValueId x, int axis, const char* what) {
  int64_t n = static_dim(t, x, axis, what);
  if (n == 0) {
    ir::Shape s = type_of(t, x).shape;
    s[static_cast<size_t>(axis)] = ir::SymExpr(1);
    return node(t, OpKind::Full, {}, ir::Attrs().set("shape", s).set("value", 1.0).set("dtype", type_of(t, x).dtype));
  }
  while (n > 1) {
    const int64_t half = n / 2;
    ValueId p = node(t, OpKind::Mul, {slice_of(t, x, axis, 0, 2 * half, 2), slice_of(t, x, axis, 1, 2 * half, 2)});
    if (n % 2) p = node(t, OpKind::Concat, {p, slice_of(t, x, axis, n - 1, n)}, ir::Attrs().set("axis", int64_t{axis}));
    x = p;
    n = half + n % 2;
  }
  return x;
}

// prod/cumprod's dtype: the dtype= argument, else integers and bools in int64.
ValueId product_operand(Translator& t, ValueId x, const VarRef& dtype) {
  if (auto d = dtype_arg(t, dtype)) return cast(t, x, *d);
  return ir::is_floating(type_of(t, x).dtype) ? x : cast(t, x, DType::i64);
}

}  // namespace

// torch.prod(input, *, dtype) / prod(input, dim, keepdim=False, *, dtype), Tensor.prod.
VarRef prod(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::prod", call);
  ValueId x = product_operand(t, tensor(t, a.kw("self"), "prod"), a.kw("dtype"));
  VarRef dim_v = a.kw("dim");
  if (!dim_v) return wrap_value(reshape_to(t, product_along(t, reshape_to(t, x, {type_of(t, x).numel()}), 0, "prod"), {}));
  const int rank = type_of(t, x).rank();
  if (rank == 0) return wrap_value(x);
  const int axis = normalise_dim(t, int_arg(t, dim_v, "prod"), rank, "prod");
  ValueId p = product_along(t, x, axis, "prod");
  if (bool_arg(t, a.kw("keepdim"), false)) return wrap_value(p);
  ir::Shape s = type_of(t, p).shape;
  s.erase(s.begin() + axis);
  return wrap_value(reshape_to(t, p, s));
}

// torch.cumprod(input, dim, *, dtype): the running products of a static dim's slices, concatenated.
VarRef cumprod(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::cumprod", call);
  ValueId x = product_operand(t, tensor(t, a.kw("self"), "cumprod"), a.kw("dtype"));
  const int rank = type_of(t, x).rank();
  const int axis = normalise_dim(t, int_arg(t, a.kw("dim"), "cumprod"), rank, "cumprod");
  if (rank == 0) return wrap_value(x);
  const int64_t n = static_dim(t, x, axis, "cumprod");
  if (n > 1024) unsupported(t, "cumprod over more than 1024 elements", "use exp(cumsum(log(x))) for positive x");
  if (n <= 1) return wrap_value(x);
  std::vector<ValueId> parts{slice_of(t, x, axis, 0, 1)};
  for (int64_t i = 1; i < n; ++i) parts.push_back(node(t, OpKind::Mul, {parts.back(), slice_of(t, x, axis, i, i + 1)}));
  return add(t, OpKind::Concat, parts, ir::Attrs().set("axis", int64_t{axis}));
}

// torch.searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
// sorter=None) and torch.bucketize(input, boundaries, *, out_int32=False, right=False): a
// searchsorted op (torch's binary search: NaN goes past every element) over both in the dtype
// they promote to; a Python number as the input gives a 0-d result (a 1-D sequence only).
VarRef searchsorted(Translator& t, const CallArgs& call, bool bucketize) {
  const char* what = bucketize ? "bucketize" : "searchsorted";
  CallArgs a = bind_schema(t, bucketize ? "aten::bucketize" : "aten::searchsorted", call);
  ValueId sorted = tensor(t, a.kw(bucketize ? "boundaries" : "sorted_sequence"), what);
  const int rank = type_of(t, sorted).rank();
  if (rank == 0 || (bucketize && rank != 1))
    user_error(std::string(what) + ": the boundaries must be " + (bucketize ? "1-D" : "at least 1-D") +
                   ", got " + type_of(t, sorted).str() + " (torch raises here too)", t.loc());
  bool right = bool_arg(t, a.kw("right"), false);
  if (VarRef sorter = a.kw("sorter"); sorter && !is_none(sorter))
    unsupported(t, "searchsorted(sorter=...)", "pass the sequence sorted: torch.gather(seq, -1, sorter)");
  if (VarRef side = a.kw("side"); side && !is_none(side)) {
    const std::string s = str_arg(t, side, "searchsorted side", "left");
    if (s != "left" && s != "right")
      user_error("searchsorted: side must be 'left' or 'right', got '" + s + "' (torch raises here too)", t.loc());
    if (right && s == "left")
      user_error("searchsorted: side and right can't be set to opposites (torch raises here too)", t.loc());
    right = s == "right";
  }
  const VarRef input = a.kw("self");
  ValueId values = tensor_or_scalar(t, input, type_of(t, sorted).dtype, what);
  if (type_of(t, values).rank() == 0 && rank != 1)
    user_error("searchsorted: a scalar input needs a 1-D sorted sequence, got " + type_of(t, sorted).str() +
                   " (torch raises here too)", t.loc());
  const DType dt = ir::promote(type_of(t, sorted).dtype, type_of(t, values).dtype);
  ValueId r = node(t, OpKind::SearchSorted, {cast(t, sorted, dt), cast(t, values, dt)},
                   ir::Attrs().set("right", int64_t{right}));
  return wrap_value(bool_arg(t, a.kw("out_int32"), false) ? cast(t, r, DType::i32) : r);
}

}  // namespace aotrace::embed::ops
