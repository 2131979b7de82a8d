// check_target (lowering.h): `--triple` and `--cpu` against what the CPU backend can build,
// before any capture or lowering. LLVM itself aborts on a CPU it does not know for a 64-bit
// triple ("64-bit code requested on a subtarget that doesn't support it!"), and ld.lld fails
// late on a non-ELF triple: both are the user's input, so they are refused here with the
// valid choices. The CPU table is LLVM's own (MCSubtargetInfo), the one codegen uses.
// Test: errors_tests TargetErrors.*.
#include <memory>
#include <mutex>

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "lowering/lowering.h"

namespace aotrace::lowering {

namespace {

const char* kSupportedTriples = "x86_64-*-linux-gnu and aarch64-*-linux-gnu";

void initialise_llvm_target_tables() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargetMCs();
  });
}

// A few names of `arch` that LLVM 16 knows, for the message (the full table is long).
bool is_host_arch(llvm::Triple::ArchType arch) {
  return llvm::Triple(llvm::sys::getProcessTriple()).getArch() == arch;
}

std::string some_cpu_names(const llvm::MCSubtargetInfo& sti, llvm::Triple::ArchType arch) {
  std::vector<const char*> names;
  if (is_host_arch(arch)) names.push_back("native");  // this machine's CPU
  if (arch == llvm::Triple::x86_64)
    names.insert(names.end(), {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "skylake-avx512", "znver4"});
  else
    names.insert(names.end(), {"generic", "cortex-a72", "neoverse-n1", "neoverse-v1", "apple-m1"});
  std::string out;
  for (const char* n : names)
    if (std::string_view(n) == "native" || sti.isCPUStringValid(n)) out += (out.empty() ? "" : ", ") + std::string(n);
  return out + ", …";
}

}  // namespace

void check_target(const Options& options) {
  const std::string triple = resolved_triple(options);
  const llvm::Triple t(triple);
  const bool arch_ok = t.getArch() == llvm::Triple::x86_64 || t.getArch() == llvm::Triple::aarch64;
  if (!arch_ok || !t.isOSLinux() || !t.isOSBinFormatELF())
    user_error("target triple '" + options.triple + "' (" + triple +
                   ") is not supported: aotrace builds ELF kernel libraries for Linux only; supported triples are " +
                   kSupportedTriples,
               {}, "use --triple x86_64-linux-gnu or --triple aarch64-linux-gnu, or leave --triple out to build for this machine");
  if (options.cpu.empty()) return;
  if (options.cpu == "native" && !is_host_arch(t.getArch()))
    user_error("--cpu native names this machine's CPU, which cannot run " + triple + " code", {},
               "name a CPU of the target with --cpu, or leave --cpu out for the target's portable baseline");

  initialise_llvm_target_tables();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  AOT_CHECK(target != nullptr, "LLVM has no target for the supported triple " + triple + ": " + error);
  std::unique_ptr<llvm::MCSubtargetInfo> table(target->createMCSubtargetInfo(triple, "", ""));
  AOT_CHECK(table != nullptr, "no subtarget info for " + triple);
  const std::string cpu = resolved_cpu(options);
  const std::string list_all = "`llc-16 -mtriple=" + triple + " -mcpu=help` lists every CPU name LLVM 16 knows";
  const std::string names = some_cpu_names(*table, t.getArch());
  const std::string fix = "leave --cpu out for the portable baseline (plus this machine's level), or name one of "
                          "LLVM's CPUs; " + list_all;
  if (!table->isCPUStringValid(cpu)) {
    if (options.cpu == "native")
      user_error("--cpu native names this machine's CPU (" + cpu + "), which LLVM does not know for " + triple, {},
                 "name a CPU of the target with --cpu (" + names + "), or leave --cpu out; " + list_all);
    user_error("unknown CPU '" + cpu + "' for " + triple + "; valid names: " + names, {}, fix);
  }
  if (t.getArch() == llvm::Triple::x86_64) {  // a 32-bit x86 CPU ("i686") cannot run x86_64 code
    std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, cpu, ""));
    if (sti == nullptr || !sti->checkFeatures("+64bit"))
      user_error("CPU '" + cpu + "' is a 32-bit x86 CPU and cannot run " + triple + " code; valid names: " + names, {}, fix);
  }
}

}  // namespace aotrace::lowering
