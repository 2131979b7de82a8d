// make_golden (artifacts.h): golden vectors computed at compile time with the reference
// interpreter, so that a bundle can check its own kernels (`aotrace run --selftest`).
#include <cstdint>

#include "artifacts/artifacts.h"

namespace aotrace::artifacts {

std::vector<GoldenPair> make_golden(const ir::Graph& graph, int64_t max_elements) {
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

}  // namespace aotrace::artifacts
