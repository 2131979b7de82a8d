// Shared by the op and model tests: random inputs from a spec, and comparison of ir::evaluate
// results with torch eager under the tolerances written down once here.
//
// Tolerances (|got - want| <= atol + rtol * |want|; NaN must meet NaN, inf the same inf):
//   f32   atol 1e-5, rtol 1e-4   (the reference computes in double, torch in f32)
//   f64   atol 1e-10, rtol 1e-9
//   f16   atol 1e-2, rtol 1e-2   (both round each op's result to 11 bits)
//   bf16  atol 3e-2, rtol 3e-2   (8 bits)
//   integers and bool: exact
// Model tests (whole networks) use f32 atol 1e-4, rtol 1e-4, as issue 4 asks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "embed/embed.h"
#include "ir/ir.h"

namespace aotrace::testing {

struct InputSpec {
  embed::CaptureInput input;
  std::optional<std::pair<double, double>> range;  // {lo,hi}: integers inclusive
};

// "x:f32[2,3],i:i64[4]{0,3}"
std::vector<InputSpec> parse_inputs(const std::string& spec);
// Deterministic random values for `spec` (floats uniform in [-3, 3) unless a range is given;
// integers in [-5, 5]; bool fair coins).
ir::HostTensor random_input(const InputSpec& spec, uint64_t seed);

struct Tolerance {
  double atol, rtol;
};
Tolerance op_tolerance(ir::DType);

// Empty when equal within tolerance; else a description of the first mismatches.
std::string compare(const ir::HostTensor& got, const ir::HostTensor& want, std::optional<Tolerance> tol = {});

}  // namespace aotrace::testing
