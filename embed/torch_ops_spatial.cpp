// Builders of the torch op table for the spatial ops the IR has no op of its own for, each
// decomposed into the 1-D / 2-D conv and pool ops and movement: conv3d (the depth taps stacked
// into channels of one conv2d over depth-folded batches), max_pool3d / avg_pool3d (separable:
// a 2-D pool over height and width, then a 1-D pool over depth), F.unfold (im2col: the kernel
// taps as strided slices) and F.fold (col2im: each tap zero-inserted, placed by padding, summed).
#include <cmath>

#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

using S = ir::SymExpr;

ValueId slice_of(Translator& t, ValueId x, int axis, int64_t start, int64_t end, int64_t step = 1) {
  return node(t, OpKind::Slice, {x}, ir::Attrs().set("axis", int64_t{axis}).set("start", start).set("end", end).set("step", step));
}

ValueId pad_dims(Translator& t, ValueId x, const std::vector<std::pair<int, std::pair<int64_t, int64_t>>>& pads) {
  std::vector<int64_t> low(static_cast<size_t>(type_of(t, x).rank()), 0), high = low;
  bool any = false;
  for (auto [axis, lh] : pads) {
    low[static_cast<size_t>(axis)] = lh.first, high[static_cast<size_t>(axis)] = lh.second;
    any = any || lh.first != 0 || lh.second != 0;
  }
  return any ? node(t, OpKind::Pad, {x}, ir::Attrs().set("low", low).set("high", high).set("value", 0.0)) : x;
}

std::vector<int64_t> triple(Translator& t, const VarRef& v, int64_t fallback, const char* what) {
  if (is_none(v)) return std::vector<int64_t>(3, fallback);
  return int_tuple(t, v, 3, what);
}

int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t total_pad) {
  return (in + total_pad - dilation * (k - 1) - 1) / stride + 1;
}

ValueId unbatch(Translator& t, ValueId v, bool added) {
  if (!added) return v;
  ir::Shape s = type_of(t, v).shape;
  s.erase(s.begin());
  return reshape_to(t, v, s);
}

}  // namespace

// torch.conv3d / F.conv3d(input, weight, bias, stride, padding (ints | 'same' | 'valid'),
// dilation, groups) of x [N, C, D, H, W]: depth padded, the kd depth taps (strided slices)
// stacked into channels, group-major, and convolved in 2-D with the weight reordered to match.
VarRef conv3d(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "conv3d"), w = tensor(t, a.get(1, "weight"), "conv3d");
  const bool added = type_of(t, x).rank() == 4;
  if (added) x = unsqueeze_at(t, x, 0);
  if (type_of(t, x).rank() != 5 || type_of(t, w).rank() != 5) user_error("conv3d: expects a 5-D input and weight", t.loc());
  const auto stride = triple(t, a.get(3, "stride"), 1, "conv3d stride"), dilation = triple(t, a.get(5, "dilation"), 1, "conv3d dilation");
  const int64_t groups = int_or(t, a, 6, "groups", 1);
  std::vector<int64_t> k(3), low(3, 0), high(3, 0);
  for (int d = 0; d < 3; ++d) k[static_cast<size_t>(d)] = static_dim(t, w, d + 2, "conv3d");
  VarRef padding = a.get(4, "padding");
  PyRef p = is_none(padding) ? PyRef() : t.to_python(padding);
  if (p && PyUnicode_Check(p.get())) {
    const std::string mode = py_str(p.get());
    if (mode != "same" && mode != "valid") user_error("conv3d: padding must be 'same', 'valid' or ints, got '" + mode + "'", t.loc());
    for (size_t d = 0; mode == "same" && d < 3; ++d) {
      const int64_t total = dilation[d] * (k[d] - 1);
      low[d] = total / 2, high[d] = total - total / 2;
    }
  } else if (p) {
    low = high = int_tuple(t, padding, 3, "conv3d padding");
  }
  const int64_t c = static_dim(t, x, 1, "conv3d"), depth = static_dim(t, x, 2, "conv3d");
  const int64_t out_d = out_size(depth, k[0], stride[0], dilation[0], low[0] + high[0]);
  if (out_d <= 0 || c % groups != 0) user_error("conv3d: the input is too small for the kernel, or channels do not split into groups", t.loc());
  const ir::Shape xs = type_of(t, x).shape;
  ValueId xp = pad_dims(t, x, {{2, {low[0], high[0]}}});
  std::vector<ValueId> taps;
  for (int64_t i = 0; i < k[0]; ++i) {
    const int64_t start = i * dilation[0];
    taps.push_back(unsqueeze_at(t, slice_of(t, xp, 2, start, start + (out_d - 1) * stride[0] + 1, stride[0]), 2));
  }
  ValueId stacked = taps.size() == 1 ? taps[0] : node(t, OpKind::Concat, taps, ir::Attrs().set("axis", int64_t{2}));
  // [N, C, kd, Do, H, W] -> [N, Do, kd, g, C/g, H, W] -> [N * Do, g * kd * C/g, H, W].
  ValueId moved = permute_to(t, stacked, {0, 3, 2, 1, 4, 5});
  moved = reshape_to(t, moved, {xs[0], S(out_d), S(k[0]), S(groups), S(c / groups), xs[3], xs[4]});
  moved = permute_to(t, moved, {0, 1, 3, 2, 4, 5, 6});
  ValueId folded = reshape_to(t, moved, {xs[0] * S(out_d), S(c * k[0]), xs[3], xs[4]});
  // weight [O, C/g, kd, kh, kw] -> [O, kd * C/g, kh, kw], kd major as the channels above.
  const ir::Shape ws = type_of(t, w).shape;
  ValueId w2 = reshape_to(t, permute_to(t, w, {0, 2, 1, 3, 4}), {ws[0], S(k[0]) * ws[1], ws[3], ws[4]});
  std::vector<ValueId> operands{folded, w2};
  if (VarRef b = a.get(2, "bias"); !is_none(b)) operands.push_back(tensor(t, b, "conv3d"));
  ir::Attrs attrs;
  attrs.set("stride", std::vector<int64_t>{stride[1], stride[2]}).set("dilation", std::vector<int64_t>{dilation[1], dilation[2]})
      .set("pad_low", std::vector<int64_t>{low[1], low[2]}).set("pad_high", std::vector<int64_t>{high[1], high[2]}).set("groups", groups);
  ValueId y = node(t, OpKind::Conv, operands, attrs);  // [N * Do, O, Ho, Wo]
  const ir::Shape ys = type_of(t, y).shape;
  y = permute_to(t, reshape_to(t, y, {xs[0], S(out_d), ys[1], ys[2], ys[3]}), {0, 2, 1, 3, 4});
  return wrap_value(unbatch(t, y, added));
}

// F.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices) and
// F.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override): a window's max is the max over depth of the max over height and width;
// its average likewise (torch's divisor is the product of per-dim window sizes).
VarRef pool3d(Translator& t, const CallArgs& a, bool max) {
  const char* what = max ? "max_pool3d" : "avg_pool3d";
  ValueId x = tensor(t, a.get(0, "input"), what);
  const bool added = type_of(t, x).rank() == 4;
  if (added) x = unsqueeze_at(t, x, 0);
  if (type_of(t, x).rank() != 5) user_error(std::string(what) + ": expects a 4-D or 5-D input", t.loc());
  const auto kernel = int_tuple(t, a.get(1, "kernel_size"), 3, what);
  VarRef sv = a.get(2, "stride");
  auto items = sequence_items(t, sv);
  const auto stride = is_none(sv) || (items && items->empty()) ? kernel : int_tuple(t, sv, 3, what);
  const auto padding = triple(t, a.get(3, "padding"), 0, what);
  const auto dilation = max ? triple(t, a.get(4, "dilation"), 1, what) : std::vector<int64_t>(3, 1);
  const bool ceil_mode = bool_arg(t, a.get(max ? 5 : 4, "ceil_mode"), false);
  if (max && bool_arg(t, a.get(6, "return_indices"), false)) unsupported(t, "max_pool3d(return_indices=True)");
  if (!max && !is_none(a.get(6, "divisor_override"))) unsupported(t, "avg_pool3d with divisor_override");
  const int64_t include_pad = max ? 0 : bool_arg(t, a.get(5, "count_include_pad"), true);
  auto pool = [&](ValueId v, size_t from, size_t n) {
    auto part = [&](const std::vector<int64_t>& all) { return std::vector<int64_t>(all.begin() + static_cast<long>(from), all.begin() + static_cast<long>(from + n)); };
    ir::Attrs attrs;
    attrs.set("kind", std::string(max ? "max" : "avg")).set("kernel", part(kernel)).set("stride", part(stride))
        .set("padding", part(padding)).set("dilation", part(dilation)).set("ceil_mode", int64_t{ceil_mode})
        .set("count_include_pad", include_pad);
    return node(t, OpKind::Pool, {v}, attrs);
  };
  const ir::Shape xs = type_of(t, x).shape;
  ValueId hw = pool(reshape_to(t, x, {xs[0], xs[1] * xs[2], xs[3], xs[4]}), 1, 2);  // [N, C * D, Ho, Wo]
  const ir::SymExpr ho = type_of(t, hw).shape[2], wo = type_of(t, hw).shape[3];
  ValueId along = permute_to(t, reshape_to(t, hw, {xs[0], xs[1], xs[2], ho * wo}), {0, 1, 3, 2});
  ValueId d = pool(reshape_to(t, along, {xs[0], xs[1] * ho * wo, xs[2]}), 0, 1);  // [N, C * Ho * Wo, Do]
  const ir::SymExpr dout = type_of(t, d).shape[2];
  ValueId y = permute_to(t, reshape_to(t, d, {xs[0], xs[1], ho, wo, dout}), {0, 1, 4, 2, 3});
  return wrap_value(unbatch(t, y, added));
}

namespace {

// The sliding window of im2col / col2im, bound by their schemas' names (two ints each).
struct Window {
  std::vector<int64_t> kernel, dilation, padding, stride;
};

Window window_args(Translator& t, const CallArgs& a, const char* what) {
  return {int_tuple(t, a.kw("kernel_size"), 2, what), int_tuple(t, a.kw("dilation"), 2, what),
          int_tuple(t, a.kw("padding"), 2, what), int_tuple(t, a.kw("stride"), 2, what)};
}

}  // namespace

// torch._C._nn.im2col(self, kernel_size, dilation, padding, stride) (F.unfold) of x [N, C, H, W]:
// [N, C * kh * kw, Ho * Wo], channel c * kh * kw + i * kw + j holding tap (i, j).
VarRef im2col(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::im2col", call);
  ValueId x = tensor(t, a.kw("self"), "unfold");
  const bool added = type_of(t, x).rank() == 3;
  if (added) x = unsqueeze_at(t, x, 0);
  if (type_of(t, x).rank() != 4) user_error("unfold: expects a 3-D or 4-D input (torch raises here too)", t.loc());
  const Window w = window_args(t, a, "unfold");
  const auto &k = w.kernel, &dil = w.dilation, &pad = w.padding, &stride = w.stride;
  std::vector<int64_t> out(2);
  for (int d = 0; d < 2; ++d) {
    const size_t i = static_cast<size_t>(d);
    out[i] = out_size(static_dim(t, x, d + 2, "unfold"), k[i], stride[i], dil[i], 2 * pad[i]);
    if (out[i] <= 0) user_error("unfold: the input is too small for the kernel (torch raises here too)", t.loc());
  }
  ValueId xp = pad_dims(t, x, {{2, {pad[0], pad[0]}}, {3, {pad[1], pad[1]}}});
  std::vector<ValueId> taps;
  for (int64_t i = 0; i < k[0]; ++i)
    for (int64_t j = 0; j < k[1]; ++j) {
      ValueId v = slice_of(t, xp, 2, i * dil[0], i * dil[0] + (out[0] - 1) * stride[0] + 1, stride[0]);
      v = slice_of(t, v, 3, j * dil[1], j * dil[1] + (out[1] - 1) * stride[1] + 1, stride[1]);
      taps.push_back(unsqueeze_at(t, v, 2));
    }
  ValueId stacked = taps.size() == 1 ? taps[0] : node(t, OpKind::Concat, taps, ir::Attrs().set("axis", int64_t{2}));
  const ir::Shape xs = type_of(t, x).shape;
  ValueId r = reshape_to(t, stacked, {xs[0], xs[1] * S(k[0] * k[1]), S(out[0] * out[1])});
  return wrap_value(unbatch(t, r, added));
}

// torch._C._nn.col2im(self, output_size, kernel_size, dilation, padding, stride) (F.fold) of
// x [N, C * kh * kw, L]: [N, C, H, W], the sum of every tap's block placed at its window offsets.
VarRef col2im(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::col2im", call);
  ValueId x = tensor(t, a.kw("self"), "fold");
  const bool added = type_of(t, x).rank() == 2;
  if (added) x = unsqueeze_at(t, x, 0);
  if (type_of(t, x).rank() != 3) user_error("fold: expects a 2-D or 3-D input (torch raises here too)", t.loc());
  const auto size = int_tuple(t, a.kw("output_size"), 2, "fold");
  const Window w = window_args(t, a, "fold");
  const auto &k = w.kernel, &dil = w.dilation, &pad = w.padding, &stride = w.stride;
  const int64_t taps = k[0] * k[1], channels = static_dim(t, x, 1, "fold");
  std::vector<int64_t> out(2);
  for (size_t i = 0; i < 2; ++i) out[i] = out_size(size[i], k[i], stride[i], dil[i], 2 * pad[i]);
  if (channels % taps != 0 || out[0] <= 0 || out[1] <= 0 || static_dim(t, x, 2, "fold") != out[0] * out[1])
    user_error("fold: the input's shape does not match kernel_size and output_size (torch raises here too)", t.loc());
  const ir::SymExpr n = type_of(t, x).shape[0];
  const int64_t c = channels / taps;
  ValueId blocks = reshape_to(t, x, {n, S(c), S(k[0]), S(k[1]), S(out[0]), S(out[1])});
  const int64_t ph = size[0] + 2 * pad[0], pw = size[1] + 2 * pad[1];
  ValueId total{};
  bool first = true;
  for (int64_t i = 0; i < k[0]; ++i)
    for (int64_t j = 0; j < k[1]; ++j) {
      ValueId v = reshape_to(t, slice_of(t, slice_of(t, blocks, 2, i, i + 1), 3, j, j + 1), {n, S(c), S(out[0]), S(out[1])});
      // Zero insertion for the stride: each row / column followed by stride - 1 zeros.
      for (int d = 0; d < 2; ++d) {
        const size_t di = static_cast<size_t>(d);
        if (stride[di] == 1) continue;
        ir::Shape s = type_of(t, v).shape;
        ValueId u = pad_dims(t, unsqueeze_at(t, v, d + 3), {{d + 3, {0, stride[di] - 1}}});
        s[di + 2] = s[di + 2] * S(stride[di]);
        v = reshape_to(t, u, s);
      }
      const int64_t r0 = i * dil[0], c0 = j * dil[1];
      v = pad_dims(t, v, {{2, {r0, ph - r0 - out[0] * stride[0]}}, {3, {c0, pw - c0 - out[1] * stride[1]}}});
      total = first ? v : node(t, OpKind::Add, {total, v});
      first = false;
    }
  total = pad_dims(t, total, {{2, {-pad[0], -pad[0]}}, {3, {-pad[1], -pad[1]}}});
  return wrap_value(unbatch(t, total, added));
}

}  // namespace aotrace::embed::ops
