// Decompositions of F.interpolate (resize: nearest, linear/bilinear, bicubic) and adaptive_avg_pool into
// primitives: index tensors and weights are computed in the graph from arange, then applied
// with index_select (resize) or matmul by an averaging matrix (adaptive_avg_pool). Shapes are
// static, so lowering's constant folding can turn the index arithmetic into constants.
#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

using Operands = std::span<const int32_t>;

// Weights [out] shaped to broadcast along spatial axis `axis` of a rank-`rank` tensor.
ValueId along(Emit& e, ValueId w, int64_t out, int64_t axis, int rank) {
  Shape s{out};
  for (int64_t i = axis + 1; i < rank; ++i) s.push_back(1);
  return e.reshape(w, s);
}

// Nearest (torch's legacy "nearest"): src = min(floor(dst * scale), in - 1), in float32.
ValueId resize_nearest(Emit& e, ValueId x, int64_t axis, int64_t in, int64_t out, double scale) {
  ValueId dst = e.cast(e.arange(out, DType::i64), DType::f32);
  ValueId src = e.op(OpKind::Floor, {e.op(OpKind::Mul, {dst, e.c(scale, DType::f32)})});
  src = e.op(OpKind::Minimum, {e.cast(src, DType::i64), e.c(static_cast<double>(in - 1), DType::i64)});
  return e.select(x, src, axis);
}

// torch's area_pixel_compute_source_index: the source position of each of `out` positions,
// clamped at 0 for linear (not for cubic).
ValueId source_index(Emit& e, int64_t in, int64_t out, double scale, bool align_corners, DType dt, bool clamp) {
  ValueId dst = e.cast(e.arange(out, DType::i64), dt);
  if (align_corners) {
    double s = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    return e.op(OpKind::Mul, {dst, e.c(s, dt)});
  }
  ValueId src = e.op(OpKind::Sub, {e.op(OpKind::Mul, {e.op(OpKind::Add, {dst, e.c(0.5, dt)}), e.c(scale, dt)}), e.c(0.5, dt)});
  return clamp ? e.op(OpKind::Maximum, {src, e.c(0, dt)}) : src;
}

// Linear along one axis (torch's upsample_linear/bilinear source index and lambdas).
ValueId resize_linear(Emit& e, ValueId x, int64_t axis, int64_t in, int64_t out, double scale,
                      bool align_corners) {
  const TensorType t = e.g.type(x);
  DType dt = t.dtype;
  ValueId src = source_index(e, in, out, scale, align_corners, dt, true);
  ValueId i0 = e.cast(e.op(OpKind::Floor, {src}), DType::i64);
  i0 = e.op(OpKind::Minimum, {i0, e.c(static_cast<double>(in - 1), DType::i64)});
  ValueId i1 = e.op(OpKind::Minimum, {e.op(OpKind::Add, {i0, e.c(1, DType::i64)}),
                                      e.c(static_cast<double>(in - 1), DType::i64)});
  ValueId l1 = e.op(OpKind::Sub, {src, e.cast(i0, dt)});
  ValueId l0 = e.op(OpKind::Sub, {e.c(1, dt), l1});
  int rank = t.rank();
  ValueId a = e.op(OpKind::Mul, {e.select(x, i0, axis), along(e, l0, out, axis, rank)});
  ValueId b = e.op(OpKind::Mul, {e.select(x, i1, axis), along(e, l1, out, axis, rank)});
  return e.op(OpKind::Add, {a, b});
}

// Cubic along one axis (torch's upsample_bicubic2d, A = -0.75, separable): four taps at
// floor(src) - 1 .. + 2, clamped to the input, weighted by the cubic convolution kernel.
ValueId resize_cubic(Emit& e, ValueId x, int64_t axis, int64_t in, int64_t out, double scale, bool align_corners) {
  const TensorType t = e.g.type(x);
  DType dt = t.dtype;
  ValueId src = source_index(e, in, out, scale, align_corners, dt, false);
  ValueId floor = e.op(OpKind::Floor, {src});
  ValueId frac = e.op(OpKind::Sub, {src, floor});
  ValueId base = e.cast(floor, DType::i64);
  const double A = -0.75;
  // cubic1(v) = ((A + 2) v - (A + 3)) v² + 1 for |v| <= 1; cubic2(v) = ((A v - 5A) v + 8A) v - 4A for 1 < |v| < 2.
  auto cubic1 = [&](ValueId v) {
    ValueId p = e.op(OpKind::Sub, {e.op(OpKind::Mul, {e.c(A + 2, dt), v}), e.c(A + 3, dt)});
    return e.op(OpKind::Add, {e.op(OpKind::Mul, {e.op(OpKind::Mul, {p, v}), v}), e.c(1, dt)});
  };
  auto cubic2 = [&](ValueId v) {
    ValueId p = e.op(OpKind::Sub, {e.op(OpKind::Mul, {e.c(A, dt), v}), e.c(5 * A, dt)});
    p = e.op(OpKind::Add, {e.op(OpKind::Mul, {p, v}), e.c(8 * A, dt)});
    return e.op(OpKind::Sub, {e.op(OpKind::Mul, {p, v}), e.c(4 * A, dt)});
  };
  ValueId rest = e.op(OpKind::Sub, {e.c(1, dt), frac});
  const ValueId weights[4] = {cubic2(e.op(OpKind::Add, {frac, e.c(1, dt)})), cubic1(frac), cubic1(rest),
                              cubic2(e.op(OpKind::Add, {rest, e.c(1, dt)}))};
  const int rank = t.rank();
  ValueId sum = -1;
  for (int k = 0; k < 4; ++k) {
    ValueId i = e.op(OpKind::Add, {base, e.c(static_cast<double>(k - 1), DType::i64)});
    i = e.op(OpKind::Minimum, {e.op(OpKind::Maximum, {i, e.c(0, DType::i64)}), e.c(static_cast<double>(in - 1), DType::i64)});
    ValueId term = e.op(OpKind::Mul, {e.select(x, i, axis), along(e, weights[k], out, axis, rank)});
    sum = sum < 0 ? term : e.op(OpKind::Add, {sum, term});
  }
  return sum;
}

// P [out, in]: P[i, j] = 1 / (end_i - start_i) for start_i <= j < end_i, start_i =
// floor(i * in / out), end_i = ceil((i + 1) * in / out) (torch's adaptive windows).
ValueId averaging_matrix(Emit& e, int64_t in, int64_t out, DType dt) {
  ValueId i = e.reshape(e.arange(out, DType::i64), Shape{out, 1});
  ValueId cin = e.c(static_cast<double>(in), DType::i64), cout = e.c(static_cast<double>(out), DType::i64);
  ValueId start = e.op(OpKind::FloorDiv, {e.op(OpKind::Mul, {i, cin}), cout});
  ValueId next = e.op(OpKind::Mul, {e.op(OpKind::Add, {i, e.c(1, DType::i64)}), cin});
  ValueId end = e.op(OpKind::FloorDiv, {e.op(OpKind::Add, {next, e.c(static_cast<double>(out - 1), DType::i64)}), cout});
  ValueId j = e.arange(in, DType::i64);
  ValueId inside = e.op(OpKind::And, {e.op(OpKind::Ge, {j, start}), e.op(OpKind::Lt, {j, end})});
  ValueId count = e.cast(e.op(OpKind::Sub, {end, start}), dt);
  return e.op(OpKind::Div, {e.cast(inside, dt), count});
}

}  // namespace

DecomposeFn decompose_resize() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const TensorType t = g.type(in[0]);
    const auto& size = attrs.ints("size");
    const bool nearest = attrs.s("mode") == "nearest";
    const bool align = attrs.has("align_corners") && attrs.i("align_corners") != 0;
    ValueId y = in[0];
    for (size_t d = 0; d < size.size(); ++d) {
      auto axis = static_cast<int64_t>(d + 2);
      auto in_size = t.shape[d + 2].as_constant();
      if (!in_size) user_error("interpolate: needs static spatial sizes, got " + t.str(), loc);
      if (*in_size == size[d] && (nearest || align || attrs.f("scale" + std::to_string(d)) == 1.0))
        continue;  // identity along this axis
      double scale = attrs.f("scale" + std::to_string(d));
      y = nearest                    ? resize_nearest(e, y, axis, *in_size, size[d], scale)
          : attrs.s("mode") == "cubic" ? resize_cubic(e, y, axis, *in_size, size[d], scale, align)
                                       : resize_linear(e, y, axis, *in_size, size[d], scale, align);
    }
    if (y == in[0]) y = e.reshape(y, t.shape);  // a result distinct from the operand
    return std::vector<ValueId>{y};
  };
}

// out == 1 everywhere: a mean; sizes dividing evenly: an avg pool; else matmuls by averaging
// matrices (last spatial dim: x @ P^T; first of two: P @ x).
DecomposeFn decompose_adaptive_avg_pool() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const TensorType t = g.type(in[0]);
    const auto& size = attrs.ints("size");
    const int n = static_cast<int>(size.size());
    std::vector<int64_t> ins, axes, kernel;
    bool all_one = true, divisible = true;
    for (int d = 0; d < n; ++d) {
      axes.push_back(d + 2);
      all_one = all_one && size[static_cast<size_t>(d)] == 1;
    }
    // A mean also serves symbolic spatial sizes (global pooling after a dynamic-size backbone).
    if (all_one)
      return std::vector<ValueId>{e.op(OpKind::Mean, {in[0]}, Attrs().set("axes", axes).set("keepdim", int64_t{1}))};
    for (int d = 0; d < n; ++d) {
      auto in_size = t.shape[static_cast<size_t>(d + 2)].as_constant();
      if (!in_size)
        user_error("adaptive_avg_pool: an output size other than 1 needs static spatial sizes, got " + t.str(),
                   loc, "declare the dim static");
      ins.push_back(*in_size);
      divisible = divisible && ins.back() % size[static_cast<size_t>(d)] == 0;
      kernel.push_back(divisible ? ins.back() / size[static_cast<size_t>(d)] : 1);
    }
    if (divisible) {
      std::vector<int64_t> zeros(static_cast<size_t>(n), 0), ones(static_cast<size_t>(n), 1);
      Attrs pool;
      pool.set("kind", std::string("avg")).set("kernel", kernel).set("stride", kernel)
          .set("padding", zeros).set("dilation", ones).set("ceil_mode", int64_t{0})
          .set("count_include_pad", int64_t{1});
      return std::vector<ValueId>{e.op(OpKind::Pool, {in[0]}, pool)};
    }
    ValueId y = in[0];
    const int64_t last_in = ins.back(), last_out = size.back();
    ValueId pw = averaging_matrix(e, last_in, last_out, t.dtype);
    y = e.op(OpKind::Matmul, {y, e.op(OpKind::Permute, {pw}, Attrs().set("perm", std::vector<int64_t>{1, 0}))});
    if (n == 2) y = e.op(OpKind::Matmul, {averaging_matrix(e, ins[0], size[0], t.dtype), y});
    return std::vector<ValueId>{y};
  };
}

}  // namespace aotrace::ir
