// plan_cuda_kernels (pipeline pass "cuda-plan"): the CUDA mapping of each kernel's tasks, as
// data. No GEMM, Winograd or depthwise blocking (those plans are for CPU caches and vectors):
// every kernel is the emitter's generic loop, cut into one task per output element where it has
// an innermost dim, so that a launch has a thread per element and neighbouring threads touch
// neighbouring addresses. Reductions keep one task per output (its reduction loop inside), those
// that keep the innermost axis too (CpuPlan::column_chunk 0). Kernels whose reductions are warp
// matmuls (cuda_backend.h) take a warp per task (CpuPlan::lanes).
// Test: lowering_tests Cuda.*.
#include <optional>

#include "lowering/cuda/cuda_backend.h"

namespace aotrace::lowering::cuda {

bool warp_matmul(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max) {
  if (n.op != ir::OpKind::Matmul || n.results.size() != 1 || g.type(n.results[0]).dtype != ir::DType::f32) return false;
  const ir::Shape& a = g.type(n.operands[0]).shape;
  std::optional<int64_t> k = a.empty() ? std::nullopt : a.back().as_constant();
  return k && *k >= 256 && planned_size(g.type(n.results[0]).numel(), max) <= (int64_t{1} << 17);
}

// An f32 reduce_sum over at least 256 positions (static) into at most 2^17 outputs: a layer
// norm's row sums, a mean pool over a long axis.
bool warp_sum(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max) {
  if (n.op != ir::OpKind::ReduceSum || n.results.size() != 1 || g.type(n.results[0]).dtype != ir::DType::f32 ||
      g.type(n.operands[0]).dtype != ir::DType::f32)
    return false;
  const ir::TensorType& in = g.type(n.operands[0]);
  const ir::TensorType& out = g.type(n.results[0]);
  std::optional<int64_t> in_count = in.numel().as_constant(), out_count = out.numel().as_constant();
  // Reduced positions per output: the ratio of the static element counts.
  if (!in_count || !out_count || *out_count == 0) return false;
  return *in_count / *out_count >= 256 && planned_size(out.numel(), max) <= (int64_t{1} << 17);
}

// Warp lanes for a kernel whose reductions are all warp matmuls or warp sums (another reduction
// would run in every lane alike: right, but 32 times over).
int64_t kernel_lanes(const ir::Graph& g, const ScheduledKernel& k, const ir::SymBindings& max) {
  bool any = false;
  for (int i : k.nodes) {
    const ir::Node& n = g.nodes[static_cast<size_t>(i)];
    const ir::OpCategory c = ir::op_info(n.op).category;
    if (c == ir::OpCategory::Matmul || c == ir::OpCategory::Reduce) {
      if (!warp_matmul(g, n, max) && !warp_sum(g, n, max)) return 1;
      any = true;
    } else if (c == ir::OpCategory::Scan || c == ir::OpCategory::Conv ||
               c == ir::OpCategory::Pool || c == ir::OpCategory::Sort) {
      return 1;
    }
  }
  return any && k.loop_extents.size() >= 2 ? kWarpLanes : 1;
}

std::vector<cpu::CpuPlan> plan_cuda_kernels(const Schedule& s) {
  std::vector<cpu::CpuPlan> plans;
  const ir::SymBindings max = max_bindings(s.fused.graph);
  for (const ScheduledKernel& k : s.kernels) {
    cpu::CpuPlan plan;
    plan.symbol = k.symbol;
    plan.work = cpu::work_estimate(cpu::KernelGraph(s.fused.graph, k));
    plan.row_chunk = k.loop_extents.size() >= 2 ? 1 : 0;
    plan.column_chunk = 0;
    plan.lanes = kernel_lanes(s.fused.graph, k, max);
    plans.push_back(plan);
  }
  return plans;
}

}  // namespace aotrace::lowering::cuda
