// The target side of the CPU backend: triple and CPU from Options (default: the host triple,
// normalised, with the portable "x86-64-v2" CPU), the LLVM O2 pipeline (so loops vectorise),
// and ELF object emission into memory. Test: lowering_tests Target.*, Determinism.*.
#include <chrono>
#include <mutex>

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "lowering/cpu/llvm_backend.h"

namespace aotrace::lowering {

std::string resolved_triple(const Options& options) {
  std::string t = options.triple.empty() ? llvm::sys::getDefaultTargetTriple() : options.triple;
  return llvm::Triple::normalize(t);
}

namespace cpu {

void initialise_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();  // inline assembly (the GEMM's CPUID) is assembled by them
  });
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Options& options) {
  initialise_llvm_targets();
  std::string triple = resolved_triple(options);
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr)
    user_error("unsupported target triple '" + triple + "': " + error, {},
               "use x86_64-linux-gnu or aarch64-linux-gnu");
  const std::string cpu = resolved_cpu(options);
  llvm::TargetOptions target_options;
  auto level = options.opt_level <= 0 ? llvm::CodeGenOpt::None : llvm::CodeGenOpt::Default;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, options.features, target_options, llvm::Reloc::PIC_, std::nullopt, level));
  AOT_CHECK(tm != nullptr, "no target machine for " + triple + " / " + cpu);
  return tm;
}

CpuTarget cpu_target(const llvm::TargetMachine& tm) {
  CpuTarget t;
  const llvm::MCSubtargetInfo* sti = tm.getMCSubtargetInfo();
  if (tm.getTargetTriple().getArch() == llvm::Triple::x86_64 && sti != nullptr) {
    if (sti->checkFeatures("+avx512f")) t.f32_lanes = 16;
    else if (sti->checkFeatures("+avx")) t.f32_lanes = 8;
    t.half_conversions = sti->checkFeatures("+f16c");
    t.bf16_dot = sti->checkFeatures("+avx512bf16");
    t.bf16_dot_at_run_time = !t.bf16_dot && sti->checkFeatures("+avx512bw");
    const std::string features = tm.getTargetFeatureString().str();
    t.bf16_dot_features = (features.empty() ? "" : features + ",") + "+avx512bf16";
  }
  if (tm.getTargetTriple().isAArch64()) t.half_conversions = true;  // FCVT is base ARMv8 FP
  return t;
}

static void optimise(llvm::Module& module, llvm::TargetMachine& tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level <= 0   ? llvm::OptimizationLevel::O0
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

ir::Bytes optimise_and_emit(llvm::Module& module, llvm::TargetMachine& tm, int opt_level, std::vector<PassTiming>* phases,
                            llvm::CodeGenFileType file_type) {
  module.setTargetTriple(tm.getTargetTriple().str());
  module.setDataLayout(tm.createDataLayout());
  std::string problems;
  llvm::raw_string_ostream problems_stream(problems);
  if (llvm::verifyModule(module, &problems_stream))
    internal_error("generated LLVM IR is invalid:\n" + problems);
  // Where the target has 512-bit vectors, the loop vectoriser may use them too (LLVM's x86 tuning
  // prefers 256 bits): the GEMM and depthwise kernels already run on them, and the epilogues'
  // exp/sigmoid polynomials take half the instructions per element at 16 lanes.
  if (cpu_target(tm).f32_lanes == 16)
    for (llvm::Function& f : module)
      if (!f.isDeclaration()) f.addFnAttr("prefer-vector-width", "512");
  // Copy and fill loops stay loops, vectorised for the target, instead of becoming calls to the C
  // library: the kernels' short row copies (a GEMM tile into its output) cost more in a call,
  // and the library's unversioned memcpy binds to glibc's oldest symbol, whose SSE2 copy took 5-7%
  // of resnet18 and resnet50.
  for (llvm::Function& f : module)
    if (!f.isDeclaration())
      for (const char* name : {"no-builtin-memcpy", "no-builtin-memmove", "no-builtin-memset"}) f.addFnAttr(name);
  auto opt_start = std::chrono::steady_clock::now();
  optimise(module, tm, opt_level);
  promote_half_vectors(module);
  auto mc_start = std::chrono::steady_clock::now();
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out, nullptr, file_type))
    internal_error("the target " + tm.getTargetTriple().str() + " cannot emit this kind of file");
  pm.run(module);
  if (phases != nullptr) {
    const auto end = std::chrono::steady_clock::now();
    phases->push_back({"llvm-opt", std::chrono::duration<double>(mc_start - opt_start).count()});
    phases->push_back({"llvm-mc", std::chrono::duration<double>(end - mc_start).count()});
  }
  return ir::Bytes(buffer.begin(), buffer.end());
}

}  // namespace cpu
}  // namespace aotrace::lowering
