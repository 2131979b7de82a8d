// resolved_cpu / target_cpu_features / kernel_cpus (lowering.h): which CPUs the kernels are
// compiled for and the features each enables, from LLVM's CPU tables — recorded in the bundle
// for the runtime's hardware preflight and its choice of library at load.
// Test: runtime_tests Preflight.*, CpuLibraries.KernelCpus*.
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

namespace {
// The features of x86 CPU `cpu` and all they imply.
llvm::StringMap<bool> x86_cpu_features(llvm::StringRef cpu) {
  llvm::StringMap<bool> enabled;
  llvm::SmallVector<llvm::StringRef, 64> direct;
  llvm::X86::getFeaturesForCPU(cpu, direct);
  for (llvm::StringRef f : direct) {
    enabled[f] = true;
    llvm::X86::updateImpliedFeatures(f, true, enabled);  // sets what `f` implies, not `f`
  }
  return enabled;
}
}  // namespace

std::vector<std::string> target_cpu_features(const Options& options) {
  if (!is_x86_64(options)) return {};
  llvm::StringMap<bool> enabled;
  if (options.cpu == "native") llvm::sys::getHostCPUFeatures(enabled);
  else enabled = x86_cpu_features(resolved_cpu(options));
  std::vector<std::string> features;
  for (const auto& kv : enabled)
    if (kv.second) features.push_back(kv.first().str());
  std::sort(features.begin(), features.end());
  return features;
}

std::vector<std::string> kernel_cpus(const Options& options) {
  const std::string baseline = resolved_cpu(options);
  if (!options.cpu.empty() || !is_x86_64(options)) return {baseline};
  llvm::StringMap<bool> host;
  if (!llvm::sys::getHostCPUFeatures(host)) return {baseline};
  // What a level adds to the baseline, the host must have (LLVM's host detection does not
  // report every baseline feature, e.g. x87).
  const llvm::StringMap<bool> base = x86_cpu_features(baseline);
  auto host_runs = [&](llvm::StringRef level) {
    for (const auto& kv : x86_cpu_features(level))
      if (kv.second && !base.lookup(kv.first()) && !host.lookup(kv.first())) return false;
    return true;
  };
  for (const char* level : {"x86-64-v4", "x86-64-v3"})
    if (host_runs(level)) return {baseline, level};
  return {baseline};
}

}  // namespace aotrace::lowering
