// fold_constants: an elementwise op whose operands are all Full (a splat: one value everywhere)
// is itself a splat, computed now with the op's reference implementation on one element and
// replaced by a Full of the result type; a movement op of a Full is a Full of the new shape.
// This folds the scalar arithmetic of traced Python (`x * (1.0 / 8)` built from constants).
// Pad and concat are splats only when the pad value / every operand has the same value.
// Weights fold too: an elementwise op of weights and splats with a small result (batch norm's
// rsqrt(var + eps) * weight and bias - mean * that, per channel) is computed now with the op's
// reference implementation into a new weight, and so is a movement op of such a folded weight
// (the per-channel reshape). Movement ops of the model's own weights are left to pack_weights.
// Test: lowering_tests GraphPasses.FoldConstants*, GraphPasses.FoldsBatchNormStatistics.
#include <algorithm>
#include <functional>
#include <optional>

#include "lowering/passes.h"

namespace aotrace::lowering {

// The most elements a folded weight may have: per-channel vectors, not copies of big weights.
constexpr int64_t kMaxFoldedWeight = int64_t{1} << 16;

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

namespace {

// The weights of the graph being built, by value id: their index in Graph::weights, and whether
// this pass made them.
struct WeightIndex {
  std::vector<int> index;
  std::vector<bool> folded;
  void add(ir::ValueId v, int w, bool made_here) {
    if (static_cast<size_t>(v) >= index.size()) index.resize(static_cast<size_t>(v) + 1, -1), folded.resize(index.size());
    index[static_cast<size_t>(v)] = w;
    folded[static_cast<size_t>(v)] = made_here;
  }
  int of(ir::ValueId v) const { return static_cast<size_t>(v) < index.size() ? index[static_cast<size_t>(v)] : -1; }
  bool made_here(ir::ValueId v) const { return of(v) >= 0 && folded[static_cast<size_t>(v)]; }
};

std::optional<std::vector<int64_t>> static_shape(const ir::TensorType& t) {
  std::vector<int64_t> dims;
  for (const ir::SymExpr& d : t.shape) {
    auto c = d.as_constant();
    if (!c) return std::nullopt;
    dims.push_back(*c);
  }
  return dims;
}

// `n` computed now into a new weight of `c`, when its operands are weights and splats (at least
// one weight; a movement op only of a weight folded here) and its result is small; else -1.
ir::ValueId fold_weight(const ir::Node& n, const ir::Graph& old, GraphCopy& c, const std::vector<ir::ValueId>& operands,
                        const std::function<std::optional<double>(ir::ValueId)>& splat_of, WeightIndex& weights) {
  const ir::OpInfo& info = ir::op_info(n.op);
  if (n.results.size() != 1 || !is_foldable(info.category) || !info.reference || operands.empty()) return -1;
  const ir::TensorType& out = old.type(n.results[0]);
  auto out_dims = static_shape(out);
  if (!out_dims || out.numel().as_constant().value_or(kMaxFoldedWeight + 1) > kMaxFoldedWeight) return -1;
  bool any_weight = false;
  std::vector<ir::HostTensor> args;
  std::string source = std::string(info.name) + "(", name;
  for (size_t i = 0; i < operands.size(); ++i) {
    const ir::ValueId v = operands[i];
    const ir::TensorType& t = c.graph.type(v);
    auto dims = static_shape(t);
    if (!dims) return -1;
    const int w = weights.of(v);
    if (info.category == ir::OpCategory::Movement && !weights.made_here(v)) return -1;
    if (w >= 0) {
      const ir::Graph::Weight& weight = c.graph.weights[static_cast<size_t>(w)];
      args.push_back(ir::HostTensor{t.dtype, *dims, *weight.data});
      if (source.empty() || weight.source.empty()) source.clear();
      else source += (i ? ", " : "") + weight.source;
      if (name.empty()) name = weight.name;
      any_weight = true;
      continue;
    }
    std::optional<double> s = splat_of(v);
    if (!s) return -1;
    ir::HostTensor full = ir::HostTensor::zeros(t.dtype, *dims);
    for (int64_t k = 0; k < full.numel(); ++k) full.set(k, *s);
    args.push_back(std::move(full));
    if (!source.empty()) source += (i ? ", " : "") + ir::python_scalar_repr(*s, t.dtype);
  }
  if (!any_weight) return -1;
  std::vector<ir::HostTensor> result = info.reference(args, n.attrs);
  AOT_CHECK(result.size() == 1 && result[0].shape == *out_dims && result[0].dtype == out.dtype,
            "folding " + std::string(info.name) + " of weights");
  // The source names the value across variants (the bundle stores each source once).
  if (!source.empty()) source += ")";
  const ir::ValueId v = c.graph.add_weight(name + "." + std::string(info.name), out, source,
                                           std::make_shared<const ir::Bytes>(std::move(result[0].data)));
  weights.add(v, static_cast<int>(c.graph.weights.size() - 1), true);
  return v;
}

}  // namespace

ir::Graph fold_constants(ir::Graph old) {
  GraphCopy c = copy_signature(old);
  std::vector<std::optional<double>> splat(old.num_values());  // indexed by new value ids
  auto splat_of = [&](ir::ValueId v) -> std::optional<double>& {
    if (static_cast<size_t>(v) >= splat.size()) splat.resize(static_cast<size_t>(v) + 1);
    return splat[static_cast<size_t>(v)];
  };
  WeightIndex weights;
  for (size_t w = 0; w < c.graph.weights.size(); ++w) weights.add(c.graph.weights[w].value, static_cast<int>(w), false);
  const std::function<std::optional<double>(ir::ValueId)> splat_value = [&](ir::ValueId v) { return splat_of(v); };
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
    if (!all_splats) {
      if (ir::ValueId folded = fold_weight(n, old, c, operands, splat_value, weights); folded >= 0) {
        c.map[static_cast<size_t>(n.results[0])] = folded;
        continue;
      }
    }
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
