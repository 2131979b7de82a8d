// plan_cuda_kernels (pipeline pass "cuda-plan"): the CUDA mapping of each kernel's tasks, as
// data. No GEMM, Winograd or depthwise blocking (those plans are for CPU caches and vectors):
// every kernel is the emitter's generic loop, cut into one task per output element where it has
// an innermost dim, so that a launch has a thread per element and neighbouring threads touch
// neighbouring addresses. Reductions keep one task per output (its reduction loop inside), those
// that keep the innermost axis too (CpuPlan::column_chunk 0).
// Test: lowering_tests Cuda.*.
#include "lowering/cuda/cuda_backend.h"

namespace aotrace::lowering::cuda {

std::vector<cpu::CpuPlan> plan_cuda_kernels(const Schedule& s) {
  std::vector<cpu::CpuPlan> plans;
  for (const ScheduledKernel& k : s.kernels) {
    cpu::CpuPlan plan;
    plan.symbol = k.symbol;
    plan.work = cpu::work_estimate(cpu::KernelGraph(s.fused.graph, k));
    plan.row_chunk = k.loop_extents.size() >= 2 ? 1 : 0;
    plan.column_chunk = 0;
    plans.push_back(plan);
  }
  return plans;
}

}  // namespace aotrace::lowering::cuda
