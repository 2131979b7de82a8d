// Helpers shared by the graph passes: rebuilding a graph with the same signature, weights' float
// elements, and the checks and planning sizes of dynamic dims (tests: lowering_tests
// GraphPasses.*, Dynamic.*).
#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>
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

void copy_node(GraphCopy& c, const ir::Node& n, std::vector<ir::ValueId> operands) {
  copy_node(c, n, std::move(operands), n.attrs);
}

void copy_node(GraphCopy& c, const ir::Node& n, std::vector<ir::ValueId> operands, const ir::Attrs& attrs) {
  std::vector<ir::ValueId> results = c.graph.add_node(n.op, std::move(operands), attrs, n.loc);
  for (size_t r = 0; r < results.size(); ++r) c.map[static_cast<size_t>(n.results[r])] = results[r];
}

std::vector<int> weight_indices(const ir::Graph& g) {
  std::vector<int> index(g.num_values(), -1);
  for (size_t i = 0; i < g.weights.size(); ++i) index[static_cast<size_t>(g.weights[i].value)] = static_cast<int>(i);
  return index;
}

float float_element(const uint8_t* p, ir::DType t, int64_t i) {
  if (t == ir::DType::f32) {
    float f;
    std::memcpy(&f, p + i * 4, 4);
    return f;
  }
  AOT_CHECK(t == ir::DType::f16 || t == ir::DType::bf16, "float_element: not a float weight");
  uint16_t bits;
  std::memcpy(&bits, p + i * 2, 2);
  return t == ir::DType::f16 ? ir::f16_to_f32(bits) : ir::bf16_to_f32(bits);
}

ir::ValueId as_f32(GraphCopy& c, const ir::Graph& old, const std::vector<int>& weight_index, ir::ValueId v,
                   ir::ValueId mapped, const SourceLoc& loc) {
  const ir::DType t = old.type(v).dtype;
  if (t == ir::DType::f32) return mapped;
  const int w = weight_index[static_cast<size_t>(v)];
  if (w < 0) return c.graph.cast(mapped, ir::DType::f32, loc);
  const ir::Graph::Weight& src = old.weights[static_cast<size_t>(w)];
  ir::TensorType type = old.type(v);
  type.dtype = ir::DType::f32;
  const int64_t n = static_cast<int64_t>(src.data->size()) / ir::dtype_size(t);
  auto bytes = std::make_shared<ir::Bytes>(static_cast<size_t>(n) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    const float f = float_element(src.data->data(), t, i);
    std::memcpy(bytes->data() + i * 4, &f, 4);
  }
  // The source names the tensor across variants (the bundle stores it once); a weight without
  // one (reached through a closure) keeps none.
  return c.graph.add_weight(src.name + ".f32", type, src.source.empty() ? "" : "f32(" + src.source + ")", std::move(bytes));
}

ir::Attrs attrs_of(std::initializer_list<std::pair<std::string, ir::AttrValue>> items) {
  ir::Attrs a;
  for (const auto& [k, v] : items) a.set(k, v);
  return a;
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

int64_t planned_size(const ir::SymExpr& e, const ir::SymBindings& at) {
  if (auto c = e.as_constant()) return *c;
  auto v = e.evaluate(at);
  AOT_CHECK(v.has_value(), "dim " + e.str() + " has an undeclared symbol");
  return *v;
}

int symbol_index(const ir::Graph& g, const std::string& name) {
  auto it = g.symbols.find(name);
  AOT_CHECK(it != g.symbols.end(), "symbol " + name + " is not declared in the graph");
  return static_cast<int>(std::distance(g.symbols.begin(), it));
}

std::vector<int64_t> static_dims(const ir::Graph& g, ir::ValueId v) {
  auto dims = g.type(v).static_shape();
  if (!dims)
    user_error("value %" + std::to_string(v) + " of type " + g.type(v).str() +
                   " must have static dims here",
               location_of(g, v), "declare the dim static");
  return *dims;
}

void check_codegen_supported(const ir::Graph& g) {
  // What code generation needs static: a conv's weight (channels, window: its loop nest, GEMM
  // plan and packed panels).
  for (const ir::Node& n : g.nodes)
    if (n.op == ir::OpKind::Conv && !g.type(n.operands[1]).static_shape())
      user_error("conv: the weight " + g.type(n.operands[1]).str() +
                     " has dynamic dims, which CPU code generation does not support",
                 n.loc, "declare the dim static");
  for (size_t v = 0; v < g.num_values(); ++v) {
    const auto value = static_cast<ir::ValueId>(v);
    for (const ir::SymExpr& d : g.type(value).shape)
      for (const std::string& name : d.symbols()) {
        auto it = g.symbols.find(name);
        const std::string where = "dynamic dim " + name + " of %" + std::to_string(v) + " (" +
                                  g.type(value).str() + ")";
        if (it == g.symbols.end())
          user_error(where + " has no declared range", location_of(g, value),
                     "give the dim a range in the YAML, or declare the dim static");
        const ir::SymRange& r = it->second;
        if (r.max == INT64_MAX || r.max < r.min || r.max > (int64_t{1} << 40))
          user_error(where + " needs a finite maximum (the arena is sized for it)",
                     location_of(g, value), "give the dim a max, or declare the dim static");
        if (r.min < 2)
          user_error(where + " has range [" + std::to_string(r.min) + ", " +
                         std::to_string(r.max) + "], which includes size 0 or 1",
                     location_of(g, value),
                     "sizes 0 and 1 are compiled as static variants: start the range at 2, or "
                     "declare the dim static");
      }
  }
  // Buffers are sized for the maxima: every value must fit there (and in int64 arithmetic).
  const ir::SymBindings max = max_bindings(g);
  for (size_t v = 0; v < g.num_values(); ++v) {
    const auto value = static_cast<ir::ValueId>(v);
    double bytes = static_cast<double>(ir::dtype_size(g.type(value).dtype));
    for (const ir::SymExpr& d : g.type(value).shape)
      bytes *= static_cast<double>(std::max<int64_t>(planned_size(d, max), 0));
    if (bytes > static_cast<double>(int64_t{1} << 46))
      user_error("%" + std::to_string(v) + " (" + g.type(value).str() + ") needs " +
                     std::to_string(bytes / 1e12) + " TB at the dynamic dims' maxima",
                 location_of(g, value), "lower the dims' maxima, or declare the dim static");
  }
}

}  // namespace aotrace::lowering
