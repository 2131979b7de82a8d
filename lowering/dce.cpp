// dce: dead-code elimination. Keeps the nodes that an output depends on, drops the rest.
// Inputs and weights stay (they are the graph's signature). Test: lowering_tests GraphPasses.Dce*.
#include "lowering/passes.h"

namespace aotrace::lowering {

ir::Graph dce(ir::Graph old) {
  std::vector<bool> live(old.num_values(), false);
  for (ir::ValueId v : old.outputs) live[static_cast<size_t>(v)] = true;
  std::vector<bool> keep(old.nodes.size(), false);
  for (size_t i = old.nodes.size(); i-- > 0;) {
    const ir::Node& n = old.nodes[i];
    for (ir::ValueId r : n.results) keep[i] = keep[i] || live[static_cast<size_t>(r)];
    if (keep[i])
      for (ir::ValueId o : n.operands) live[static_cast<size_t>(o)] = true;
  }
  GraphCopy c = copy_signature(old);
  for (size_t i = 0; i < old.nodes.size(); ++i) {
    if (!keep[i]) continue;
    const ir::Node& n = old.nodes[i];
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    copy_node(c, n, std::move(operands));
  }
  return finish_copy(std::move(c), old);
}

}  // namespace aotrace::lowering
