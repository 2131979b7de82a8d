// Decompositions of the composite ops into primitives (the `decompose` column of ops.cpp).
// Each appends nodes to the graph at the composite's location and returns its result values.
#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

using Operands = std::span<const int32_t>;

Attrs reduce_attrs(std::vector<int64_t> axes, bool keepdim) {
  Attrs a;
  a.set("axes", std::move(axes)).set("keepdim", int64_t{keepdim});
  return a;
}

// max(x, axis, keepdim) subtracted from x: the numerically stable shift of softmax.
ValueId shifted_by_max(Graph& g, ValueId x, int64_t axis, const SourceLoc& loc) {
  ValueId m = g.add(OpKind::ReduceMax, {x}, reduce_attrs({axis}, true), loc);
  return g.add(OpKind::Sub, {x, m}, {}, loc);
}

}  // namespace

// linear(x, w[, b]) = matmul(x, permute(w, [1, 0])) + b
DecomposeFn decompose_linear() {
  return [](Graph& g, Operands in, const Attrs&, const SourceLoc& loc) {
    Attrs perm;
    perm.set("perm", std::vector<int64_t>{1, 0});
    ValueId wt = g.add(OpKind::Permute, {in[1]}, perm, loc);
    const DType t = g.type(in[0]).dtype;
    if (in.size() == 3 && (t == DType::f16 || t == DType::bf16) && g.type(in[2]).dtype == t) {
      // torch's half linear (addmm) adds the bias to the f32 sums and rounds once.
      Attrs f32;
      f32.set("out_dtype", DType::f32);
      ValueId sums = g.add(OpKind::Matmul, {in[0], wt}, f32, loc);
      return std::vector<ValueId>{g.cast(g.add(OpKind::Add, {sums, g.cast(in[2], DType::f32, loc)}, {}, loc), t, loc)};
    }
    ValueId y = g.add(OpKind::Matmul, {in[0], wt}, {}, loc);
    if (in.size() == 3) y = g.add(OpKind::Add, {y, in[2]}, {}, loc);
    return std::vector<ValueId>{y};
  };
}

// mean(x, axes, keepdim) = reduce_sum(x, axes, keepdim) / count, count the product of the
// reduced dims: a constant when they are static, else reduce_sum of a full(1) of those dims.
DecomposeFn decompose_mean() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    const auto& axes = attrs.ints("axes");
    const TensorType t = g.type(in[0]);  // a copy: adding nodes grows the type table
    ValueId sum = g.add(OpKind::ReduceSum, {in[0]}, reduce_attrs(axes, attrs.i("keepdim")), loc);
    Shape reduced;
    SymExpr count = 1;
    for (auto a : axes) {
      reduced.push_back(t.shape[static_cast<size_t>(a)]);
      count = count * t.shape[static_cast<size_t>(a)];
    }
    ValueId divisor;
    if (auto c = count.as_constant()) {
      divisor = g.constant(static_cast<double>(*c), t.dtype, loc);
    } else {
      Attrs full;
      full.set("shape", reduced).set("value", 1.0).set("dtype", t.dtype);
      ValueId ones = g.add(OpKind::Full, {}, full, loc);
      std::vector<int64_t> all;
      for (size_t i = 0; i < reduced.size(); ++i) all.push_back(static_cast<int64_t>(i));
      divisor = g.add(OpKind::ReduceSum, {ones}, reduce_attrs(all, false), loc);
    }
    return std::vector<ValueId>{g.add(OpKind::Div, {sum, divisor}, {}, loc)};
  };
}

// softmax(x, axis) = e / reduce_sum(e, axis, keepdim), e = exp(x - reduce_max(x, axis, keepdim))
DecomposeFn decompose_softmax() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    int64_t axis = attrs.i("axis");
    ValueId e = g.add(OpKind::Exp, {shifted_by_max(g, in[0], axis, loc)}, {}, loc);
    ValueId s = g.add(OpKind::ReduceSum, {e}, reduce_attrs({axis}, true), loc);
    return std::vector<ValueId>{g.add(OpKind::Div, {e, s}, {}, loc)};
  };
}

// log_softmax(x, axis) = d - log(reduce_sum(exp(d), axis, keepdim)), d = x - max(x, axis)
DecomposeFn decompose_log_softmax() {
  return [](Graph& g, Operands in, const Attrs& attrs, const SourceLoc& loc) {
    int64_t axis = attrs.i("axis");
    ValueId d = shifted_by_max(g, in[0], axis, loc);
    ValueId e = g.add(OpKind::Exp, {d}, {}, loc);
    ValueId s = g.add(OpKind::ReduceSum, {e}, reduce_attrs({axis}, true), loc);
    ValueId l = g.add(OpKind::Log, {s}, {}, loc);
    return std::vector<ValueId>{g.add(OpKind::Sub, {d, l}, {}, loc)};
  };
}

}  // namespace aotrace::ir
