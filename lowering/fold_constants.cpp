// fold_constants: an elementwise op whose operands are all Full (a splat: one value everywhere)
// is itself a splat, computed now with the op's reference implementation on one element and
// replaced by a Full of the result type; a movement op of a Full is a Full of the new shape.
// This folds the scalar arithmetic of traced Python (`x * (1.0 / 8)` built from constants).
// Pad and concat are splats only when the pad value / every operand has the same value.
// Test: lowering_tests GraphPasses.FoldConstants*.
#include <algorithm>
#include <optional>

#include "lowering/passes.h"

namespace aotrace::lowering {

static bool is_foldable(ir::OpCategory c) {
  using C = ir::OpCategory;
  return c == C::Unary || c == C::Binary || c == C::Compare || c == C::Ternary || c == C::Cast ||
         c == C::Movement;
}

// The splat value of `op(values)` computed on rank-0 tensors of the operands' dtypes.
static double fold_splat(const ir::Node& n, const ir::Graph& g,
                         const std::vector<ir::ValueId>& operands,
                         const std::vector<double>& values) {
  const ir::OpInfo& info = ir::op_info(n.op);
  if (info.category == ir::OpCategory::Movement) return values.at(0);
  std::vector<ir::HostTensor> args;
  for (size_t i = 0; i < operands.size(); ++i) {
    ir::HostTensor t = ir::HostTensor::zeros(g.type(operands[i]).dtype, {});
    t.set(0, values[i]);
    args.push_back(std::move(t));
  }
  std::vector<ir::HostTensor> out = info.reference(args, n.attrs);
  AOT_CHECK(out.size() == 1 && out[0].numel() == 1, "folding " + std::string(info.name));
  return out[0].get(0);
}

ir::Graph fold_constants(ir::Graph old) {
  GraphCopy c = copy_signature(old);
  std::vector<std::optional<double>> splat(old.num_values());  // indexed by new value ids
  auto splat_of = [&](ir::ValueId v) -> std::optional<double>& {
    if (static_cast<size_t>(v) >= splat.size()) splat.resize(static_cast<size_t>(v) + 1);
    return splat[static_cast<size_t>(v)];
  };
  for (const auto& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    std::vector<double> values;
    for (ir::ValueId o : n.operands) {
      operands.push_back(c.map.at(static_cast<size_t>(o)));
      if (auto s = splat_of(operands.back())) values.push_back(*s);
    }
    bool all_splats = !operands.empty() && values.size() == operands.size() &&
                      n.results.size() == 1 && is_foldable(ir::op_info(n.op).category);
    if (all_splats && n.op == ir::OpKind::Concat)
      all_splats = std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; });
    if (all_splats && n.op == ir::OpKind::Pad) all_splats = n.attrs.f("value") == values[0];
    std::vector<ir::ValueId> results;
    if (all_splats) {
      const ir::TensorType& t = old.type(n.results[0]);
      double value = fold_splat(n, c.graph, operands, values);
      ir::Attrs attrs;
      attrs.set("shape", t.shape).set("value", value).set("dtype", t.dtype);
      results = c.graph.add_node(ir::OpKind::Full, {}, std::move(attrs), n.loc);
    } else {
      results = c.graph.add_node(n.op, operands, n.attrs, n.loc);
    }
    if (n.op == ir::OpKind::Full || all_splats) {
      // The value as the dtype stores it (f32 rounding, integer truncation).
      const ir::Node& full = c.graph.nodes.back();
      ir::HostTensor one = ir::HostTensor::zeros(c.graph.type(results[0]).dtype, {});
      one.set(0, full.attrs.f("value"));
      splat_of(results[0]) = one.get(0);
    }
    for (size_t r = 0; r < results.size(); ++r)
      c.map[static_cast<size_t>(n.results[r])] = results[r];
  }
  return finish_copy(std::move(c), old);
}

}  // namespace aotrace::lowering
