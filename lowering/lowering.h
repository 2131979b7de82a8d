// lowering/ — from a captured graph to native code and a plan (DESIGN §4).
//
//   lower_graph(): decompose → fold constants → CSE → DCE → fuse → schedule → codegen → memory
//   plan, listed in lowering/pipeline.cpp. Produces one object file per variant and its plan.
//   link_cpu_library(): links the variants' objects with ld.lld-16 into one shared library.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace aotrace::lowering {

struct Options {
  std::string triple;    // empty: the host's ("x86_64-unknown-linux-gnu")
  std::string cpu;       // empty: "x86-64-v2" portable baseline
  std::string features;  // extra LLVM features ("+avx2,+fma"); empty: those of `cpu`
  int opt_level = 2;
};

struct PassTiming {
  std::string pass;
  double seconds = 0;
};

struct LoweredVariant {
  ir::ExecutionPlan plan;
  ir::Bytes object;                  // ELF relocatable object with the plan's kernels
  std::vector<PassTiming> timings;
  int num_kernels() const { return static_cast<int>(plan.calls.size()); }
};

// `symbol_prefix` makes kernel symbols unique across variants in one library ("forward_v0_").
LoweredVariant lower_graph(const ir::Graph& graph, const std::string& symbol_prefix,
                           const Options& options);

// Links objects into a shared library (bytes of the .so) with ld.lld-16.
ir::Bytes link_cpu_library(const std::vector<ir::Bytes>& objects, const Options& options);

// The triple lower_graph uses for `options` (host default resolved).
std::string resolved_triple(const Options& options);

}  // namespace aotrace::lowering
