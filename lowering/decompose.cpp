// decompose: rewrites every Composite op (linear, mean, softmax, log_softmax) into primitives
// with the op's own decomposition (op_info(k).decompose, ir/ops.cpp), repeating until no
// composite is left, so that fusion and codegen only see primitives (STYLE 6). And a topk with
// k > kTopkRowsMaxK (a sort: top-p sampling's over a vocabulary, median) takes its values as a
// gather at its indices: only the indices kernel ranks the row (emit_topk_heap), in place.
// Test: lowering_tests GraphPasses.DecomposeSoftmax, GraphPasses.DecomposeLinear,
// GraphPasses.WideTopkGathersItsValues.
#include <algorithm>

#include "lowering/passes.h"

namespace aotrace::lowering {

// A topk whose values a gather at its indices gives (their kernel would rank the row again).
static bool gathers_values(const ir::Node& n) {
  return n.op == ir::OpKind::TopK && n.attrs.i("k") > kTopkRowsMaxK;
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
    } else if (gathers_values(n) && !c.graph.type(operands[0]).shape.empty()) {
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
  bool wide_topk = std::any_of(g.nodes.begin(), g.nodes.end(), gathers_values);
  for (int round = 0; (round == 0 && wide_topk) || has_composite(g); ++round) {
    AOT_CHECK(round < 16, "decompositions do not terminate");
    g = decompose_once(g);
  }
  return g;
}

}  // namespace aotrace::lowering
