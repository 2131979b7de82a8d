// evaluate(): the reference interpreter. Binds symbols from the input shapes, runs each node's
// reference implementation (composites through their decomposition in a scratch graph) and
// checks every result against the node's recorded type.

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

std::string host_str(const HostTensor& t) { return host_type(t).str(); }

// Binds the symbols of `type` from the concrete shape of `t`; user_error on a mismatch.
void bind_shape(const std::string& what, const TensorType& type, const HostTensor& t,
                SymBindings& bindings) {
  auto mismatch = [&] {
    user_error("evaluate: " + what + " expects " + type.str() + ", got " + host_str(t));
  };
  if (type.dtype != t.dtype || type.rank() != static_cast<int>(t.shape.size())) mismatch();
  for (size_t i = 0; i < t.shape.size(); ++i) {
    const SymNode& n = type.shape[i].node();
    if (n.kind != SymNode::Kind::Symbol) continue;
    auto [it, fresh] = bindings.emplace(n.name, t.shape[i]);
    if (!fresh && it->second != t.shape[i]) mismatch();
  }
}

void check_shape(const std::string& what, const TensorType& type, const HostTensor& t,
                 const SymBindings& bindings) {
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (type.shape[i].evaluate(bindings) != t.shape[i])
      user_error("evaluate: " + what + " expects " + type.str() + ", got " + host_str(t));
}

Shape concrete_shape(const Shape& shape, const SymBindings& bindings) {
  Shape out;
  for (const auto& d : shape) {
    auto v = d.evaluate(bindings);
    if (!v) internal_error("evaluate: cannot evaluate dim " + d.str() + " (unbound symbol)");
    out.push_back(*v);
  }
  return out;
}

// Attributes with symbolic shapes (full, reshape, expand) made concrete.
Attrs concrete_attrs(const Attrs& attrs, const SymBindings& bindings) {
  Attrs out = attrs;
  for (auto& [key, value] : out.items)
    if (auto* shape = std::get_if<Shape>(&value)) value = concrete_shape(*shape, bindings);
  return out;
}

std::vector<HostTensor> run_composite(const Node& n, std::span<const HostTensor> operands,
                                      const Attrs& attrs) {
  Graph scratch;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < operands.size(); ++i)
    ids.push_back(scratch.add_input("in" + std::to_string(i), host_type(operands[i]), ""));
  auto results = op_info(n.op).decompose(scratch, ids, attrs, n.loc);
  scratch.set_outputs(results, {});
  return evaluate(scratch, operands);
}

}  // namespace

std::vector<HostTensor> evaluate(const Graph& g, std::span<const HostTensor> inputs) {
  if (inputs.size() != g.inputs.size())
    user_error("evaluate: the graph takes " + std::to_string(g.inputs.size()) + " inputs, got " +
               std::to_string(inputs.size()));
  SymBindings bindings;
  for (size_t i = 0; i < inputs.size(); ++i)
    bind_shape("input '" + g.inputs[i].name + "'", g.type(g.inputs[i].value), inputs[i], bindings);
  for (size_t i = 0; i < inputs.size(); ++i)
    check_shape("input '" + g.inputs[i].name + "'", g.type(g.inputs[i].value), inputs[i], bindings);

  std::vector<std::optional<HostTensor>> values(g.num_values());
  auto value = [&](ValueId v) -> const HostTensor& {
    AOT_CHECK(v >= 0 && static_cast<size_t>(v) < values.size() && values[static_cast<size_t>(v)],
              "evaluate: %" + std::to_string(v) + " is used before it is defined");
    return *values[static_cast<size_t>(v)];
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    values[static_cast<size_t>(g.inputs[i].value)] = inputs[i];
  for (const auto& w : g.weights) {
    const TensorType& type = g.type(w.value);
    AOT_CHECK(w.data, "evaluate: weight " + w.name + " has no data");
    HostTensor t;
    t.dtype = type.dtype;
    for (const auto& d : concrete_shape(type.shape, bindings)) t.shape.push_back(d.constant());
    AOT_CHECK(w.data->size() == static_cast<size_t>(t.numel()) * dtype_size(t.dtype),
              "evaluate: weight " + w.name + " data does not match " + type.str());
    t.data = *w.data;
    values[static_cast<size_t>(w.value)] = std::move(t);
  }

  for (const auto& n : g.nodes) {
    std::vector<HostTensor> operands;
    for (ValueId v : n.operands) operands.push_back(value(v));
    Attrs attrs = concrete_attrs(n.attrs, bindings);
    const OpInfo& info = op_info(n.op);
    std::vector<HostTensor> results =
        info.reference ? info.reference(operands, attrs) : run_composite(n, operands, attrs);
    AOT_CHECK(results.size() == n.results.size(), std::string(info.name) + ": result count");
    for (size_t r = 0; r < results.size(); ++r) {
      TensorType expected = g.type(n.results[r]);
      expected.shape = concrete_shape(expected.shape, bindings);
      expected.device = Device{};
      AOT_CHECK(host_type(results[r]) == expected,
                std::string(info.name) + " computed " + host_str(results[r]) + " for %" +
                    std::to_string(n.results[r]) + ": " + expected.str());
      values[static_cast<size_t>(n.results[r])] = std::move(results[r]);
    }
  }

  std::vector<HostTensor> out;
  for (ValueId v : g.outputs) out.push_back(value(v));
  return out;
}

}  // namespace aotrace::ir
