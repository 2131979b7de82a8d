// lower_graph: the lowering pipeline, one pass per line (DESIGN §4, STYLE 4).
// Every pass is timed (LoweredVariant::timings, shown by `explain`), the graph is verified
// after each graph pass, and Options::dump (`compile --dump fuse,schedule` or `--dump all`; also
// AOTRACE_DUMP=after-<pass>[,…] or all) prints the result of a pass to stderr.
#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <mutex>
#include <sstream>
#include <type_traits>

#include "lowering/cpu/plan.h"
#include "lowering/cuda/cuda_backend.h"
#include "lowering/passes.h"

namespace aotrace::lowering {
namespace {

bool dump_requested(const Options& options, const std::string& pass) {
  for (const std::string& item : options.dump)
    if (item == "all" || item == pass || item == "after-" + pass) return true;
  const char* env = std::getenv("AOTRACE_DUMP");
  if (env == nullptr) return false;
  std::string spec = env;
  if (spec == "all") return true;
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');)
    if (item == "after-" + pass || item == pass) return true;
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
    for (const ir::SymExpr& e : k.loop_extents) s += e.str() + ",";
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
auto run_pass(const Options& options, std::vector<PassTiming>& timings, const std::string& name, Pass pass) {
  auto start = std::chrono::steady_clock::now();
  auto result = pass();
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  timings.push_back({name, took.count()});
  if constexpr (std::is_same_v<decltype(result), ir::Graph>) ir::verify(result);
  if (dump_requested(options, name)) {
    // Variants are lowered in parallel (--jobs): each dump is written whole, one at a time (piece
    // by piece, two variants' dumps interleaved mid-line).
    const std::string text = "// ----- after " + name + " -----\n" + describe(result);
    static std::mutex writing;
    std::lock_guard<std::mutex> hold(writing);
    std::cerr << text << std::flush;
  }
  return result;
}

// The CUDA pipeline after channels-last: the passes that follow there serve the CPU's caches
// and vectors (Winograd, materialised conv padding, packed weight panels); the GPU sorts the
// rows of topks over long axes whole (a thread block per row, not a thread), splits
// reductions of many positions into few outputs in two (to fill its grid), its own layout pass
// stores matmuls' weights [K, N], then fusion; cuda-plan maps each kernel's tasks to
// threads (lowering/cuda/).
LoweredVariant lower_for_cuda(ir::Graph g, const std::string& symbol_prefix, const Options& options, LoweredVariant out) {
  auto& t = out.timings;
  g = run_pass(options, t, "cuda-sort-wide-topks", [&] { return cuda::cuda_sort_wide_topks(std::move(g), options.cuda_block_row_min); });
  g = run_pass(options, t, "cuda-split-reductions", [&] { return cuda::cuda_split_reductions(std::move(g), options.cuda_split_reduce_chunk); });
  g = run_pass(options, t, "cuda-weight-layout", [&] { return cuda::cuda_weight_layout(std::move(g)); });
  out.graph = g;
  FusedGraph fused = run_pass(options, t, "fuse", [&] { return fuse(std::move(g)); });
  Schedule sched = run_pass(options, t, "schedule", [&] { return schedule(std::move(fused), symbol_prefix); });
  std::vector<cpu::CpuPlan> plans = run_pass(options, t, "cuda-plan", [&] { return cuda::plan_cuda_kernels(sched, options); });
  std::vector<ir::SymExpr> threads;
  std::vector<PassTiming> phases;
  out.object = run_pass(options, t, "codegen", [&] { return cuda::codegen_cuda(sched, plans, options, threads, &phases); });
  for (const PassTiming& ph : phases) t.push_back({"codegen." + ph.pass, ph.seconds});
  out.plan = run_pass(options, t, "memory-plan", [&] { return plan_memory(sched); });
  AOT_CHECK(out.plan.calls.size() == threads.size(), "one CUDA launch per scheduled kernel");
  for (size_t i = 0; i < threads.size(); ++i) {
    out.plan.calls[i].threads = threads[i];
    out.plan.calls[i].block = cuda::kBlock;
  }
  return out;
}

}  // namespace

const char* cuda_math_name(Options::CudaMath math) {
  switch (math) {
    case Options::CudaMath::f32: return "f32";
    case Options::CudaMath::tf32: return "tf32";
    case Options::CudaMath::f16: return "f16";
    case Options::CudaMath::bf16: return "bf16";
  }
  return "f32";
}

std::optional<Options::CudaMath> cuda_math_named(std::string_view name) {
  for (Options::CudaMath m : {Options::CudaMath::f32, Options::CudaMath::tf32, Options::CudaMath::f16, Options::CudaMath::bf16})
    if (name == cuda_math_name(m)) return m;
  return std::nullopt;
}

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = {"decompose", "fold-constants", "cse", "dce", "conv-taps", "channels-last", "winograd",
                                                 "pad-conv-inputs", "pack-weights", "cuda-sort-wide-topks", "cuda-split-reductions", "cuda-weight-layout", "fuse", "schedule", "cpu-plan", "cuda-plan",
                                                 "codegen", "memory-plan"};
  return names;
}

LoweredVariant lower_graph(const ir::Graph& graph, const std::string& symbol_prefix,
                           const Options& options) {
  LoweredVariant out;
  auto& t = out.timings;
  ir::verify(graph);
  // Symbols must be declared with a finite range: refuse a graph without before doing any work.
  check_codegen_supported(graph);
  // 1. Composites first, so every later pass (and the backend) sees primitives only.
  ir::Graph g = run_pass(options, t, "decompose", [&] { return decompose(graph); });
  // 2. Fold splat constants: decompositions and Python scalars leave constant arithmetic.
  g = run_pass(options, t, "fold-constants", [&] { return fold_constants(std::move(g)); });
  // 3. CSE after folding, so that equal folded constants merge too.
  g = run_pass(options, t, "cse", [&] { return cse(std::move(g)); });
  // 4. DCE last among graph passes: folding and CSE leave nodes without uses.
  g = run_pass(options, t, "dce", [&] { return dce(std::move(g)); });
  // 5. Conv taps that read only padding cut from their weights (a 3×3 conv of a 1×1 image is a
  //    1×1 conv): before the passes that treat 1×1 convs their own way.
  g = run_pass(options, t, "conv-taps", [&] { return conv_taps(std::move(g)); });
  // 6. Chains of depthwise and 1×1 convs channels-last ([N, H·W, C]): the 1×1 convs become
  //    matmuls, the depthwise convs elementwise taps (after DCE: only live convs; before
  //    pack-weights, which packs the new matmuls' weights).
  g = run_pass(options, t, "channels-last", [&] { return channels_last(std::move(g)); });
  if (options.device == Options::Device::cuda) return lower_for_cuda(std::move(g), symbol_prefix, options, std::move(out));
  // 7. 3×3 stride-1 convs as Winograd transforms around 16 or 36 GEMMs, where that pays (after DCE:
  //    only live convs; before padding: the input transform zero-fills the border itself).
  g = run_pass(options, t, "winograd", [&] { return winograd(std::move(g), options.winograd, options.winograd_tile); });
  // 8. Padding out of convs, into a pad that fusion materialises as the conv's input: the conv
  //    kernels then read without bounds checks.
  g = run_pass(options, t, "pad-conv-inputs", [&] { return pad_conv_inputs(std::move(g)); });
  // 9. GEMM weights into their panel layout, read in place by the kernels (the last graph pass:
  //    the views it leaves must reach fusion as they are).
  g = run_pass(options, t, "pack-weights", [&] { return pack_weights(std::move(g)); });
  out.graph = g;
  // 10. Fusion on the clean graph: which values are materialised, which inlined into kernels.
  FusedGraph fused = run_pass(options, t, "fuse", [&] { return fuse(std::move(g)); });
  // 11. Schedule: kernel order, buffers, loop nests, copies for aliased outputs.
  Schedule sched = run_pass(options, t, "schedule", [&] { return schedule(std::move(fused), symbol_prefix); });
  // 12. The CPU backend's plans (cpu/plan.h): how each GEMM kernel is blocked, as data, the same
  //     for every CPU codegen below.
  std::vector<cpu::CpuPlan> plans = run_pass(options, t, "cpu-plan", [&] { return cpu::plan_cpu_kernels(sched); });
  // 13. Codegen: one LLVM function per kernel, optimised (O2) and emitted as an ELF object; for
  //    each extra CPU too, on the same schedule, in threads (separate LLVMContexts). Timed per CPU.
  std::vector<std::future<ir::Bytes>> extra;
  std::vector<std::vector<PassTiming>> extra_timings(options.extra_cpus.size()), extra_phases(extra_timings.size());
  std::vector<PassTiming> phases;
  for (size_t i = 0; i < options.extra_cpus.size(); ++i)
    extra.push_back(std::async(std::launch::async, [&, i] {
      Options o = options;
      o.cpu = options.extra_cpus[i];
      o.extra_cpus.clear();
      return run_pass(o, extra_timings[i], "codegen-" + o.cpu, [&] { return codegen_cpu(sched, plans, o, &extra_phases[i]); });
    }));
  out.object = run_pass(options, t, "codegen", [&] {
    Options o = options;
    o.extra_cpus.clear();
    return codegen_cpu(sched, plans, o, &phases);
  });
  // The LLVM phases under their codegen: "codegen.llvm-opt", "codegen-x86-64-v4.llvm-mc".
  for (const PassTiming& ph : phases) t.push_back({"codegen." + ph.pass, ph.seconds});
  for (size_t i = 0; i < extra.size(); ++i) {
    out.extra_objects.push_back(extra[i].get());
    t.insert(t.end(), extra_timings[i].begin(), extra_timings[i].end());
    for (const PassTiming& ph : extra_phases[i]) t.push_back({extra_timings[i].back().pass + "." + ph.pass, ph.seconds});
  }
  // 14. Memory plan last: it needs the final kernel order to know each buffer's live range.
  out.plan = run_pass(options, t, "memory-plan", [&] { return plan_memory(sched); });
  return out;
}

}  // namespace aotrace::lowering
