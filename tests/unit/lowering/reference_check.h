// Test helper: compiles a graph, runs it through the plan runner and compares every output with
// the reference interpreter (ir::evaluate). Tolerances are written down once, per dtype class:
//   f32/f64   rtol 1e-4, atol 1e-5  (the kernels compute in the dtype, the reference in double)
//   f16/bf16  rtol 1e-2 / 2e-2, atol 1e-3 / 1e-2  (computed in f32, rounded only when stored)
//   integers and bool: exact.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "tests/unit/lowering/plan_runner.h"

namespace aotrace::lowering::testing {

struct Tolerance {
  double rtol, atol;
};

inline Tolerance tolerance_for(ir::DType t) {
  switch (t) {
    case ir::DType::f32: case ir::DType::f64: return {1e-4, 1e-5};
    case ir::DType::f16: return {1e-2, 1e-3};
    case ir::DType::bf16: return {2e-2, 1e-2};
    default: return {0, 0};
  }
}

// `base` for CUDA under grid emulation (lowering/cuda/): the GPU's kernels and thread mapping,
// run on this CPU.
inline Options cuda_emulation(Options base = {}) {
  base.device = Options::Device::cuda;
  base.cuda_grid_emulation = true;
  return base;
}

// Random inputs in [lo, hi) (integers: floor of that), one seed per input.
inline std::vector<ir::HostTensor> random_inputs(const ir::Graph& g, uint32_t seed, double lo,
                                                 double hi) {
  std::vector<ir::HostTensor> inputs;
  for (const auto& in : g.inputs) {
    std::vector<int64_t> shape;
    for (const auto& d : g.type(in.value).shape) shape.push_back(d.constant());
    inputs.push_back(random_tensor(shape, seed++, lo, hi, g.type(in.value).dtype));
  }
  return inputs;
}

// The thread counts of a CUDA variant's launches ("32*B").
inline std::multiset<std::string> launches_of(const LoweredVariant& v) {
  std::multiset<std::string> out;
  for (const auto& call : v.plan.calls) out.insert(call.threads.str());
  return out;
}

// The thread counts of `g`'s launches lowered for CUDA with the default options.
inline std::multiset<std::string> gpu_launches(const ir::Graph& g, const std::string& symbol_prefix) {
  Options gpu;
  gpu.device = Options::Device::cuda;
  return launches_of(lower_graph(g, symbol_prefix, gpu));
}

// Random inputs for the sizes in `b` of a graph's symbols (none: static shapes), one seed per
// input: floats in [lo, hi), integers in [0, hi).
inline std::vector<ir::HostTensor> inputs_at(const ir::Graph& g, const ir::SymBindings& b, uint32_t seed,
                                             double lo = -1, double hi = 1) {
  std::vector<ir::HostTensor> out;
  for (const auto& in : g.inputs) {
    std::vector<int64_t> shape;
    for (const ir::SymExpr& d : g.type(in.value).shape) shape.push_back(*d.evaluate(b));
    const ir::DType t = g.type(in.value).dtype;
    out.push_back(random_tensor(shape, seed++, ir::is_floating(t) ? lo : 0, hi, t));
  }
  return out;
}

// Compiles and runs `g` on `inputs`; every output must match ir::evaluate within its dtype's
// tolerance (or `tol` when given). For the baseline CPU (no Options::cpu), the CUDA kernels too
// (lowering/cuda/), under grid emulation: the GPU's mapping run on this CPU.
inline LoweredVariant expect_outputs_match(const ir::Graph& g,
                                           const std::vector<ir::HostTensor>& inputs,
                                           std::optional<Tolerance> tol = std::nullopt,
                                           const Options& options = {}) {
  std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
  auto check = [&](const Options& o, LoweredVariant* lowered) {
    std::vector<ir::HostTensor> actual = compile_and_run(g, inputs, lowered, o);
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
      Tolerance t = tol ? *tol : tolerance_for(expected[i].dtype);
      EXPECT_EQ(compare(actual[i], expected[i], t.rtol, t.atol), "")
          << "output " << i << " (" << ir::dtype_name(expected[i].dtype) << ")";
    }
  };
  LoweredVariant lowered;
  check(options, &lowered);
  if (options.cpu.empty() && options.device == Options::Device::cpu) {
    SCOPED_TRACE("CUDA grid emulation");
    LoweredVariant gpu;
    check(cuda_emulation(options), &gpu);
  }
  return lowered;
}

inline LoweredVariant expect_matches_reference_in(const ir::Graph& g, double lo, double hi,
                                                  uint32_t seed = 1,
                                                  std::optional<Tolerance> tol = std::nullopt,
                                                  const Options& options = {}) {
  return expect_outputs_match(g, random_inputs(g, seed, lo, hi), tol, options);
}

// On the x86-64-v2 baseline (4 lanes; and as CUDA kernels under grid emulation), and, where this
// machine has them, on x86-64-v3 (8 lanes: AVX2) and x86-64-v4 (16 lanes: AVX-512, where the
// GEMM takes two B panels per call); returns the baseline's lowering. `base`: the other options
// (the CPU is set on it).
inline LoweredVariant expect_on_every_cpu(const ir::Graph& g, double lo = -1, double hi = 1,
                                          std::optional<Tolerance> tol = std::nullopt,
                                          const Options& base = {}) {
  LoweredVariant baseline = expect_matches_reference_in(g, lo, hi, 1, tol, base);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    Options v3 = base;
    v3.cpu = "x86-64-v3";
    SCOPED_TRACE("x86-64-v3");
    expect_matches_reference_in(g, lo, hi, 1, tol, v3);
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    Options v4 = base;
    v4.cpu = "x86-64-v4";
    SCOPED_TRACE("x86-64-v4");
    expect_matches_reference_in(g, lo, hi, 1, tol, v4);
  }
  return baseline;
}

}  // namespace aotrace::lowering::testing
