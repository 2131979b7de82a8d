// Helpers shared by the graph passes: rebuilding a graph with the same signature, and the
// static-shape check of the CPU backend (tests: lowering_tests GraphPasses.*, Lowering.Symbolic*).
#include <string>

#include "lowering/passes.h"

namespace aotrace::lowering {

GraphCopy copy_signature(const ir::Graph& old) {
  GraphCopy c;
  c.map.assign(old.num_values(), -1);
  for (const auto& in : old.inputs)
    c.map[static_cast<size_t>(in.value)] = c.graph.add_input(in.name, old.type(in.value), in.source);
  for (const auto& w : old.weights)
    c.map[static_cast<size_t>(w.value)] =
        c.graph.add_weight(w.name, old.type(w.value), w.source, w.data);
  c.graph.symbols = old.symbols;
  return c;
}

ir::Graph finish_copy(GraphCopy copy, const ir::Graph& old) {
  std::vector<ir::ValueId> outputs;
  for (ir::ValueId v : old.outputs) {
    ir::ValueId mapped = copy.map.at(static_cast<size_t>(v));
    AOT_CHECK(mapped >= 0, "output value " + std::to_string(v) + " lost by a pass");
    outputs.push_back(mapped);
  }
  copy.graph.set_outputs(std::move(outputs), old.output_tree);
  copy.graph.input_updates = old.input_updates;
  copy.graph.rng_input = old.rng_input;
  return std::move(copy.graph);
}

static SourceLoc location_of(const ir::Graph& g, ir::ValueId v) {
  for (const auto& n : g.nodes)
    for (ir::ValueId r : n.results)
      if (r == v) return n.loc;
  return {};
}

std::vector<int64_t> static_dims(const ir::Graph& g, ir::ValueId v) {
  auto dims = g.type(v).static_shape();
  if (!dims)
    user_error("dynamic dims are not supported by CPU code generation yet (value %" +
                   std::to_string(v) + " has type " + g.type(v).str() + ")",
               location_of(g, v), "declare the dim with a list of static values in the YAML");
  return *dims;
}

void check_codegen_supported(const ir::Graph& g) {
  for (size_t v = 0; v < g.num_values(); ++v) {
    const auto value = static_cast<ir::ValueId>(v);
    static_dims(g, value);
  }
}

}  // namespace aotrace::lowering
