// Builders of torch ops that real model code uses and that are compositions of other graph ops:
// isnan/isinf/isfinite, log2, trunc, bitwise_xor, addmm/baddbmm, glu, pixel_(un)shuffle,
// fill_/copy_, and requires_grad_ (a no-op at inference).
#include <cmath>

#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

// The argument at `position` or under one of two keyword names (addmm's mat1, baddbmm's batch1).
VarRef get_either(const CallArgs& a, size_t position, const char* name, const char* other) {
  VarRef v = a.get(position, name);
  return v ? v : a.kw(other);
}

}  // namespace

// NaN is the one value unequal to itself; x - x is 0 for every finite x, NaN for ±inf and NaN.
// Integers and bools are always finite.
VarRef float_class(Translator& t, const CallArgs& a, FloatClass which) {
  const char* what = which == FloatClass::NaN ? "isnan" : which == FloatClass::Inf ? "isinf" : "isfinite";
  ValueId x = tensor(t, a.get(0, "input"), what);
  const DType dt = type_of(t, x).dtype;
  if (!ir::is_floating(dt)) {
    ValueId all = node(t, OpKind::Eq, {x, x});
    return which == FloatClass::Finite ? wrap_value(all) : add(t, OpKind::Not, {all});
  }
  if (which == FloatClass::NaN) return add(t, OpKind::Ne, {x, x});
  ValueId diff = node(t, OpKind::Sub, {x, x});
  if (which == FloatClass::Finite) return add(t, OpKind::Eq, {diff, constant(t, 0, dt)});
  ValueId not_finite = node(t, OpKind::Ne, {diff, constant(t, 0, dt)});
  return add(t, OpKind::And, {not_finite, node(t, OpKind::Eq, {x, x})});
}

VarRef log2(Translator& t, const CallArgs& a) {
  ValueId x = to_floating(t, tensor(t, a.get(0, "input"), "log2"));
  return add(t, OpKind::Mul, {node(t, OpKind::Log, {x}), constant(t, 1.0 / std::log(2.0), type_of(t, x).dtype)});
}

// Rounds toward zero: ceil below zero, floor above.
VarRef trunc(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "trunc");
  const DType dt = type_of(t, x).dtype;
  if (!ir::is_floating(dt)) return wrap_value(x);
  ValueId negative = node(t, OpKind::Lt, {x, constant(t, 0, dt)});
  return add(t, OpKind::Where, {negative, node(t, OpKind::Ceil, {x}), node(t, OpKind::Floor, {x})});
}

// torch.round: halves to even (as torch and IEEE round-to-nearest do); `decimals` scales first.
VarRef round(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::round", call);
  ValueId x = tensor(t, a.kw("self"), "round");
  const DType dt = type_of(t, x).dtype;
  if (!ir::is_floating(dt)) return wrap_value(x);
  const int64_t decimals = is_none(a.kw("decimals")) ? 0 : int_arg(t, a.kw("decimals"), "round decimals");
  const double scale = std::pow(10.0, static_cast<double>(decimals));
  if (decimals != 0) x = node(t, OpKind::Mul, {x, constant(t, scale, dt)});
  ValueId lower = node(t, OpKind::Floor, {x});
  ValueId frac = node(t, OpKind::Sub, {x, lower});
  ValueId half = constant(t, 0.5, dt), one = constant(t, 1, dt);
  // Exactly halfway: up when floor(x) is odd (remainder 1), so that the result is even.
  ValueId tie = node(t, OpKind::Add, {lower, node(t, OpKind::Remainder, {lower, constant(t, 2, dt)})});
  ValueId r = node(t, OpKind::Where, {node(t, OpKind::Gt, {frac, half}), node(t, OpKind::Add, {lower, one}),
                                      node(t, OpKind::Where, {node(t, OpKind::Lt, {frac, half}), lower, tie})});
  if (decimals != 0) r = node(t, OpKind::Div, {r, constant(t, scale, dt)});
  return wrap_value(r);
}

// torch.fmod: the remainder with the sign of the dividend (C's fmod), from torch.remainder's
// (the sign of the divisor): the two differ by one divisor when the signs disagree.
VarRef fmod(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::fmod", call);
  VarRef x = a.kw("self"), y = a.kw("other");
  VarRef r = binary(t, OpKind::Remainder, x, y);
  ValueId rv = tensor(t, r, "fmod");
  const DType dt = type_of(t, rv).dtype;
  ValueId zero = constant(t, 0, dt);
  ValueId x_negative = node(t, OpKind::Lt, {cast(t, tensor_or_scalar(t, x, dt, "fmod"), dt), zero});
  ValueId differ = node(t, OpKind::And, {node(t, OpKind::Ne, {rv, zero}),
                                         node(t, OpKind::Ne, {node(t, OpKind::Lt, {rv, zero}), x_negative})});
  ValueId shifted = tensor(t, binary(t, OpKind::Sub, r, y), "fmod");
  return add(t, OpKind::Where, {differ, shifted, rv});
}

// F.embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
// per_sample_weights, include_last_offset, padding_idx) over a 2-D input: one bag per row.
VarRef embedding_bag(Translator& t, const CallArgs& a) {
  ValueId idx = tensor(t, a.get(0, "input"), "embedding_bag");
  ValueId w = tensor(t, a.get(1, "weight"), "embedding_bag");
  if (!is_none(a.get(2, "offsets")) || type_of(t, idx).rank() != 2)
    unsupported(t, "embedding_bag with offsets (bags whose boundaries are tensor values)",
                "pass a 2-D input, one bag of equal length per row (pad with padding_idx)");
  if (!is_none(a.get(3, "max_norm"))) unsupported(t, "embedding_bag(max_norm=...)", "renormalise the weights before tracing");
  const std::string mode = str_arg(t, a.get(6, "mode"), "embedding_bag mode", "mean");
  if (mode != "sum" && mode != "mean" && mode != "max")
    user_error("embedding_bag: mode must be 'sum', 'mean' or 'max', got '" + mode + "'", t.loc());
  const ir::TensorType it = type_of(t, idx);
  const DType dt = type_of(t, w).dtype;
  ValueId rows = node(t, OpKind::IndexSelect, {w, reshape_to(t, idx, {it.numel()})}, ir::Attrs().set("axis", int64_t{0}));
  ir::Shape s = it.shape;
  s.push_back(type_of(t, w).shape[1]);
  ValueId bags = reshape_to(t, rows, s);  // [B, N, D]
  VarRef weights = a.get(8, "per_sample_weights");
  if (!is_none(weights)) {
    if (mode != "sum") user_error("embedding_bag: per_sample_weights needs mode='sum' (torch raises here too)", t.loc());
    bags = node(t, OpKind::Mul, {bags, unsqueeze_at(t, cast(t, tensor(t, weights, "embedding_bag"), dt), 2)});
  }
  // padding_idx: those entries leave the bag (sum and mean; a bag of padding only gives zeros).
  VarRef padding = a.get(10, "padding_idx");
  ValueId count = constant(t, static_cast<double>(it.shape[1].constant()), dt);
  if (!is_none(padding)) {
    if (mode == "max") unsupported(t, "embedding_bag(mode='max', padding_idx=...)");
    int64_t p = int_arg(t, padding, "embedding_bag padding_idx");
    if (p < 0) p += type_of(t, w).shape[0].constant();
    ValueId keep = cast(t, node(t, OpKind::Ne, {idx, constant(t, static_cast<double>(p), it.dtype)}), dt);
    bags = node(t, OpKind::Mul, {bags, unsqueeze_at(t, keep, 2)});
    count = node(t, OpKind::Maximum, {node(t, OpKind::ReduceSum, {keep}, axes_attrs({1}, true)), constant(t, 1, dt)});
  }
  if (mode == "max") return add(t, OpKind::ReduceMax, {bags}, axes_attrs({1}, false));
  ValueId total = node(t, OpKind::ReduceSum, {bags}, axes_attrs({1}, false));
  return mode == "sum" ? wrap_value(total) : add(t, OpKind::Div, {total, count});
}

// a ^ b = (a | b) & ~(a & b), on integers and bools.
VarRef bitwise_xor(Translator& t, const CallArgs& a) {
  VarRef x = a.get(0, "input"), y = a.get(1, "other");
  VarRef either = binary(t, OpKind::Or, x, y), both = binary(t, OpKind::And, x, y);
  if (ir::is_floating(type_of(t, tensor(t, either, "bitwise_xor")).dtype))
    user_error("bitwise_xor: only integer and bool tensors", t.loc());
  return binary(t, OpKind::And, either, add(t, OpKind::Not, {tensor(t, both, "bitwise_xor")}));
}

// addmm(input, mat1, mat2, *, beta=1, alpha=1) = beta * input + alpha * (mat1 @ mat2); baddbmm
// the same over batches. beta=0 ignores input, NaNs included, as torch does.
VarRef add_matmul(Translator& t, const CallArgs& a, bool batched) {
  const char* what = batched ? "baddbmm" : "addmm";
  VarRef input = a.get(0, "input");
  ValueId m1 = tensor(t, get_either(a, 1, batched ? "batch1" : "mat1", "mat1"), what);
  ValueId m2 = tensor(t, get_either(a, 2, batched ? "batch2" : "mat2", "mat2"), what);
  if (type_of(t, m1).rank() != (batched ? 3 : 2) || type_of(t, m2).rank() != (batched ? 3 : 2))
    user_error(std::string(what) + ": expects " + (batched ? "3-D" : "2-D") + " matrices", t.loc());
  // f16/bf16 (all three of one type): computed on the f32 sums and rounded once, as torch does.
  const DType half = type_of(t, m1).dtype;
  const bool once = (half == DType::f16 || half == DType::bf16) && type_of(t, m2).dtype == half &&
                    is_tensor(input) && type_of(t, tensor(t, input, what)).dtype == half;
  ir::Attrs sums;
  if (once) sums.set("out_dtype", DType::f32);
  VarRef product = add(t, OpKind::Matmul, {m1, m2}, sums);
  auto rounded = [&](VarRef v) { return once ? wrap_value(cast(t, tensor(t, v, what), half)) : v; };
  if (VarRef alpha = a.kw("alpha"); alpha && !is_none(alpha)) product = binary(t, OpKind::Mul, product, alpha);
  VarRef beta = a.kw("beta");
  if (once) input = wrap_value(cast(t, tensor(t, input, what), DType::f32));
  if (beta && !is_none(beta)) {
    PyRef b = t.to_python(beta);
    if (b && PyNumber_Check(b.get()) && PyFloat_AsDouble(b.get()) == 0.0) return rounded(product);
    input = binary(t, OpKind::Mul, input, beta);
  }
  return rounded(binary(t, OpKind::Add, input, product));
}

// glu(input, dim=-1): the first half times the sigmoid of the second.
VarRef glu(Translator& t, const CallArgs& a) {
  VarRef input = a.get(0, "input");
  VarRef dim = a.get(1, "dim");
  VarRef halves = chunk(t, CallArgs{{input, int_var(t, 2), is_none(dim) ? int_var(t, -1) : dim}, {}});
  auto* seq = as<SequenceVar>(halves);
  AOT_CHECK(seq && seq->items.size() == 2, "glu: chunk did not give two halves");
  ValueId gate = node(t, OpKind::Sigmoid, {tensor(t, seq->items[1], "glu")});
  return add(t, OpKind::Mul, {tensor(t, seq->items[0], "glu"), gate});
}

// pixel_shuffle(x, r): [N, C*r*r, H, W] -> [N, C, H*r, W*r]; pixel_unshuffle the inverse.
VarRef pixel_shuffle(Translator& t, const CallArgs& a, bool unshuffle) {
  const char* what = unshuffle ? "pixel_unshuffle" : "pixel_shuffle";
  ValueId x = tensor(t, a.get(0, "input"), what);
  const int64_t r = int_arg(t, a.get(1, unshuffle ? "downscale_factor" : "upscale_factor"), what);
  if (type_of(t, x).rank() != 4) unsupported(t, std::string(what) + " of a tensor that is not 4-D");
  const int64_t n = static_dim(t, x, 0, what), c = static_dim(t, x, 1, what), h = static_dim(t, x, 2, what),
                w = static_dim(t, x, 3, what);
  using S = ir::SymExpr;
  if (!unshuffle) {
    if (c % (r * r) != 0) user_error(std::string(what) + ": channels not divisible by the factor squared", t.loc());
    ValueId y = reshape_to(t, x, {S(n), S(c / (r * r)), S(r), S(r), S(h), S(w)});
    y = permute_to(t, y, {0, 1, 4, 2, 5, 3});
    return wrap_value(reshape_to(t, y, {S(n), S(c / (r * r)), S(h * r), S(w * r)}));
  }
  if (h % r != 0 || w % r != 0) user_error(std::string(what) + ": height or width not divisible by the factor", t.loc());
  ValueId y = reshape_to(t, x, {S(n), S(c), S(h / r), S(r), S(w / r), S(r)});
  y = permute_to(t, y, {0, 1, 3, 5, 2, 4});
  return wrap_value(reshape_to(t, y, {S(n), S(c * r * r), S(h / r), S(w / r)}));
}

// x.fill_(v) / x.copy_(src): the value, broadcast to x, written into x (ops::inplace: dtype kept,
// inputs and weights refused).
VarRef fill_inplace(Translator& t, const CallArgs& a) {
  VarRef self = a.get(0, "self");
  refuse_inplace_on_outside(t, self, "Tensor.fill_", "x = torch.full_like(x, value)");
  ValueId x = tensor(t, self, "fill_");
  VarRef value = a.get(1, "value");
  ValueId v = is_tensor(value) ? tensor(t, value, "fill_") : constant(t, float_arg(t, value, "fill_"), type_of(t, x).dtype);
  return inplace(t, self, expand_as(t, CallArgs{{wrap_value(v), self}, {}}), "Tensor.fill_");
}

VarRef copy_inplace(Translator& t, const CallArgs& a) {
  VarRef self = a.get(0, "self");
  refuse_inplace_on_outside(t, self, "Tensor.copy_", "x = src.expand_as(x).clone()");
  return inplace(t, self, expand_as(t, CallArgs{{a.get(1, "src"), self}, {}}), "Tensor.copy_");
}

VarRef requires_grad_(Translator&, const CallArgs& a) { return a.get(0, "self"); }

// F.upsample_nearest / F.upsample_bilinear(input, size, scale_factor): interpolate with the
// mode they name (bilinear with align_corners=True, as torch defines them).
VarRef upsample(Translator& t, const CallArgs& a, bool bilinear) {
  PyRef mode = PyRef::steal(PyUnicode_FromString(bilinear ? "bilinear" : "nearest"));
  CallArgs call{{a.get(0, "input"), a.get(1, "size") ? a.get(1, "size") : t.constant(Py_None),
                 a.get(2, "scale_factor") ? a.get(2, "scale_factor") : t.constant(Py_None), t.constant(mode.get())},
                {}};
  if (bilinear) call.args.push_back(t.constant(Py_True));
  return interpolate(t, call);
}

// slice_scatter(input, src, dim=0, start=None, end=None, step=1): a copy of input whose slice
// along dim is src, through the one index-assignment rule (setitem).
VarRef slice_scatter(Translator& t, const CallArgs& a) {
  VarRef copy = clone(t, CallArgs{{a.get(0, "input")}, {}});
  const int rank = type_of(t, tensor(t, copy, "slice_scatter")).rank();
  const int dim = normalise_dim(t, int_or(t, a, 2, "dim", 0), rank, "slice_scatter");
  auto or_none = [&](VarRef v) { return v ? v : t.constant(Py_None); };
  std::vector<VarRef> index;
  for (int d = 0; d < dim; ++d)
    index.push_back(std::make_shared<SliceVar>(t.constant(Py_None), t.constant(Py_None), t.constant(Py_None)));
  index.push_back(std::make_shared<SliceVar>(or_none(a.get(3, "start")), or_none(a.get(4, "end")), or_none(a.get(5, "step"))));
  setitem(t, CallArgs{{copy, std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, index), a.get(1, "src")}, {}});
  return copy;
}

}  // namespace aotrace::embed::ops
