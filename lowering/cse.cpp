// cse: common-subexpression elimination. Two nodes with the same op, the same (already merged)
// operands and the same attributes compute the same values: the later one is replaced by the
// earlier one. Ops are pure, so this is always sound. Test: lowering_tests GraphPasses.Cse*.
#include <map>
#include <string>

#include "lowering/passes.h"

namespace aotrace::lowering {

static std::string node_key(const ir::Node& n, const std::vector<ir::ValueId>& operands) {
  std::string key(ir::op_name(n.op));
  key += '(';
  for (ir::ValueId o : operands) key += std::to_string(o) + ',';
  key += ')';
  key += n.attrs.str();
  return key;
}

ir::Graph cse(ir::Graph old) {
  GraphCopy c = copy_signature(old);
  std::map<std::string, std::vector<ir::ValueId>> seen;
  for (const auto& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    std::string key = node_key(n, operands);
    auto it = seen.find(key);
    std::vector<ir::ValueId> results =
        it != seen.end() ? it->second : c.graph.add_node(n.op, operands, n.attrs, n.loc);
    if (it == seen.end()) seen.emplace(key, results);
    for (size_t i = 0; i < results.size(); ++i)
      c.map[static_cast<size_t>(n.results[i])] = results[i];
  }
  return finish_copy(std::move(c), old);
}

}  // namespace aotrace::lowering
