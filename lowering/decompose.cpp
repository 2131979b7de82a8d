// decompose: rewrites every Composite op (linear, mean, softmax, log_softmax) into primitives
// with the op's own decomposition (op_info(k).decompose, ir/ops.cpp), repeating until no
// composite is left, so that fusion and codegen only see primitives (STYLE 6).
// Test: lowering_tests GraphPasses.DecomposeSoftmax, GraphPasses.DecomposeLinear.
#include "lowering/passes.h"

namespace aotrace::lowering {

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
  // Decompositions may use other composites (log_softmax via softmax pieces): iterate.
  for (int round = 0; has_composite(g); ++round) {
    AOT_CHECK(round < 16, "decompositions do not terminate");
    g = decompose_once(g);
  }
  return g;
}

}  // namespace aotrace::lowering
