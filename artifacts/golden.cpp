// make_golden (artifacts.h): the golden vectors a bundle checks its own kernels with
// (`aotrace run --selftest`). They come from torch eager: the compiler passes the inputs the
// entry's real call got and the outputs it gave. The reference interpreter (ir::evaluate) is
// only the fallback when those do not fit the graph — a capture bug, reported by the caller.
#include <cstdint>

#include "artifacts/artifacts.h"

namespace aotrace::artifacts {
namespace {

// Why `t` is not a tensor of `type`, or "" when it is. A symbolic dim binds its symbol the
// first time (`bindings`), and must equal its value after.
std::string mismatch(const ir::HostTensor& t, const ir::TensorType& type, ir::SymBindings& bindings) {
  ir::HostTensor want;
  want.dtype = type.dtype;
  for (size_t i = 0; i < type.shape.size(); ++i) {
    const ir::SymExpr& d = type.shape[i];
    if (d.node().kind == ir::SymNode::Kind::Symbol && i < t.shape.size())
      bindings.emplace(d.node().name, t.shape[i]);
    want.shape.push_back(d.evaluate(bindings).value_or(-1));
  }
  auto describe = [](const ir::HostTensor& h) {
    std::string s = std::string(ir::dtype_name(h.dtype)) + "[";
    for (size_t i = 0; i < h.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(h.shape[i]);
    return s + "]";
  };
  if (t.dtype != want.dtype || t.shape != want.shape) return "eager gave " + describe(t) + ", the graph " + describe(want);
  if (t.data.size() != static_cast<size_t>(t.numel()) * ir::dtype_size(t.dtype)) return "eager data of the wrong size";
  return "";
}

// Why `eager` does not fit `graph`'s inputs and outputs, or "" when it does.
std::string eager_mismatch(const ir::Graph& graph, const GoldenPair& eager) {
  if (eager.inputs.size() != graph.inputs.size())
    return std::to_string(eager.inputs.size()) + " eager inputs for " + std::to_string(graph.inputs.size()) + " graph inputs";
  if (eager.outputs.size() != graph.outputs.size())
    return std::to_string(eager.outputs.size()) + " eager outputs for " + std::to_string(graph.outputs.size()) + " graph outputs";
  ir::SymBindings bindings;
  for (size_t i = 0; i < eager.inputs.size(); ++i)
    if (std::string m = mismatch(eager.inputs[i], graph.type(graph.inputs[i].value), bindings); !m.empty())
      return "input " + std::to_string(i) + ": " + m;
  for (size_t i = 0; i < eager.outputs.size(); ++i)
    if (std::string m = mismatch(eager.outputs[i], graph.type(graph.outputs[i]), bindings); !m.empty())
      return "output " + std::to_string(i) + ": " + m;
  return "";
}

// The fallback: fixed-seed inputs, floats in [-1, 1), and the outputs ir::evaluate gives.
std::vector<GoldenPair> evaluated_golden(const ir::Graph& graph, int64_t max_elements) {
  GoldenPair pair;
  uint64_t state = 0x9e3779b97f4a7c15ull;  // fixed seed: the same graph gives the same bundle
  auto next_unit = [&state] {              // splitmix64 → [-1, 1)
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) / static_cast<double>(uint64_t{1} << 52) - 1.0;
  };
  int64_t elements = 0;
  for (const auto& in : graph.inputs) {
    const ir::TensorType& type = graph.type(in.value);
    auto shape = type.static_shape();
    if (!shape || !ir::is_floating(type.dtype)) return {};  // indices etc.: no random values
    ir::HostTensor t = ir::HostTensor::zeros(type.dtype, *shape);
    elements += t.numel();
    if (elements > max_elements) return {};
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, next_unit());
    pair.inputs.push_back(std::move(t));
  }
  pair.outputs = ir::evaluate(graph, pair.inputs);
  return {std::move(pair)};
}

}  // namespace

std::vector<GoldenPair> make_golden(const ir::Graph& graph, const std::optional<GoldenPair>& eager,
                                    std::string* fallback_reason, int64_t max_elements) {
  // Random numbers: eager's come from torch's generator, the bundle's from its own. The pair is
  // the eager call's inputs, the generator state (seed 0, offset 0) and what the reference
  // implementations give for them, which the kernels reproduce exactly.
  if (graph.rng_input >= 0) {
    if (!eager || eager->inputs.size() + 1 != graph.inputs.size()) return {};
    GoldenPair pair;
    pair.inputs = eager->inputs;
    pair.inputs.insert(pair.inputs.begin() + graph.rng_input, ir::HostTensor::zeros(ir::DType::i64, {2}));
    int64_t elements = 0;
    for (const auto& t : pair.inputs) elements += t.numel();
    if (elements > max_elements) return {};
    pair.outputs = ir::evaluate(graph, pair.inputs);
    for (const auto& t : pair.outputs) elements += t.numel();
    if (elements > max_elements) return {};
    return {std::move(pair)};
  }
  std::string why = eager ? eager_mismatch(graph, *eager) : "no eager outputs";
  if (why.empty()) {
    int64_t elements = 0;
    for (const auto& t : eager->inputs) elements += t.numel();
    for (const auto& t : eager->outputs) elements += t.numel();
    if (elements > max_elements) return {};  // keep bundles small: no golden vectors
    return {*eager};
  }
  if (fallback_reason) *fallback_reason = why;
  return evaluated_golden(graph, max_elements);
}

}  // namespace aotrace::artifacts
