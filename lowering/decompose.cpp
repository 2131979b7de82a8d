// decompose: rewrites every Composite op (linear, mean, softmax, log_softmax) into primitives
// with the op's own decomposition (op_info(k).decompose, ir/ops.cpp), repeating until no
// composite is left, so that fusion and codegen only see primitives (STYLE 6). And a topk that
// ranks its rows as a heap (topk_as_heap: a sort, top-p sampling's over a vocabulary, a median,
// a large k) takes its values as a gather at its indices: only the indices kernel ranks the row.
// Test: lowering_tests GraphPasses.DecomposeSoftmax, GraphPasses.DecomposeLinear,
// GraphPasses.WideTopkGathersItsValues.
#include <algorithm>

#include "lowering/passes.h"

namespace aotrace::lowering {

bool topk_as_heap(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::OpKind::TopK) return false;
  const ir::Shape& x = g.type(n.operands[0]).shape;
  if (x.empty()) return false;
  const int64_t k = n.attrs.i("k");
  return k > kTopkRowsMaxK || k * k > 2 * planned_size(x[static_cast<size_t>(n.attrs.i("axis"))], max_bindings(g));
}

static bool has_composite(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (ir::op_info(n.op).category == ir::OpCategory::Composite) return true;
  return false;
}

static ir::Graph decompose_once(const ir::Graph& old) {
  GraphCopy c = copy_signature(old);
  for (const auto& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    const ir::OpInfo& info = ir::op_info(n.op);
    std::vector<ir::ValueId> results;
    if (info.category == ir::OpCategory::Composite) {
      AOT_CHECK(info.decompose, "composite op " + std::string(info.name) + " has no decomposition");
      results = info.decompose(c.graph, operands, n.attrs, n.loc);
    } else if (topk_as_heap(old, n)) {  // the values gathered at the indices: one kernel ranks
      results = c.graph.add_node(n.op, operands, n.attrs, n.loc);
      results[0] = c.graph.add(ir::OpKind::Gather, {operands[0], results[1]},
                               attrs_of({{"axis", n.attrs.i("axis")}}), n.loc);
    } else {
      results = c.graph.add_node(n.op, operands, n.attrs, n.loc);
    }
    AOT_CHECK(results.size() == n.results.size(), "result count of " + std::string(info.name));
    for (size_t i = 0; i < results.size(); ++i) {
      AOT_CHECK(c.graph.type(results[i]) == old.type(n.results[i]),
                "decomposition of " + std::string(info.name) + " changed a result type");
      c.map[static_cast<size_t>(n.results[i])] = results[i];
    }
  }
  return finish_copy(std::move(c), old);
}

ir::Graph decompose(ir::Graph g) {
  // Decompositions may use other composites (log_softmax via softmax pieces): iterate. The first
  // round also gathers wide topks' values (they are no composite: once is enough).
  bool wide_topk = std::any_of(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) { return topk_as_heap(g, n); });
  for (int round = 0; (round == 0 && wide_topk) || has_composite(g); ++round) {
    AOT_CHECK(round < 16, "decompositions do not terminate");
    g = decompose_once(g);
  }
  return g;
}

}  // namespace aotrace::lowering
