// Decompositions of the neural-network composites into primitives: conv_transpose, the
// activations (gelu, silu, hardswish, hardsigmoid, leaky_relu, elu, softplus), clamp, var, the
// normalisations and tril/triu. Each appends nodes at the composite's location.
#include <cmath>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

using Operands = std::span<const int32_t>;

// clamp(x + 3, 0, 6) / 6
ValueId hard_gate(Emit& e, ValueId x) {
  ValueId r = e.op(OpKind::Maximum, {e.add(x, e.c(3, x)), e.c(0, x)});
  return e.div(e.op(OpKind::Minimum, {r, e.c(6, x)}), e.c(6, x));
}

// A per-channel [C] parameter shaped to broadcast against x [N, C, *] (rank `rank`).
ValueId per_channel(Emit& e, ValueId p, int rank) {
  Shape s{e.g.type(p).shape[0]};
  for (int i = 2; i < rank; ++i) s.push_back(1);
  return e.reshape(p, s);
}

std::vector<int64_t> iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

}  // namespace

// Zero insertion + padding + stride-1 conv with the flipped, group-transposed weight (ops.def).
DecomposeFn decompose_conv_transpose() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const TensorType x = g.type(in[0]), w = g.type(in[1]);
    const int n = x.rank() - 2;
    const auto &stride = attrs.ints("stride"), &dil = attrs.ints("dilation");
    const auto &padding = attrs.ints("padding"), &out_pad = attrs.ints("output_padding");
    const int64_t groups = attrs.i("groups");
    // x [N, C, s1, s2] -> [N, C, s1, 1, s2, 1] -> pad the 1s to the stride -> [N, C, s1*st1, ...]
    Shape split{x.shape[0], x.shape[1]}, merged{x.shape[0], x.shape[1]};
    std::vector<int64_t> low(2 + 2 * static_cast<size_t>(n), 0), high = low;
    for (int d = 0; d < n; ++d) {
      split.push_back(x.shape[static_cast<size_t>(d + 2)]);
      split.push_back(1);
      high[static_cast<size_t>(3 + 2 * d)] = stride[static_cast<size_t>(d)] - 1;
      merged.push_back(x.shape[static_cast<size_t>(d + 2)] * stride[static_cast<size_t>(d)]);
    }
    ValueId v = e.reshape(in[0], split);
    v = e.op(OpKind::Pad, {v}, Attrs().set("low", low).set("high", high).set("value", 0.0));
    v = e.reshape(v, merged);
    // Pad by dilation*(k-1) - padding each side (negative crops), minus the trailing zeros of
    // the last inserted group, plus output_padding on the high side.
    std::vector<int64_t> plow(static_cast<size_t>(n + 2), 0), phigh = plow;
    for (int d = 0; d < n; ++d) {
      size_t i = static_cast<size_t>(d);
      int64_t k = w.shape[i + 2].constant();
      int64_t edge = dil[i] * (k - 1) - padding[i];
      plow[i + 2] = edge;
      phigh[i + 2] = edge - (stride[i] - 1) + out_pad[i];
    }
    v = e.op(OpKind::Pad, {v}, Attrs().set("low", plow).set("high", phigh).set("value", 0.0));
    // weight [Cin, O/g, *k] -> [g, Cin/g, O/g, *k] -> [g, O/g, Cin/g, *k] -> [O, Cin/g, *k], flipped.
    SymExpr cin_g = floordiv(w.shape[0], groups);
    Shape wg{groups, cin_g, w.shape[1]}, wo{w.shape[1] * groups, cin_g};
    std::vector<int64_t> perm{0, 2, 1};
    for (int d = 0; d < n; ++d) {
      wg.push_back(w.shape[static_cast<size_t>(d + 2)]);
      wo.push_back(w.shape[static_cast<size_t>(d + 2)]);
      perm.push_back(3 + d);
    }
    ValueId wt = e.op(OpKind::Permute, {e.reshape(in[1], wg)}, Attrs().set("perm", perm));
    wt = e.op(OpKind::Flip, {e.reshape(wt, wo)}, Attrs().set("axes", iota(2, 2 + n)));
    std::vector<ValueId> operands{v, wt};
    if (in.size() == 3) operands.push_back(in[2]);
    std::vector<int64_t> ones(static_cast<size_t>(n), 1), zeros(static_cast<size_t>(n), 0);
    Attrs conv;
    conv.set("stride", ones).set("dilation", dil).set("pad_low", zeros).set("pad_high", zeros)
        .set("groups", groups);
    return std::vector<ValueId>{e.op(OpKind::Conv, operands, conv)};
  };
}

// exact: x/2 * (1 + erf(x / sqrt 2)); tanh: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
DecomposeFn decompose_gelu() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    ValueId x = in[0];
    ValueId inner;
    if (attrs.has("approximate") && attrs.s("approximate") == "tanh") {
      ValueId x3 = e.mul(e.mul(x, x), x);
      ValueId u = e.mul(e.c(std::sqrt(2.0 / M_PI), x), e.add(x, e.mul(e.c(0.044715, x), x3)));
      inner = e.op(OpKind::Tanh, {u});
    } else {
      inner = e.op(OpKind::Erf, {e.mul(x, e.c(M_SQRT1_2, x))});
    }
    return std::vector<ValueId>{e.mul(e.mul(x, e.c(0.5, x)), e.add(e.c(1, x), inner))};
  };
}

DecomposeFn decompose_silu() {
  return [](Graph& g, Operands in, const Attrs&, const SourceLoc& loc) {
    Emit e{g, loc};
    return std::vector<ValueId>{e.mul(in[0], e.op(OpKind::Sigmoid, {in[0]}))};
  };
}

DecomposeFn decompose_hardswish() {
  return [](Graph& g, Operands in, const Attrs&, const SourceLoc& loc) {
    Emit e{g, loc};
    return std::vector<ValueId>{e.mul(in[0], hard_gate(e, in[0]))};
  };
}

DecomposeFn decompose_hardsigmoid() {
  return [](Graph& g, Operands in, const Attrs&, const SourceLoc& loc) {
    Emit e{g, loc};
    return std::vector<ValueId>{hard_gate(e, in[0])};
  };
}

DecomposeFn decompose_leaky_relu() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    ValueId x = in[0];
    ValueId pos = e.op(OpKind::Gt, {x, e.c(0, x)});
    return std::vector<ValueId>{
        e.op(OpKind::Where, {pos, x, e.mul(x, e.c(attrs.f("negative_slope"), x))})};
  };
}

DecomposeFn decompose_elu() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    ValueId x = in[0];
    ValueId pos = e.op(OpKind::Gt, {x, e.c(0, x)});
    ValueId neg = e.mul(e.c(attrs.f("alpha"), x), e.sub(e.op(OpKind::Exp, {x}), e.c(1, x)));
    return std::vector<ValueId>{e.op(OpKind::Where, {pos, x, neg})};
  };
}

DecomposeFn decompose_softplus() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    ValueId x = in[0];
    ValueId bx = e.mul(x, e.c(attrs.f("beta"), x));
    ValueId soft = e.div(e.op(OpKind::Log, {e.add(e.c(1, x), e.op(OpKind::Exp, {bx}))}),
                         e.c(attrs.f("beta"), x));
    ValueId linear = e.op(OpKind::Gt, {bx, e.c(attrs.f("threshold"), x)});
    return std::vector<ValueId>{e.op(OpKind::Where, {linear, x, soft})};
  };
}

DecomposeFn decompose_clamp() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    ValueId x = in[0];
    if (attrs.has("min")) x = e.op(OpKind::Maximum, {x, e.c(attrs.f("min"), x)});
    if (attrs.has("max")) x = e.op(OpKind::Minimum, {x, e.c(attrs.f("max"), x)});
    return std::vector<ValueId>{x};
  };
}

// sum((x - mean)^2) / (count - correction)
DecomposeFn decompose_var() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const TensorType t = g.type(in[0]);
    const auto& axes = attrs.ints("axes");
    ValueId d = e.sub(in[0], e.mean(in[0], axes));
    Attrs sum;
    sum.set("axes", axes).set("keepdim", attrs.i("keepdim"));
    ValueId s = e.op(OpKind::ReduceSum, {e.mul(d, d)}, sum);
    SymExpr count = 1;
    for (auto a : axes) count = count * t.shape[static_cast<size_t>(a)];
    auto c = count.as_constant();
    if (!c) user_error("var: needs static sizes along the reduced dims, got " + t.str(), loc);
    double n = static_cast<double>(*c - attrs.i("correction"));
    return std::vector<ValueId>{e.div(s, e.c(std::max(n, 0.0), s))};
  };
}

// (x - mean) * rsqrt(var + eps) [* weight] [+ bias], over the last normalized_ndim dims.
DecomposeFn decompose_layer_norm() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const int rank = g.type(in[0]).rank();
    auto axes = iota(rank - attrs.i("normalized_ndim"), rank);
    ValueId d = e.sub(in[0], e.mean(in[0], axes));
    ValueId var = e.mean(e.mul(d, d), axes);
    ValueId y = e.mul(d, e.op(OpKind::Rsqrt, {e.add(var, e.c(attrs.f("eps"), var))}));
    if (in.size() >= 2) y = e.mul(y, in[1]);
    if (in.size() == 3) y = e.add(y, in[2]);
    return std::vector<ValueId>{y};
  };
}

// x [N, C, *] viewed as [N, groups, rest], normalised over rest, then per-channel affine.
DecomposeFn decompose_group_norm() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const TensorType x = g.type(in[0]);
    const int64_t groups = attrs.i("groups");
    SymExpr rest = floordiv(x.shape[1], groups);
    for (int i = 2; i < x.rank(); ++i) rest = rest * x.shape[static_cast<size_t>(i)];
    ValueId v = e.reshape(in[0], Shape{x.shape[0], groups, rest});
    ValueId d = e.sub(v, e.mean(v, {2}));
    ValueId var = e.mean(e.mul(d, d), {2});
    ValueId y = e.mul(d, e.op(OpKind::Rsqrt, {e.add(var, e.c(attrs.f("eps"), var))}));
    y = e.reshape(y, x.shape);
    if (in.size() == 3) {
      y = e.mul(y, per_channel(e, in[1], x.rank()));
      y = e.add(y, per_channel(e, in[2], x.rank()));
    }
    return std::vector<ValueId>{y};
  };
}

// Eval batch norm as ATen computes it (batch_norm_cpu_transform_input): x * alpha + beta per
// channel, alpha = rsqrt(var + eps) [* weight], beta = [bias] - mean * alpha. alpha and beta
// read only the statistics, so with weights for them lowering folds both into per-channel
// weights (fold_constants): one multiply-add per element.
DecomposeFn decompose_batch_norm() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const int rank = g.type(in[0]).rank();
    ValueId alpha = e.op(OpKind::Rsqrt, {e.add(in[2], e.c(attrs.f("eps"), in[2]))});
    if (in.size() == 5) alpha = e.mul(alpha, in[3]);
    ValueId beta = e.mul(in[1], alpha);
    beta = in.size() == 5 ? e.sub(in[4], beta) : e.op(OpKind::Neg, {beta});
    ValueId y = e.add(e.mul(in[0], per_channel(e, alpha, rank)), per_channel(e, beta, rank));
    return std::vector<ValueId>{y};
  };
}

namespace {

// where(keep, x, 0), keep from (col - row) compared with the diagonal over the last two dims.
DecomposeFn decompose_tri(bool lower) {
  return [lower](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    Emit e{g, loc};
    const TensorType x = g.type(in[0]);
    const SymExpr rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    auto arange = [&](const SymExpr& n) {
      Attrs a;
      a.set("shape", Shape{n}).set("start", 0.0).set("step", 1.0).set("dtype", DType::i64);
      return e.op(OpKind::Arange, {}, a);
    };
    ValueId r = e.reshape(arange(rows), Shape{rows, 1});
    ValueId diff = e.sub(arange(cols), r);  // [rows, cols]: col - row
    ValueId k = g.constant(static_cast<double>(attrs.i("diagonal")), DType::i64, loc);
    ValueId keep = e.op(lower ? OpKind::Le : OpKind::Ge, {diff, k});
    return std::vector<ValueId>{e.op(OpKind::Where, {keep, in[0], e.c(0, in[0])})};
  };
}

}  // namespace

DecomposeFn decompose_tril() { return decompose_tri(true); }
DecomposeFn decompose_triu() { return decompose_tri(false); }

}  // namespace aotrace::ir
