// codegen_cpu: the scheduled kernels of one variant as one LLVM module → one ELF object.
// Test: lowering_tests EndToEnd.* (run the kernels), Determinism.SameObjectTwice.
#include <chrono>
#include <set>

#include <llvm/IR/LLVMContext.h>

#include "lowering/cpu/llvm_backend.h"

namespace aotrace::lowering {

ir::Bytes codegen_cpu(const Schedule& s, const Options& options, std::vector<PassTiming>* phases) {
  const auto start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  llvm::Module module("aotrace_kernels", context);
  module.setSourceFileName("aotrace_kernels");
  std::unique_ptr<llvm::TargetMachine> tm = cpu::make_target_machine(options);
  cpu::CpuTarget target = cpu::cpu_target(*tm);
  // Kernels with the same code share a symbol (schedule): emitted once.
  std::set<std::string> emitted;
  for (const ScheduledKernel& k : s.kernels)
    if (emitted.insert(k.symbol).second) cpu::emit_kernel(module, s.fused.graph, k, target);
  if (phases != nullptr)
    phases->push_back({"llvm-ir", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  return cpu::optimise_and_emit(module, *tm, options.opt_level, phases);
}

}  // namespace aotrace::lowering
