// Builders of the torch op table for neural-network functions: matmul, linear, einsum,
// convolutions, pooling, normalisation, interpolate and dropout (eval: identity).
#include "embed/torch_ops_builders.h"

#include <cmath>
#include <map>

namespace aotrace::embed::ops {

VarRef matmul(Translator& t, const CallArgs& a) {
  return add(t, OpKind::Matmul, {tensor(t, a.get(0, "input"), "matmul"), tensor(t, a.get(1, "other|mat2|vec"), "matmul")});
}

VarRef linear(Translator& t, const CallArgs& a) {
  std::vector<ValueId> ops = {tensor(t, a.get(0, "input"), "linear"), tensor(t, a.get(1, "weight"), "linear")};
  if (VarRef b = a.get(2, "bias"); !is_none(b)) ops.push_back(tensor(t, b, "linear"));
  return add(t, OpKind::Linear, std::move(ops));
}

// ---------------------------------------------------------------------------------------------
// einsum with one or two operands: indices are classified as batch (both operands and the
// output), contracted (both, not the output), left/right-only (one operand and the output) and
// summed (one operand only: reduced first). Then permute + reshape + one batched matmul. An
// index repeated within one operand takes its diagonal first.

namespace {

struct Operand {
  ValueId v;
  std::string idx;
};

// Sums away indices of `o` that appear neither in `keep_a` nor in `keep_b`.
Operand sum_unused(Translator& t, Operand o, const std::string& keep_a, const std::string& keep_b) {
  std::vector<int64_t> axes;
  std::string rest;
  for (size_t i = 0; i < o.idx.size(); ++i) {
    char c = o.idx[i];
    if (keep_a.find(c) == std::string::npos && keep_b.find(c) == std::string::npos) axes.push_back(static_cast<int64_t>(i));
    else rest += c;
  }
  if (axes.empty()) return o;
  return {node(t, OpKind::ReduceSum, {o.v}, axes_attrs(axes, false)), rest};
}

ValueId arrange(Translator& t, const Operand& o, const std::string& order) {
  std::vector<int64_t> perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(o.idx.find(c)));
  return permute_to(t, o.v, perm);
}

ir::SymExpr size_of(Translator& t, const std::vector<Operand>& ops, char c) {
  for (const auto& o : ops)
    if (auto p = o.idx.find(c); p != std::string::npos) return type_of(t, o.v).shape[p];
  internal_error(std::string("einsum: unknown index ") + c);
}

std::string expand_ellipsis(Translator& t, std::string spec, int rank, std::string& ell) {
  auto p = spec.find("...");
  if (p == std::string::npos) return spec;
  int named = static_cast<int>(spec.size()) - 3;
  std::string fill;
  for (int i = 0; i < rank - named; ++i) fill += static_cast<char>('A' + i);
  if (fill.size() > ell.size()) ell = fill;
  return spec.substr(0, p) + fill + spec.substr(p + 3);
}

}  // namespace

VarRef einsum(Translator& t, const CallArgs& a) {
  std::string eq = str_arg(t, a.get(0, "equation"), "einsum", "");
  std::string spec;
  for (char c : eq) if (c != ' ') spec += c;
  std::vector<VarRef> args(a.args.begin() + 1, a.args.end());
  if (args.size() == 1) if (auto items = sequence_items(t, args[0])) args = *items;
  if (args.empty() || args.size() > 2) unsupported(t, "einsum with " + std::to_string(args.size()) + " operands");
  auto arrow = spec.find("->");
  std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> ins;
  for (size_t s = 0, c; s <= lhs.size(); s = c + 1) {
    c = lhs.find(',', s);
    if (c == std::string::npos) c = lhs.size();
    ins.push_back(lhs.substr(s, c - s));
  }
  if (ins.size() != args.size()) user_error("einsum: the equation does not match the operand count", t.loc());
  std::string ell;
  std::vector<Operand> ops;
  std::string written;  // every operand's indices as written (implicit output: the ones seen once)
  for (size_t i = 0; i < args.size(); ++i) {
    ValueId v = tensor(t, args[i], "einsum");
    ops.push_back({v, expand_ellipsis(t, ins[i], type_of(t, v).rank(), ell)});
    if (static_cast<int>(ops.back().idx.size()) != type_of(t, v).rank())
      user_error("einsum: '" + ins[i] + "' does not match operand " + type_of(t, v).str(), t.loc());
    written += ops.back().idx;
    // A repeated index takes that diagonal first ("ii->i", "bii->b"): it moves to the end.
    for (Operand& o = ops.back();;) {
      size_t p1 = 0, p2 = std::string::npos;
      for (; p1 < o.idx.size() && p2 == std::string::npos; ++p1) p2 = o.idx.find(o.idx[p1], p1 + 1);
      if (p2 == std::string::npos) break;
      --p1;
      const char c = o.idx[p1];
      o.v = diagonal_of(t, o.v, 0, static_cast<int>(p1), static_cast<int>(p2));
      o.idx = o.idx.substr(0, p1) + o.idx.substr(p1 + 1, p2 - p1 - 1) + o.idx.substr(p2 + 1) + c;
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = spec.substr(arrow + 2);
    if (auto p = out.find("..."); p != std::string::npos) out = out.substr(0, p) + ell + out.substr(p + 3);
  } else {  // implicit output: ellipsis dims, then indices appearing once, sorted
    std::map<char, int> count;
    for (char c : written) ++count[c];
    out = ell;
    for (auto [c, n] : count) if (n == 1 && !(c >= 'A' && c <= 'Z')) out += c;
  }
  if (ops.size() == 1) {
    Operand o = sum_unused(t, ops[0], out, "");
    return wrap_value(arrange(t, o, out));
  }
  Operand A = sum_unused(t, ops[0], out, ops[1].idx), B = sum_unused(t, ops[1], out, ops[0].idx);
  std::string batch, left, right, contracted;
  for (char c : A.idx) {
    bool in_b = B.idx.find(c) != std::string::npos, in_out = out.find(c) != std::string::npos;
    if (in_b && in_out) batch += c;
    else if (in_b) contracted += c;
    else left += c;
  }
  for (char c : B.idx) if (A.idx.find(c) == std::string::npos) right += c;
  std::vector<Operand> both{A, B};
  auto prod = [&](const std::string& s) {
    ir::SymExpr p = 1;
    for (char c : s) p = p * size_of(t, both, c);
    return p;
  };
  ir::Shape batch_shape;
  for (char c : batch) batch_shape.push_back(size_of(t, both, c));
  ir::Shape a3 = batch_shape, b3 = batch_shape;
  a3.push_back(prod(left)), a3.push_back(prod(contracted));
  b3.push_back(prod(contracted)), b3.push_back(prod(right));
  ValueId av = reshape_to(t, arrange(t, A, batch + left + contracted), a3);
  ValueId bv = reshape_to(t, arrange(t, B, batch + contracted + right), b3);
  ValueId r = node(t, OpKind::Matmul, {av, bv});
  ir::Shape full = batch_shape;
  for (char c : left + right) full.push_back(size_of(t, both, c));
  r = reshape_to(t, r, full);
  return wrap_value(arrange(t, Operand{r, batch + left + right}, out));
}

// ---------------------------------------------------------------------------------------------
// Convolution and pooling. Unbatched inputs ([C, *spatial]) get a batch dim of 1 and lose it.

namespace {

ValueId batched(Translator& t, ValueId x, int spatial, bool& added) {
  added = type_of(t, x).rank() == spatial + 1;
  return added ? unsqueeze_at(t, x, 0) : x;
}

VarRef unbatched(Translator& t, ValueId r, bool added) {
  if (!added) return wrap_value(r);
  ir::Shape s = type_of(t, r).shape;
  s.erase(s.begin());
  return wrap_value(reshape_to(t, r, s));
}

std::vector<int64_t> ones(int n) { return std::vector<int64_t>(static_cast<size_t>(n), 1); }

}  // namespace

VarRef conv(Translator& t, const CallArgs& a, int n) {
  bool added = false;
  ValueId x = batched(t, tensor(t, a.get(0, "input"), "conv"), n, added);
  ValueId w = tensor(t, a.get(1, "weight"), "conv");
  VarRef bias = a.get(2, "bias");
  auto stride = is_none(a.get(3, "stride")) ? ones(n) : int_tuple(t, a.get(3, "stride"), static_cast<size_t>(n), "conv stride");
  auto dilation = is_none(a.get(5, "dilation")) ? ones(n) : int_tuple(t, a.get(5, "dilation"), static_cast<size_t>(n), "conv dilation");
  int64_t groups = int_or(t, a, 6, "groups", 1);
  std::vector<int64_t> low(static_cast<size_t>(n), 0), high = low;
  VarRef padding = a.get(4, "padding");
  PyRef p = is_none(padding) ? PyRef() : t.to_python(padding);
  if (p && PyUnicode_Check(p.get())) {
    std::string mode = py_str(p.get());
    if (mode == "same") {
      for (int d = 0; d < n; ++d) {
        int64_t k = type_of(t, w).shape[static_cast<size_t>(d + 2)].constant();
        int64_t total = dilation[static_cast<size_t>(d)] * (k - 1);
        low[static_cast<size_t>(d)] = total / 2;
        high[static_cast<size_t>(d)] = total - total / 2;
      }
    } else if (mode != "valid") {
      user_error("conv: padding must be 'same', 'valid' or ints, got '" + mode + "'", t.loc());
    }
  } else if (p) {
    low = high = int_tuple(t, padding, static_cast<size_t>(n), "conv padding");
  }
  std::vector<ValueId> operands{x, w};
  if (!is_none(bias)) operands.push_back(tensor(t, bias, "conv"));
  ir::Attrs attrs;
  attrs.set("stride", stride).set("dilation", dilation).set("pad_low", low).set("pad_high", high).set("groups", groups);
  return unbatched(t, node(t, OpKind::Conv, operands, attrs), added);
}

// F.conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
VarRef conv_transpose(Translator& t, const CallArgs& a, int n) {
  bool added = false;
  ValueId x = batched(t, tensor(t, a.get(0, "input"), "conv_transpose"), n, added);
  ValueId w = tensor(t, a.get(1, "weight"), "conv_transpose");
  VarRef bias = a.get(2, "bias");
  auto tuple_or = [&](size_t pos, const char* name, int64_t fallback) {
    VarRef v = a.get(pos, name);
    return is_none(v) ? std::vector<int64_t>(static_cast<size_t>(n), fallback) : int_tuple(t, v, static_cast<size_t>(n), name);
  };
  std::vector<ValueId> operands{x, w};
  if (!is_none(bias)) operands.push_back(tensor(t, bias, "conv_transpose"));
  ir::Attrs attrs;
  attrs.set("stride", tuple_or(3, "stride", 1)).set("padding", tuple_or(4, "padding", 0))
      .set("output_padding", tuple_or(5, "output_padding", 0)).set("groups", int_or(t, a, 6, "groups", 1))
      .set("dilation", tuple_or(7, "dilation", 1));
  return unbatched(t, node(t, OpKind::ConvTranspose, operands, attrs), added);
}

namespace {

std::vector<int64_t> window_stride(Translator& t, const VarRef& v, const std::vector<int64_t>& kernel, int n) {
  if (is_none(v)) return kernel;
  if (auto items = sequence_items(t, v); items && items->empty()) return kernel;
  return int_tuple(t, v, static_cast<size_t>(n), "pool stride");
}

}  // namespace

namespace {

ValueId slice_of(Translator& t, ValueId x, int axis, int64_t start, int64_t end, int64_t step) {
  return node(t, OpKind::Slice, {x},
              ir::Attrs().set("axis", int64_t{axis}).set("start", start).set("end", end).set("step", step));
}

// The flat index into the spatial dims of each window's maximum, as max_pool's return_indices
// gives it: every window tap is a strided slice of x padded with -inf; the taps, stacked on a
// new last axis, give the tap of the maximum by argmax (the first on ties, as torch); the tap
// and the window's position give the input's row and column.
ValueId max_pool_indices(Translator& t, ValueId x, ValueId values, const ir::Attrs& attrs, int n) {
  const ir::TensorType xt = type_of(t, x), vt = type_of(t, values);
  const auto kernel = attrs.ints("kernel"), stride = attrs.ints("stride"), padding = attrs.ints("padding"),
             dilation = attrs.ints("dilation");
  std::vector<int64_t> in, out, low(static_cast<size_t>(n + 2), 0), high = low;
  for (int d = 0; d < n; ++d) {
    const size_t i = static_cast<size_t>(d);
    in.push_back(xt.shape[i + 2].constant());
    out.push_back(vt.shape[i + 2].constant());
    const int64_t needed = (out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1;
    low[i + 2] = padding[i];
    high[i + 2] = std::max<int64_t>(0, needed - in[i] - padding[i]);
  }
  ValueId padded = node(t, OpKind::Pad, {x},
                        ir::Attrs().set("low", low).set("high", high).set("value", -INFINITY));
  std::vector<ValueId> taps;
  const int64_t count = n == 1 ? kernel[0] : kernel[0] * kernel[1];
  for (int64_t tap = 0; tap < count; ++tap) {
    ValueId v = padded;
    for (int d = 0; d < n; ++d) {
      const size_t i = static_cast<size_t>(d);
      const int64_t k = n == 1 || d == 1 ? tap % kernel[i] : tap / kernel[1];
      const int64_t start = k * dilation[i];
      v = slice_of(t, v, d + 2, start, start + (out[i] - 1) * stride[i] + 1, stride[i]);
    }
    taps.push_back(unsqueeze_at(t, v, n + 2));
  }
  ValueId stacked = taps.size() == 1 ? taps[0] : node(t, OpKind::Concat, taps, ir::Attrs().set("axis", int64_t{n + 2}));
  ValueId best = node(t, OpKind::ArgMax, {stacked}, axes_attrs({n + 2}, false));
  ValueId flat = constant(t, 0, DType::i64);
  for (int d = 0; d < n; ++d) {
    const size_t i = static_cast<size_t>(d);
    ValueId k = best;
    if (n == 2 && d == 0) k = node(t, OpKind::FloorDiv, {k, constant(t, static_cast<double>(kernel[1]), DType::i64)});
    if (n == 2 && d == 1) k = node(t, OpKind::Remainder, {k, constant(t, static_cast<double>(kernel[1]), DType::i64)});
    ir::Shape along(static_cast<size_t>(n - d), ir::SymExpr(1));
    along[0] = ir::SymExpr(out[i]);
    ValueId window = reshape_to(t, node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{ir::SymExpr(out[i])})
                                                          .set("start", static_cast<double>(-padding[i]))
                                                          .set("step", static_cast<double>(stride[i])).set("dtype", DType::i64)),
                                along);
    ValueId pos = node(t, OpKind::Add, {window, node(t, OpKind::Mul, {k, constant(t, static_cast<double>(dilation[i]), DType::i64)})});
    flat = node(t, OpKind::Add, {node(t, OpKind::Mul, {flat, constant(t, static_cast<double>(in[i]), DType::i64)}), pos});
  }
  return flat;
}

}  // namespace

// F.max_poolNd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices);
// F.max_poolNd_with_indices always returns (values, indices).
VarRef max_pool(Translator& t, const CallArgs& a, int n, bool with_indices) {
  bool added = false;
  ValueId x = batched(t, tensor(t, a.get(0, "input"), "max_pool"), n, added);
  auto kernel = int_tuple(t, a.get(1, "kernel_size"), static_cast<size_t>(n), "max_pool kernel_size");
  with_indices = with_indices || bool_arg(t, a.get(6, "return_indices"), false);
  ir::Attrs attrs;
  attrs.set("kind", std::string("max")).set("kernel", kernel)
      .set("stride", window_stride(t, a.get(2, "stride"), kernel, n))
      .set("padding", is_none(a.get(3, "padding")) ? std::vector<int64_t>(static_cast<size_t>(n), 0)
                                                   : int_tuple(t, a.get(3, "padding"), static_cast<size_t>(n), "max_pool padding"))
      .set("dilation", is_none(a.get(4, "dilation")) ? ones(n) : int_tuple(t, a.get(4, "dilation"), static_cast<size_t>(n), "max_pool dilation"))
      .set("ceil_mode", int64_t{bool_arg(t, a.get(5, "ceil_mode"), false)}).set("count_include_pad", int64_t{0});
  ValueId values = node(t, OpKind::Pool, {x}, attrs);
  if (!with_indices) return unbatched(t, values, added);
  ValueId indices = max_pool_indices(t, x, values, attrs, n);
  return sequence({unbatched(t, values, added), unbatched(t, indices, added)});
}

// F.adaptive_max_poolNd(input, output_size, return_indices). A max over a box is a max over
// each of its sides in turn: every spatial dim is pooled on its own, by one strided pool where
// the size divides evenly, else by a max over each output position's slice
// [floor(i * in / out), ceil((i + 1) * in / out)).
VarRef adaptive_max_pool(Translator& t, const CallArgs& a, int n) {
  bool added = false;
  ValueId x = batched(t, tensor(t, a.get(0, "input"), "adaptive_max_pool"), n, added);
  if (bool_arg(t, a.get(2, "return_indices"), false)) unsupported(t, "adaptive_max_pool with return_indices=True");
  VarRef size = a.get(1, "output_size");
  std::vector<VarRef> items = sequence_items(t, size).value_or(std::vector<VarRef>(static_cast<size_t>(n), size));
  if (items.size() == 1 && n > 1) items.assign(static_cast<size_t>(n), items[0]);
  for (int d = 0; d < n; ++d) {
    const int axis = d + 2;
    const int64_t in = type_of(t, x).shape[static_cast<size_t>(axis)].constant();
    const VarRef& v = items[static_cast<size_t>(d)];
    const int64_t out = is_none(v) ? in : int_arg(t, v, "adaptive_max_pool output_size");
    if (out <= 0) user_error("adaptive_max_pool: output_size must be positive", t.loc());
    if (out == in) continue;
    std::vector<ValueId> parts;
    for (int64_t i = 0; i < out; ++i) {
      const int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
      parts.push_back(node(t, OpKind::ReduceMax, {slice_of(t, x, axis, start, end, 1)}, axes_attrs({axis}, true)));
    }
    x = parts.size() == 1 ? parts[0] : node(t, OpKind::Concat, parts, ir::Attrs().set("axis", int64_t{axis}));
  }
  return unbatched(t, x, added);
}

// F.avg_poolNd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
VarRef avg_pool(Translator& t, const CallArgs& a, int n) {
  bool added = false;
  ValueId x = batched(t, tensor(t, a.get(0, "input"), "avg_pool"), n, added);
  auto kernel = int_tuple(t, a.get(1, "kernel_size"), static_cast<size_t>(n), "avg_pool kernel_size");
  if (!is_none(a.get(6, "divisor_override"))) unsupported(t, "avg_pool with divisor_override");
  ir::Attrs attrs;
  attrs.set("kind", std::string("avg")).set("kernel", kernel)
      .set("stride", window_stride(t, a.get(2, "stride"), kernel, n))
      .set("padding", is_none(a.get(3, "padding")) ? std::vector<int64_t>(static_cast<size_t>(n), 0)
                                                   : int_tuple(t, a.get(3, "padding"), static_cast<size_t>(n), "avg_pool padding"))
      .set("dilation", ones(n)).set("ceil_mode", int64_t{bool_arg(t, a.get(4, "ceil_mode"), false)})
      .set("count_include_pad", int64_t{bool_arg(t, a.get(5, "count_include_pad"), true)});
  return unbatched(t, node(t, OpKind::Pool, {x}, attrs), added);
}

namespace {

// Adaptive average pooling of x [N, C, D, H, W] to `out` (d, h, w). The average over a box is an
// average over each of its sides in turn (torch's windows are products of per-dim ones), so
// (H, W) pool as the 2-D op on [N, C * D, H, W], then D as the 1-D op with it moved last.
ValueId adaptive_avg_pool3d_of(Translator& t, ValueId x, const std::vector<int64_t>& out) {
  const ir::Shape s = type_of(t, x).shape;
  const ir::SymExpr n = s[0], c = s[1], hw(out[1] * out[2]);
  if (!(s[3] == ir::SymExpr(out[1])) || !(s[4] == ir::SymExpr(out[2])))
    x = node(t, OpKind::AdaptiveAvgPool, {reshape_to(t, x, {n, c * s[2], s[3], s[4]})},
             ir::Attrs().set("size", std::vector<int64_t>{out[1], out[2]}));
  if (!(s[2] == ir::SymExpr(out[0]))) {
    ValueId last = permute_to(t, reshape_to(t, x, {n, c, s[2], hw}), {0, 1, 3, 2});
    x = node(t, OpKind::AdaptiveAvgPool, {reshape_to(t, last, {n, c * hw, s[2]})},
             ir::Attrs().set("size", std::vector<int64_t>{out[0]}));
    x = permute_to(t, reshape_to(t, x, {n, c, hw, ir::SymExpr(out[0])}), {0, 1, 3, 2});
  }
  return reshape_to(t, x, {n, c, ir::SymExpr(out[0]), ir::SymExpr(out[1]), ir::SymExpr(out[2])});
}

}  // namespace

// F.adaptive_avg_poolNd(input, output_size) for 1 to 3 spatial dims, to any output size
// (torch's windows [floor(i * in / out), ceil((i + 1) * in / out))); None keeps a dim's size.
// 3-D to (1, 1, 1) (video classifiers' global pool) is a mean.
VarRef adaptive_avg_pool(Translator& t, const CallArgs& a, int n) {
  bool added = false;
  ValueId x = batched(t, tensor(t, a.get(0, "input"), "adaptive_avg_pool"), n, added);
  VarRef size = a.get(1, "output_size");
  std::vector<VarRef> items = sequence_items(t, size).value_or(std::vector<VarRef>(static_cast<size_t>(n), size));
  if (items.size() == 1 && n > 1) items.assign(static_cast<size_t>(n), items[0]);
  if (items.size() != static_cast<size_t>(n))
    user_error("adaptive_avg_pool" + std::to_string(n) + "d: output_size must have " + std::to_string(n) +
                   " elements (torch raises here too)", t.loc());
  std::vector<int64_t> out;
  bool all_one = true;
  for (int d = 0; d < n; ++d) {
    const VarRef& v = items[static_cast<size_t>(d)];
    // None keeps the input's size (which must then be static); a dynamic size pools to any
    // given output size the op rule accepts (global pooling, 1, for every size).
    out.push_back(is_none(v) ? static_dim(t, x, d + 2, "adaptive_avg_pool") : int_arg(t, v, "adaptive_avg_pool output_size"));
    if (out.back() < 1) user_error("adaptive_avg_pool: output_size must be positive (torch raises here too)", t.loc());
    all_one = all_one && out.back() == 1;
  }
  if (n < 3) return unbatched(t, node(t, OpKind::AdaptiveAvgPool, {x}, ir::Attrs().set("size", out)), added);
  if (all_one) return unbatched(t, node(t, OpKind::Mean, {x}, axes_attrs({2, 3, 4}, true)), added);
  return unbatched(t, adaptive_avg_pool3d_of(t, x, out), added);
}

// ---------------------------------------------------------------------------------------------
// Normalisation

VarRef batch_norm(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "batch_norm");
  VarRef mean = a.get(1, "running_mean"), var = a.get(2, "running_var");
  VarRef weight = a.get(3, "weight"), bias = a.get(4, "bias");
  double eps = float_or(t, a, 7, "eps", 1e-5);
  if (is_none(mean) && is_none(var)) {
    // Batch statistics with no running stats to update (track_running_stats=False, timm's
    // weight standardisation): over every dim but the channels, biased variance.
    const ir::TensorType type = type_of(t, x);
    std::vector<int64_t> axes;
    for (int d = 0; d < type.rank(); ++d)
      if (d != 1) axes.push_back(d);
    ValueId m = node(t, OpKind::Mean, {x}, axes_attrs(axes, true));
    ValueId centred = node(t, OpKind::Sub, {x, m});
    ValueId v = node(t, OpKind::Mean, {node(t, OpKind::Mul, {centred, centred})}, axes_attrs(axes, true));
    ValueId y = node(t, OpKind::Mul, {centred, node(t, OpKind::Rsqrt, {node(t, OpKind::Add, {v, constant(t, eps, type.dtype)})})});
    ir::Shape per_channel(static_cast<size_t>(type.rank()), ir::SymExpr(1));
    per_channel[1] = type.shape[1];
    if (!is_none(weight)) y = node(t, OpKind::Mul, {y, reshape_to(t, tensor(t, weight, "batch_norm"), per_channel)});
    if (!is_none(bias)) y = node(t, OpKind::Add, {y, reshape_to(t, tensor(t, bias, "batch_norm"), per_channel)});
    return wrap_value(y);
  }
  if (bool_arg(t, a.get(5, "training"), false) || is_none(mean) || is_none(var))
    t.graph_break("unsupported Python", "batch_norm in training mode (it updates the running statistics)",
                  "aotrace traces models in eval mode; call model.eval()");
  std::vector<ValueId> ops{x, tensor(t, mean, "batch_norm"), tensor(t, var, "batch_norm")};
  if (!is_none(weight) || !is_none(bias)) {
    const ir::SymExpr c = type_of(t, x).shape[1];
    DType dt = type_of(t, x).dtype;
    auto param = [&](const VarRef& v, double fill) {
      if (!is_none(v)) return tensor(t, v, "batch_norm");
      return node(t, OpKind::Full, {}, ir::Attrs().set("shape", ir::Shape{c}).set("value", fill).set("dtype", dt));
    };
    ops.push_back(param(weight, 1.0));
    ops.push_back(param(bias, 0.0));
  }
  // An f16/bf16 input with float32 statistics (a float32 BatchNorm under torch.autocast, after
  // a bfloat16 conv): torch's CPU kernel computes in float32 and rounds the result once.
  const DType in = type_of(t, x).dtype;
  if ((in == DType::f16 || in == DType::bf16) && type_of(t, ops[1]).dtype == DType::f32) {
    for (ValueId& v : ops) v = cast(t, v, DType::f32);
    return wrap_value(cast(t, node(t, OpKind::BatchNorm, ops, ir::Attrs().set("eps", eps)), in));
  }
  return add(t, OpKind::BatchNorm, ops, ir::Attrs().set("eps", eps));
}

VarRef layer_norm(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "layer_norm");
  VarRef shape = a.get(1, "normalized_shape");
  auto items = sequence_items(t, shape);
  int64_t k = items ? static_cast<int64_t>(items->size()) : 1;
  VarRef weight = a.get(2, "weight"), bias = a.get(3, "bias");
  std::vector<ValueId> ops{x};
  if (!is_none(weight) || !is_none(bias)) {
    const ir::TensorType type = type_of(t, x);
    ir::Shape trailing(type.shape.end() - std::min<int64_t>(k, type.rank()), type.shape.end());
    auto param = [&](const VarRef& v, double fill) {
      if (!is_none(v)) return tensor(t, v, "layer_norm");
      return node(t, OpKind::Full, {}, ir::Attrs().set("shape", trailing).set("value", fill).set("dtype", type.dtype));
    };
    ops.push_back(param(weight, 1.0));
    if (!is_none(bias)) ops.push_back(param(bias, 0.0));
  }
  return add(t, OpKind::LayerNorm, ops,
             ir::Attrs().set("normalized_ndim", k).set("eps", float_or(t, a, 4, "eps", 1e-5)));
}

namespace {

VarRef group_norm_of(Translator& t, ValueId x, int64_t groups, const VarRef& weight, const VarRef& bias, double eps) {
  std::vector<ValueId> ops{x};
  if (!is_none(weight) || !is_none(bias)) {
    const ir::TensorType type = type_of(t, x);
    auto param = [&](const VarRef& v, double fill) {
      if (!is_none(v)) return tensor(t, v, "group_norm");
      return node(t, OpKind::Full, {}, ir::Attrs().set("shape", ir::Shape{type.shape[1]}).set("value", fill).set("dtype", type.dtype));
    };
    ops.push_back(param(weight, 1.0));
    ops.push_back(param(bias, 0.0));
  }
  return add(t, OpKind::GroupNorm, ops, ir::Attrs().set("groups", groups).set("eps", eps));
}

}  // namespace

VarRef group_norm(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "group_norm");
  return group_norm_of(t, x, int_arg(t, a.get(1, "num_groups"), "group_norm"), a.get(2, "weight"),
                       a.get(3, "bias"), float_or(t, a, 4, "eps", 1e-5));
}

// instance_norm with input stats is group_norm with one group per channel; with running stats
// (use_input_stats=False) it is an eval batch_norm.
VarRef instance_norm(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "instance_norm");
  double eps = float_or(t, a, 7, "eps", 1e-5);
  if (!bool_arg(t, a.get(5, "use_input_stats"), true)) {
    CallArgs bn{{a.get(0, "input"), a.get(1, "running_mean"), a.get(2, "running_var"), a.get(3, "weight"), a.get(4, "bias")}, {}};
    PyRef f = PyRef::borrow(Py_False);
    bn.args.push_back(t.constant(f.get()));
    bn.kwargs.emplace_back("eps", t.constant(PyRef::steal(PyFloat_FromDouble(eps)).get()));
    return batch_norm(t, bn);
  }
  auto c = type_of(t, x).shape[1].as_constant();
  if (!c) unsupported(t, "instance_norm with a dynamic channel count");
  return group_norm_of(t, x, *c, a.get(3, "weight"), a.get(4, "bias"), eps);
}

// ---------------------------------------------------------------------------------------------

namespace {

// F.interpolate(mode='nearest-exact'): an index_select along each spatial dim of
// src = min(floor((dst + 0.5) * scale), in - 1), computed as torch's kernel does (the product in
// double, floored in float); scale = float(1 / scale_factor) as given, else float(in) / out.
ValueId nearest_exact(Translator& t, ValueId x, const std::vector<int64_t>& out, const std::vector<double>& given) {
  for (size_t d = 0; d < out.size(); ++d) {
    const int axis = static_cast<int>(d + 2);
    const int64_t in = static_dim(t, x, axis, "interpolate");
    const float scale = given[d] > 0 ? static_cast<float>(1.0 / given[d])
                                     : static_cast<float>(in) / static_cast<float>(out[d]);
    if (in == out[d] && scale == 1.0f) continue;
    ValueId dst = node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{ir::SymExpr(out[d])})
                                                  .set("start", 0.0).set("step", 1.0).set("dtype", DType::f64));
    ValueId half = node(t, OpKind::Add, {dst, constant(t, 0.5, DType::f64)});
    ValueId src = node(t, OpKind::Mul, {half, constant(t, scale, DType::f64)});
    src = cast(t, node(t, OpKind::Floor, {cast(t, src, DType::f32)}), DType::i64);
    src = node(t, OpKind::Minimum, {src, constant(t, static_cast<double>(in - 1), DType::i64)});
    x = node(t, OpKind::IndexSelect, {x, src}, ir::Attrs().set("axis", int64_t{axis}));
  }
  return x;
}

}  // namespace

// F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
VarRef interpolate(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "interpolate");
  const ir::TensorType type = type_of(t, x);
  const int n = type.rank() - 2;
  std::string mode = str_arg(t, a.get(3, "mode"), "interpolate", "nearest");
  // Modes composed here (not by the resize op) take 3 spatial dims too.
  const int max_spatial = mode == "nearest-exact" || mode == "area" ? 3 : 2;
  if (n < 1 || n > max_spatial)
    unsupported(t, "interpolate(mode='" + mode + "') of a rank-" + std::to_string(type.rank()) + " tensor");
  bool align = bool_arg(t, a.get(4, "align_corners"), false);
  if (bool_arg(t, a.get(6, "antialias"), false)) unsupported(t, "interpolate(antialias=True)");
  if (mode == "bilinear" || mode == "linear") {
    if ((mode == "bilinear") != (n == 2)) user_error("interpolate: mode '" + mode + "' does not match a rank-" + std::to_string(type.rank()) + " input", t.loc());
    mode = "linear";
  } else if (mode == "area") {  // adaptive average pooling to the output size
    VarRef size = a.get(1, "size"), scale = a.get(2, "scale_factor");
    std::vector<VarRef> out;
    for (int d = 0; d < n; ++d) {
      const int64_t in = type.shape[static_cast<size_t>(d + 2)].constant();
      int64_t o;
      if (!is_none(size)) {
        auto items = sequence_items(t, size);
        o = int_arg(t, items ? (*items)[static_cast<size_t>(items->size() == 1 ? 0 : d)] : size, "interpolate size");
      } else {
        auto items = sequence_items(t, scale);
        o = static_cast<int64_t>(std::floor(static_cast<double>(in) * float_arg(t, items ? (*items)[static_cast<size_t>(items->size() == 1 ? 0 : d)] : scale, "interpolate scale_factor")));
      }
      PyRef v = PyRef::steal(PyLong_FromLongLong(o));
      out.push_back(t.constant(v.get()));
    }
    return adaptive_avg_pool(t, CallArgs{{a.get(0, "input"), sequence(out)}, {}}, n);
  } else if (mode == "bicubic") {
    if (n != 2) user_error("interpolate: mode 'bicubic' needs a rank-4 input, got rank " + std::to_string(type.rank()), t.loc());
    mode = "cubic";
  } else if (mode != "nearest" && mode != "nearest-exact") {
    unsupported(t, "interpolate(mode='" + mode + "')", "use 'nearest', 'nearest-exact', 'linear', 'bilinear' or 'bicubic'");
  }
  VarRef size = a.get(1, "size"), scale = a.get(2, "scale_factor");
  bool recompute = bool_arg(t, a.get(5, "recompute_scale_factor"), false);
  std::vector<int64_t> out;
  std::vector<double> given;  // the scale_factor the kernel sees (0: none, it uses in / out)
  ir::Attrs attrs;
  for (int d = 0; d < n; ++d) {
    auto in = type.shape[static_cast<size_t>(d + 2)].as_constant();
    if (!in) unsupported(t, "interpolate of a dynamic spatial size");
    double s = 0;
    if (!is_none(size)) {
      auto items = sequence_items(t, size);
      out.push_back(int_arg(t, items ? (*items)[static_cast<size_t>(items->size() == 1 ? 0 : d)] : size, "interpolate size"));
    } else {
      auto items = sequence_items(t, scale);
      s = float_arg(t, items ? (*items)[static_cast<size_t>(items->size() == 1 ? 0 : d)] : scale, "interpolate scale_factor");
      out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(*in) * s)));
    }
    if (out.back() < 1) user_error("interpolate: output sizes must be positive (torch raises here too)", t.loc());
    given.push_back(s > 0 && !recompute ? s : 0.0);
    attrs.set("scale" + std::to_string(d),
              given.back() > 0 ? 1.0 / given.back() : static_cast<double>(*in) / static_cast<double>(out.back()));
  }
  if (mode == "nearest-exact") return wrap_value(nearest_exact(t, x, out, given));
  attrs.set("mode", mode).set("size", out).set("align_corners", int64_t{align});
  return add(t, OpKind::Resize, {x}, attrs);
}

}  // namespace aotrace::embed::ops
