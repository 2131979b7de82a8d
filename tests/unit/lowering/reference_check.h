// Test helper: compiles a graph, runs it through the plan runner and compares every output with
// the reference interpreter (ir::evaluate). Tolerances are written down once, per dtype class:
//   f32/f64   rtol 1e-4, atol 1e-5  (the kernels compute in the dtype, the reference in double)
//   f16/bf16  rtol 1e-2 / 2e-2, atol 1e-3 / 1e-2  (computed in f32, rounded only when stored)
//   integers and bool: exact.
#pragma once

#include <gtest/gtest.h>

#include <functional>

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

// Compiles and runs `g` on `inputs`; every output must match ir::evaluate within its dtype's
// tolerance (or `tol` when given).
inline LoweredVariant expect_outputs_match(const ir::Graph& g,
                                           const std::vector<ir::HostTensor>& inputs,
                                           std::optional<Tolerance> tol = std::nullopt,
                                           const Options& options = {}) {
  std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
  LoweredVariant lowered;
  std::vector<ir::HostTensor> actual = compile_and_run(g, inputs, &lowered, options);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    Tolerance t = tol ? *tol : tolerance_for(expected[i].dtype);
    EXPECT_EQ(compare(actual[i], expected[i], t.rtol, t.atol), "")
        << "output " << i << " (" << ir::dtype_name(expected[i].dtype) << ")";
  }
  return lowered;
}

inline LoweredVariant expect_matches_reference_in(const ir::Graph& g, double lo, double hi,
                                                  uint32_t seed = 1,
                                                  std::optional<Tolerance> tol = std::nullopt,
                                                  const Options& options = {}) {
  return expect_outputs_match(g, random_inputs(g, seed, lo, hi), tol, options);
}

}  // namespace aotrace::lowering::testing
