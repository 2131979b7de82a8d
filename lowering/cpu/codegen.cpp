// codegen_cpu: the scheduled kernels of one variant, with their CPU plans (cpu/plan.h), as one
// LLVM module → one ELF object, taken
// from Options::object_cache when the same module was compiled for the same target before.
// The phases then say llvm-cache-hit instead of llvm-opt and llvm-mc.
// Test: lowering_tests EndToEnd.* (run the kernels), Determinism.SameObjectTwice.
#include <chrono>
#include <set>

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include "lowering/cpu/llvm_backend.h"

namespace aotrace::lowering {

ir::Bytes codegen_cpu(const Schedule& s, const std::vector<cpu::CpuPlan>& plans, const Options& options,
                      std::vector<PassTiming>* phases) {
  AOT_CHECK(plans.size() == s.kernels.size(), "codegen needs one CPU plan per scheduled kernel");
  const auto start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  llvm::Module module("aotrace_kernels", context);
  module.setSourceFileName("aotrace_kernels");
  std::unique_ptr<llvm::TargetMachine> tm = cpu::make_target_machine(options);
  cpu::CpuTarget target = cpu::cpu_target(*tm);
  if (target.half_conversions) cpu::set_half_conversions(module);
  // Kernels with the same code share a symbol (schedule): emitted once.
  std::set<std::string> emitted;
  for (size_t i = 0; i < s.kernels.size(); ++i)
    if (emitted.insert(s.kernels[i].symbol).second) cpu::emit_kernel(module, s.fused.graph, s.kernels[i], plans[i], target);
  if (phases != nullptr)
    phases->push_back({"llvm-ir", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  if (options.object_cache == nullptr) return cpu::optimise_and_emit(module, *tm, options.opt_level, phases);
  const auto lookup_start = std::chrono::steady_clock::now();
  std::string material = "aotrace object 1\n" AOTRACE_VERSION "\nLLVM " LLVM_VERSION_STRING "\n" +
                         tm->getTargetTriple().str() + "\n" + tm->getTargetCPU().str() + "\n" +
                         tm->getTargetFeatureString().str() + "\nO" + std::to_string(options.opt_level) + "\n";
  llvm::raw_string_ostream ir(material);
  module.print(ir, nullptr);
  ir.flush();
  if (std::optional<ir::Bytes> hit = options.object_cache->lookup(material)) {
    if (phases != nullptr)
      phases->push_back({"llvm-cache-hit", std::chrono::duration<double>(std::chrono::steady_clock::now() - lookup_start).count()});
    return *hit;
  }
  ir::Bytes object = cpu::optimise_and_emit(module, *tm, options.opt_level, phases);
  options.object_cache->store(material, object);
  return object;
}

}  // namespace aotrace::lowering
