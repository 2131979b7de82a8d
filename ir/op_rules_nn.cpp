// Shape and type rules of the neural-network ops: conv, conv_transpose, pool, clamp, var, the
// normalisations, resize and adaptive_avg_pool (the `infer` column of ops.cpp for them).
// Tested by tests/unit/ir/shape_rules_ops_test.cpp.
#include "ir/ir.h"
#include "ir/ir_private.h"
#include "ir/winograd.h"

namespace aotrace::ir {
namespace {

using Types = std::span<const TensorType>;

std::string all_str(Types t) {
  std::string s;
  for (const auto& o : t) s += (s.empty() ? "" : ", ") + o.str();
  return s;
}

void check_same_dtype(std::string_view op, Types t) {
  for (const auto& o : t)
    if (o.dtype != t[0].dtype)
      user_error(prefix(op) + "operands have different dtypes (" + all_str(t) + ")", {},
                 "cast them to one dtype");
}

// x [N, C, *spatial] with 1 or 2 spatial dims; returns the spatial rank.
int spatial_rank(std::string_view op, const TensorType& x) {
  if (x.rank() != 3 && x.rank() != 4)
    user_error(prefix(op) + "expects [N, C, L] or [N, C, H, W], got " + x.str(), {},
               "add the batch dim with unsqueeze(0)");
  return x.rank() - 2;
}

const std::vector<int64_t>& per_dim(std::string_view op, const Attrs& attrs, const char* key,
                                    int n) {
  const auto& v = attrs.ints(key);
  if (static_cast<int>(v.size()) != n)
    internal_error(prefix(op) + "attr " + key + " needs " + std::to_string(n) + " entries");
  return v;
}

void check_channel_param(std::string_view op, const TensorType& p, const SymExpr& c,
                         const char* what) {
  if (p.rank() != 1 || !(p.shape[0] == c))
    user_error(prefix(op) + what + " " + p.str() + " must have one entry per channel (" + c.str() +
               ")");
}

}  // namespace

InferFn infer_conv() {
  return [](Types t, const Attrs& attrs) {
    if (t.size() != 2 && t.size() != 3) internal_error("conv takes 2 or 3 operands");
    check_same_device("conv", t);
    check_same_dtype("conv", t);
    const TensorType &x = t[0], &w = t[1];
    check_floating("conv", x);
    int n = spatial_rank("conv", x);
    if (w.rank() != n + 2)
      user_error("conv: weight " + w.str() + " does not match input " + x.str());
    int64_t groups = attrs.i("groups");
    const auto& stride = per_dim("conv", attrs, "stride", n);
    const auto& dilation = per_dim("conv", attrs, "dilation", n);
    const auto& low = per_dim("conv", attrs, "pad_low", n);
    const auto& high = per_dim("conv", attrs, "pad_high", n);
    if (groups < 1) user_error("conv: groups must be positive");
    if (!(w.shape[1] * groups == x.shape[1]))
      user_error("conv: input " + x.str() + " has " + x.shape[1].str() + " channels, weight " +
                 w.str() + " with groups=" + std::to_string(groups) + " expects " +
                 (w.shape[1] * groups).str());
    if (auto o = w.shape[0].as_constant(); o && *o % groups != 0)
      user_error("conv: out channels " + std::to_string(*o) + " not divisible by groups " +
                 std::to_string(groups));
    if (t.size() == 3) check_channel_param("conv", t[2], w.shape[0], "bias");
    TensorType r{x.dtype, x.device, {x.shape[0], w.shape[0]}};
    for (int d = 0; d < n; ++d) {
      size_t i = static_cast<size_t>(d);
      if (stride[i] < 1 || dilation[i] < 1) user_error("conv: stride and dilation must be positive");
      SymExpr span = SymExpr(dilation[i]) * (w.shape[i + 2] - 1) + 1;
      SymExpr padded = x.shape[i + 2] + low[i] + high[i];
      if (auto c = (padded - span).as_constant(); c && *c < 0)
        user_error("conv: kernel " + w.str() + " is larger than the padded input " + x.str());
      r.shape.push_back(floordiv(padded - span, stride[i]) + 1);
    }
    return std::vector<TensorType>{r};
  };
}

// The Winograd transforms (ops.def): made by lowering on static f32 shapes only, so a
// mismatch is a bug in the pass, not the user's.
namespace {
// Output tiles of the transform's attrs (tile m and out).
int64_t winograd_tiles(const char* op, const Attrs& attrs) {
  const int64_t m = attrs.i("tile");
  if (m != 2 && m != 4) internal_error(std::string(op) + " takes tile 2 or 4, got " + std::to_string(m));
  const auto& out = per_dim(op, attrs, "out", 2);
  return winograd::tiles(out[0], m) * winograd::tiles(out[1], m);
}
}  // namespace

InferFn infer_winograd_input() {
  return [](Types t, const Attrs& attrs) {
    const TensorType& x = t[0];
    auto dims = x.static_shape();
    if (x.rank() != 4 || !dims || x.dtype != DType::f32)
      internal_error("winograd_input takes a static f32 [N, C, H, W], got " + x.str());
    per_dim("winograd_input", attrs, "pad_low", 2);
    const int64_t tiles = winograd_tiles("winograd_input", attrs);
    const int64_t points = winograd::transform(attrs.i("tile")).points();
    return std::vector<TensorType>{{x.dtype, x.device, {points, (*dims)[1], (*dims)[0] * tiles}}};
  };
}

InferFn infer_winograd_output() {
  return [](Types t, const Attrs& attrs) {
    const TensorType& m = t[0];
    auto dims = m.static_shape();
    const int64_t tiles = winograd_tiles("winograd_output", attrs);
    const int64_t points = winograd::transform(attrs.i("tile")).points();
    const auto& out = attrs.ints("out");
    if (m.rank() != 3 || !dims || m.dtype != DType::f32 || (*dims)[0] != points || tiles < 1 || (*dims)[2] % tiles != 0)
      internal_error("winograd_output takes a static f32 [" + std::to_string(points) + ", O, N·tiles], got " + m.str());
    return std::vector<TensorType>{{m.dtype, m.device, {(*dims)[2] / tiles, (*dims)[1], out[0], out[1]}}};
  };
}

// out = (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
InferFn infer_conv_transpose() {
  return [](Types t, const Attrs& attrs) {
    if (t.size() != 2 && t.size() != 3) internal_error("conv_transpose takes 2 or 3 operands");
    check_same_device("conv_transpose", t);
    check_same_dtype("conv_transpose", t);
    const TensorType &x = t[0], &w = t[1];
    check_floating("conv_transpose", x);
    int n = spatial_rank("conv_transpose", x);
    int64_t groups = attrs.i("groups");
    if (w.rank() != n + 2 || !(w.shape[0] == x.shape[1]))
      user_error("conv_transpose: weight " + w.str() + " does not match input " + x.str());
    const auto& stride = per_dim("conv_transpose", attrs, "stride", n);
    const auto& dilation = per_dim("conv_transpose", attrs, "dilation", n);
    const auto& padding = per_dim("conv_transpose", attrs, "padding", n);
    const auto& out_pad = per_dim("conv_transpose", attrs, "output_padding", n);
    if (groups < 1) user_error("conv_transpose: groups must be positive");
    if (auto c = x.shape[1].as_constant(); c && *c % groups != 0)
      user_error("conv_transpose: in channels not divisible by groups");
    SymExpr out_channels = w.shape[1] * groups;
    if (t.size() == 3) check_channel_param("conv_transpose", t[2], out_channels, "bias");
    TensorType r{x.dtype, x.device, {x.shape[0], out_channels}};
    for (int d = 0; d < n; ++d) {
      size_t i = static_cast<size_t>(d);
      if (out_pad[i] >= stride[i] && out_pad[i] >= dilation[i])
        user_error("conv_transpose: output_padding must be smaller than stride or dilation");
      r.shape.push_back((x.shape[i + 2] - 1) * stride[i] - 2 * padding[i] +
                        SymExpr(dilation[i]) * (w.shape[i + 2] - 1) + out_pad[i] + 1);
    }
    return std::vector<TensorType>{r};
  };
}

InferFn infer_pool() {
  return [](Types t, const Attrs& attrs) {
    const TensorType& x = t[0];
    int n = spatial_rank("pool", x);
    const std::string& kind = attrs.s("kind");
    if (kind != "max" && kind != "avg") internal_error("pool: kind must be max or avg");
    const auto& kernel = per_dim("pool", attrs, "kernel", n);
    const auto& stride = per_dim("pool", attrs, "stride", n);
    const auto& padding = per_dim("pool", attrs, "padding", n);
    const auto& dilation = per_dim("pool", attrs, "dilation", n);
    bool ceil_mode = flag(attrs, "ceil_mode");
    if (kind == "avg") check_floating("avg_pool", x);
    TensorType r = x;
    for (int d = 0; d < n; ++d) {
      size_t i = static_cast<size_t>(d);
      if (kernel[i] < 1 || stride[i] < 1 || dilation[i] < 1)
        user_error("pool: kernel, stride and dilation must be positive");
      if (padding[i] < 0 || padding[i] * 2 > kernel[i])
        user_error("pool: padding " + std::to_string(padding[i]) +
                   " should be at most half the kernel size " + std::to_string(kernel[i]));
      SymExpr in = x.shape[i + 2];
      SymExpr span = in + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1;
      if (auto c = span.as_constant(); c && *c < 0)
        user_error("pool: the window is larger than the padded input " + x.str());
      SymExpr out = floordiv(span + (ceil_mode ? stride[i] - 1 : 0), stride[i]) + 1;
      if (ceil_mode) {
        auto o = out.as_constant();
        auto c = in.as_constant();
        if (!o || !c)
          user_error("pool: ceil_mode=True needs static spatial sizes, got " + x.str());
        if ((*o - 1) * stride[i] >= *c + padding[i]) out = *o - 1;  // window starts in padding
      }
      r.shape[i + 2] = out;
    }
    return std::vector<TensorType>{r};
  };
}

InferFn infer_clamp() {
  return [](Types t, const Attrs& attrs) {
    if (t[0].dtype == DType::b8) user_error("clamp: not defined for bool tensors");
    return std::vector<TensorType>{t[0]};
  };
}

InferFn infer_var() {
  return [](Types t, const Attrs& attrs) {
    check_floating("var", t[0]);
    check_axes("var", t[0], attrs.ints("axes"));
    attrs.i("correction");
    TensorType r = t[0];
    r.shape = reduced_shape(t[0].shape, attrs.ints("axes"), flag(attrs, "keepdim"));
    return std::vector<TensorType>{r};
  };
}

InferFn infer_layer_norm() {
  return [](Types t, const Attrs& attrs) {
    if (t.empty() || t.size() > 3) internal_error("layer_norm takes 1 to 3 operands");
    check_same_device("layer_norm", t);
    check_same_dtype("layer_norm", t);
    const TensorType& x = t[0];
    check_floating("layer_norm", x);
    int64_t k = attrs.i("normalized_ndim");
    attrs.f("eps");
    if (k < 1 || k > x.rank())
      user_error("layer_norm: cannot normalise the last " + std::to_string(k) + " dims of " +
                 x.str());
    Shape trailing(x.shape.end() - k, x.shape.end());
    for (size_t i = 1; i < t.size(); ++i)
      if (!(t[i].shape == trailing))
        user_error("layer_norm: weight/bias " + t[i].str() + " must have shape " +
                   shape_str(trailing) + " (the normalised dims of " + x.str() + ")");
    return std::vector<TensorType>{x};
  };
}

InferFn infer_group_norm() {
  return [](Types t, const Attrs& attrs) {
    if (t.size() != 1 && t.size() != 3) internal_error("group_norm takes 1 or 3 operands");
    check_same_device("group_norm", t);
    check_same_dtype("group_norm", t);
    const TensorType& x = t[0];
    check_floating("group_norm", x);
    if (x.rank() < 2) user_error("group_norm: expects [N, C, *], got " + x.str());
    int64_t groups = attrs.i("groups");
    attrs.f("eps");
    auto c = x.shape[1].as_constant();
    if (groups < 1 || (c && *c % groups != 0))
      user_error("group_norm: " + x.shape[1].str() + " channels are not divisible into " +
                 std::to_string(groups) + " groups");
    for (size_t i = 1; i < t.size(); ++i) check_channel_param("group_norm", t[i], x.shape[1], "weight/bias");
    return std::vector<TensorType>{x};
  };
}

InferFn infer_batch_norm() {
  return [](Types t, const Attrs& attrs) {
    if (t.size() != 3 && t.size() != 5) internal_error("batch_norm takes 3 or 5 operands");
    check_same_device("batch_norm", t);
    check_same_dtype("batch_norm", t);
    const TensorType& x = t[0];
    check_floating("batch_norm", x);
    if (x.rank() < 2) user_error("batch_norm: expects [N, C, *], got " + x.str());
    attrs.f("eps");
    for (size_t i = 1; i < t.size(); ++i)
      check_channel_param("batch_norm", t[i], x.shape[1], "running stats/weight/bias");
    return std::vector<TensorType>{x};
  };
}

InferFn infer_resize() {
  return [](Types t, const Attrs& attrs) {
    const TensorType& x = t[0];
    int n = spatial_rank("interpolate", x);
    const std::string& mode = attrs.s("mode");
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      internal_error("resize: mode must be nearest, linear or cubic");
    if (mode != "nearest") check_floating("interpolate", x);
    const auto& size = per_dim("resize", attrs, "size", n);
    TensorType r = x;
    for (int d = 0; d < n; ++d) {
      if (size[static_cast<size_t>(d)] < 1) user_error("interpolate: output sizes must be positive");
      attrs.f("scale" + std::to_string(d));
      r.shape[static_cast<size_t>(d + 2)] = size[static_cast<size_t>(d)];
    }
    return std::vector<TensorType>{r};
  };
}

InferFn infer_adaptive_avg_pool() {
  return [](Types t, const Attrs& attrs) {
    const TensorType& x = t[0];
    int n = spatial_rank("adaptive_avg_pool", x);
    check_floating("adaptive_avg_pool", x);
    const auto& size = per_dim("adaptive_avg_pool", attrs, "size", n);
    TensorType r = x;
    for (int d = 0; d < n; ++d) {
      // Global pooling (output 1) is a mean, for any size; other outputs need the input's.
      if (!x.shape[static_cast<size_t>(d + 2)].is_constant() && size[static_cast<size_t>(d)] != 1)
        user_error("adaptive_avg_pool: an output size other than 1 needs static spatial sizes, got " + x.str(),
                   {}, "declare the dim static");
      if (size[static_cast<size_t>(d)] < 1) user_error("adaptive_avg_pool: output sizes must be positive");
      r.shape[static_cast<size_t>(d + 2)] = size[static_cast<size_t>(d)];
    }
    return std::vector<TensorType>{r};
  };
}

}  // namespace aotrace::ir
