// Test helper: lowers a graph, links the object into a .so, dlopens it and runs the
// ExecutionPlan the way the runtime does (one arena, kernels called in order).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "lowering/lowering.h"

namespace aotrace::lowering::testing {

class LoadedLibrary {
 public:
  explicit LoadedLibrary(const ir::Bytes& so);  // writes it to a temp dir and dlopens it
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;
  void* symbol(const std::string& name) const;

 private:
  std::string dir_;
  void* handle_ = nullptr;
};

// The symbols of `graph` bound from the input shapes (each input dim that is a symbol takes the
// size given), checked against every input dim and the symbols' ranges; throws on a mismatch.
ir::SymBindings bind_symbols(const ir::Graph& graph, const std::vector<ir::HostTensor>& inputs);

// Runs `plan` from `lib` on `inputs` with the weights of `graph`; returns the outputs. Symbols
// are bound from the input shapes (bind_symbols) and passed to every kernel in the order of
// Graph::symbols; outputs are allocated at their sizes for those bindings, the arena at
// plan.arena_bytes (laid out for the symbols' maxima).
std::vector<ir::HostTensor> run_plan(const LoadedLibrary& lib, const ir::ExecutionPlan& plan,
                                     const ir::Graph& graph,
                                     const std::vector<ir::HostTensor>& inputs);

// lower_graph + link_cpu_library + run_plan, for the CPU of `options` (default: the x86-64-v2
// baseline, 4-lane vectors).
std::vector<ir::HostTensor> compile_and_run(const ir::Graph& graph,
                                            const std::vector<ir::HostTensor>& inputs,
                                            LoweredVariant* lowered_out = nullptr,
                                            const Options& options = {});

// Random tensors with a fixed seed (uniform in [lo, hi)).
ir::HostTensor random_tensor(std::vector<int64_t> shape, uint32_t seed, double lo = -1,
                             double hi = 1, ir::DType dtype = ir::DType::f32);
std::shared_ptr<const ir::Bytes> random_weight_bytes(std::vector<int64_t> shape, uint32_t seed);

// "" when close (|a-b| <= atol + rtol*|b| everywhere, NaNs matching), else a description.
std::string compare(const ir::HostTensor& actual, const ir::HostTensor& expected,
                    double rtol = 1e-4, double atol = 1e-5);

}  // namespace aotrace::lowering::testing
