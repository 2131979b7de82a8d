// lower_graph: the lowering pipeline, one pass per line (DESIGN §4, STYLE 4).
// Every pass is timed (LoweredVariant::timings, shown by `explain`), the graph is verified
// after each graph pass, and AOTRACE_DUMP=after-<pass>[,after-<pass>…] or AOTRACE_DUMP=all
// prints the result of a pass to stderr.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <type_traits>

#include "lowering/passes.h"

namespace aotrace::lowering {
namespace {

bool dump_requested(const std::string& pass) {
  const char* env = std::getenv("AOTRACE_DUMP");
  if (env == nullptr) return false;
  std::string spec = env;
  if (spec == "all") return true;
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');)
    if (item == "after-" + pass) return true;
  return false;
}

std::string describe(const ir::Graph& g) { return g.str(); }
std::string describe(const FusedGraph& f) {
  std::string s = f.graph.str();
  for (size_t k = 0; k < f.kernels.size(); ++k) {
    s += "kernel " + std::to_string(k) + ": root %" + std::to_string(f.kernels[k].root) + " reads";
    for (ir::ValueId r : f.kernels[k].reads) s += " %" + std::to_string(r);
    s += "\n";
  }
  return s;
}
std::string describe(const Schedule& sch) {
  std::string s;
  for (const auto& k : sch.kernels) {
    s += k.symbol + ": %" + std::to_string(k.root) + " loops [";
    for (int64_t e : k.loop_extents) s += std::to_string(e) + ",";
    s += "] buffers";
    for (int32_t b : k.buffers) s += " " + std::to_string(b);
    s += "\n";
  }
  return s;
}
std::string describe(const ir::Bytes& object) {
  return std::to_string(object.size()) + " bytes of object code\n";
}
std::string describe(const ir::ExecutionPlan& p) {
  return std::to_string(p.calls.size()) + " calls, arena " + std::to_string(p.arena_bytes) +
         " bytes\n";
}

// Runs one pass: times it, verifies a resulting graph, dumps it when asked.
template <class Pass>
auto run_pass(std::vector<PassTiming>& timings, const std::string& name, Pass pass) {
  auto start = std::chrono::steady_clock::now();
  auto result = pass();
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  timings.push_back({name, took.count()});
  if constexpr (std::is_same_v<decltype(result), ir::Graph>) ir::verify(result);
  if (dump_requested(name))
    std::cerr << "// ----- after " << name << " -----\n" << describe(result);
  return result;
}

}  // namespace

LoweredVariant lower_graph(const ir::Graph& graph, const std::string& symbol_prefix,
                           const Options& options) {
  LoweredVariant out;
  auto& t = out.timings;
  ir::verify(graph);
  // Static shapes only, for now: refuse a symbolic graph before doing any work.
  check_codegen_supported(graph);
  // 1. Composites first, so every later pass (and the backend) sees primitives only.
  ir::Graph g = run_pass(t, "decompose", [&] { return decompose(graph); });
  // 2. Fold splat constants: decompositions and Python scalars leave constant arithmetic.
  g = run_pass(t, "fold-constants", [&] { return fold_constants(std::move(g)); });
  // 3. CSE after folding, so that equal folded constants merge too.
  g = run_pass(t, "cse", [&] { return cse(std::move(g)); });
  // 4. DCE last among graph passes: folding and CSE leave nodes without uses.
  g = run_pass(t, "dce", [&] { return dce(std::move(g)); });
  // 5. Fusion on the clean graph: which values are materialised, which inlined into kernels.
  FusedGraph fused = run_pass(t, "fuse", [&] { return fuse(std::move(g)); });
  // 6. Schedule: kernel order, buffers, loop nests, copies for aliased outputs.
  Schedule sched = run_pass(t, "schedule", [&] { return schedule(std::move(fused), symbol_prefix); });
  // 7. Codegen: one LLVM function per kernel, optimised (O2) and emitted as an ELF object.
  out.object = run_pass(t, "codegen", [&] { return codegen_cpu(sched, options); });
  // 8. Memory plan last: it needs the final kernel order to know each buffer's live range.
  out.plan = run_pass(t, "memory-plan", [&] { return plan_memory(sched); });
  return out;
}

}  // namespace aotrace::lowering
