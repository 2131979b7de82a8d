// resolved_cpu / target_cpu_features (lowering.h): which CPU the kernels are compiled for and
// the features that CPU enables, from LLVM's CPU tables — recorded in the bundle for the
// runtime's hardware preflight.
#include <algorithm>

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/TargetParser/X86TargetParser.h>

#include "lowering/lowering.h"

namespace aotrace::lowering {

namespace {
bool is_x86_64(const Options& options) {
  return llvm::Triple(resolved_triple(options)).getArch() == llvm::Triple::x86_64;
}
}  // namespace

std::string resolved_cpu(const Options& options) {
  if (options.cpu == "native") return llvm::sys::getHostCPUName().str();
  if (!options.cpu.empty()) return options.cpu;
  return is_x86_64(options) ? "x86-64-v2" : "generic";
}

std::vector<std::string> target_cpu_features(const Options& options) {
  if (!is_x86_64(options)) return {};
  llvm::StringMap<bool> enabled;
  if (options.cpu == "native") {
    llvm::sys::getHostCPUFeatures(enabled);
  } else {
    llvm::SmallVector<llvm::StringRef, 64> direct;
    llvm::X86::getFeaturesForCPU(resolved_cpu(options), direct);
    for (llvm::StringRef f : direct) {
      enabled[f] = true;
      llvm::X86::updateImpliedFeatures(f, true, enabled);  // sets what `f` implies, not `f`
    }
  }
  std::vector<std::string> features;
  for (const auto& kv : enabled)
    if (kv.second) features.push_back(kv.first().str());
  std::sort(features.begin(), features.end());
  return features;
}

}  // namespace aotrace::lowering
