// Hardware preflight (DESIGN §5): the CPU features a bundle's kernels need, checked against this
// CPU with cpuid (x86-64) before the kernels are loaded, and the choice among a bundle's kernel
// libraries (choose_cpu_library). Feature names are LLVM's ("sse4.2").
// Test: runtime_tests Preflight.*, CpuLibraries.*.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "aotrace_runtime.h"

namespace aotrace::rt {
namespace {

enum Reg : uint8_t { EAX, EBX, ECX, EDX };
enum OsState : uint8_t { kNone, kAvxState, kAvx512State };  // XCR0 state the feature needs

struct FeatureBit {
  const char* name;   // LLVM spelling
  uint32_t leaf;
  uint32_t subleaf;
  Reg reg;
  uint8_t bit;
  OsState os;
};

// The x86 features a kernel library may need, where cpuid says whether this CPU has them.
constexpr FeatureBit kX86Features[] = {
    {"cmov", 1, 0, EDX, 15, kNone},      {"cx8", 1, 0, EDX, 8, kNone},
    {"mmx", 1, 0, EDX, 23, kNone},       {"fxsr", 1, 0, EDX, 24, kNone},
    {"sse", 1, 0, EDX, 25, kNone},       {"sse2", 1, 0, EDX, 26, kNone},
    {"sse3", 1, 0, ECX, 0, kNone},       {"pclmul", 1, 0, ECX, 1, kNone},
    {"ssse3", 1, 0, ECX, 9, kNone},      {"fma", 1, 0, ECX, 12, kAvxState},
    {"cx16", 1, 0, ECX, 13, kNone},      {"sse4.1", 1, 0, ECX, 19, kNone},
    {"sse4.2", 1, 0, ECX, 20, kNone},    {"crc32", 1, 0, ECX, 20, kNone},
    {"movbe", 1, 0, ECX, 22, kNone},     {"popcnt", 1, 0, ECX, 23, kNone},
    {"aes", 1, 0, ECX, 25, kNone},       {"xsave", 1, 0, ECX, 26, kNone},
    {"avx", 1, 0, ECX, 28, kAvxState},   {"f16c", 1, 0, ECX, 29, kAvxState},
    {"bmi", 7, 0, EBX, 3, kNone},        {"avx2", 7, 0, EBX, 5, kAvxState},
    {"bmi2", 7, 0, EBX, 8, kNone},       {"avx512f", 7, 0, EBX, 16, kAvx512State},
    {"avx512dq", 7, 0, EBX, 17, kAvx512State}, {"avx512cd", 7, 0, EBX, 28, kAvx512State},
    {"avx512bw", 7, 0, EBX, 30, kAvx512State}, {"avx512vl", 7, 0, EBX, 31, kAvx512State},
    {"sahf", 0x80000001u, 0, ECX, 0, kNone},   {"lzcnt", 0x80000001u, 0, ECX, 5, kNone},
};

const FeatureBit* find_feature(const std::string& name) {
  for (const FeatureBit& f : kX86Features)
    if (name == f.name) return &f;
  return nullptr;
}

#if defined(__x86_64__) || defined(__i386__)
uint64_t xcr0() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(1, a, b, c, d);
  if (!(c & (1u << 27))) return 0;  // no OSXSAVE: the OS saves no extended state
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

bool host_has(const FeatureBit& f) {
  unsigned max_leaf = __get_cpuid_max(f.leaf & 0x80000000u, nullptr);
  if (max_leaf < f.leaf) return false;
  unsigned r[4] = {0, 0, 0, 0};
  __cpuid_count(f.leaf, f.subleaf, r[0], r[1], r[2], r[3]);
  if (!(r[f.reg] & (1u << f.bit))) return false;
  if (f.os == kAvxState) return (xcr0() & 0x6) == 0x6;
  if (f.os == kAvx512State) return (xcr0() & 0xe6) == 0xe6;
  return true;
}
#else
bool host_has(const FeatureBit&) { return false; }  // x86 features on another architecture
#endif

// `disabled` plus the names in AOTRACE_DISABLE_CPU_FEATURES (comma or space separated).
std::vector<std::string> with_disabled_from_environment(std::vector<std::string> disabled) {
  const char* env = std::getenv("AOTRACE_DISABLE_CPU_FEATURES");
  std::string name;
  for (const char* c = env ? env : ""; ; ++c) {
    if (*c == ',' || *c == ' ' || *c == '\0') {
      if (!name.empty()) disabled.push_back(name);
      name.clear();
      if (*c == '\0') break;
    } else {
      name += *c;
    }
  }
  return disabled;
}

bool runs_here(const CpuLibraryInfo& library, const std::vector<std::string>& disabled) {
  if (!missing_cpu_features(library.features).empty()) return false;
  for (const std::string& f : library.features)
    if (std::find(disabled.begin(), disabled.end(), f) != disabled.end()) return false;
  return true;
}

}  // namespace

int choose_cpu_library(const std::vector<CpuLibraryInfo>& libraries,
                       const std::vector<std::string>& disabled_by_caller) {
  if (libraries.empty()) return -1;
  const std::vector<std::string> disabled = with_disabled_from_environment(disabled_by_caller);
  for (size_t i = 1; i < libraries.size(); ++i)
    if (runs_here(libraries[i], disabled)) return static_cast<int>(i);
  return runs_here(libraries[0], disabled) ? 0 : -1;
}

bool cpu_feature_known(const std::string& name) { return find_feature(name) != nullptr; }

std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required) {
  std::vector<std::string> missing;
  for (const std::string& name : required) {
    const FeatureBit* f = find_feature(name);
    if (!f || !host_has(*f)) missing.push_back(name);
  }
  return missing;
}

}  // namespace aotrace::rt
