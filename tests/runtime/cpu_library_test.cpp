// Kernel libraries per CPU (issue 5, format 1.2): `compile` builds the portable baseline plus the
// host's faster level (lowering::kernel_cpus); Bundle::open loads the fastest library this CPU
// runs, falls back to the baseline, and says which (Bundle::cpu, cpu_library, cpu_libraries).
// Here with the hand-written test kernels standing in for every library; bundle_cli_tests checks
// compiled bundles through the CLI.
#include <gtest/gtest.h>

#include <cstdlib>

#include "artifacts/runtime/aotrace_runtime.h"
#include "bundle_generated.h"
#include "lowering/lowering.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> kernel_cpu_features(const std::string& cpu) {
  std::vector<std::string> out;
  for (const auto& f : lowering::target_cpu_features(lowering::Options{"x86_64-unknown-linux-gnu", cpu}))
    if (rt::cpu_feature_known(f)) out.push_back(f);
  return out;
}

// The tiny bundle with a baseline needing sse2 and faster "libraries" (the same test kernels):
// one needing a feature no CPU has, then one every x86-64 CPU runs.
artifacts::BundleSpec spec_with_faster_libraries() {
  artifacts::BundleSpec spec = tiny_bundle_spec();
  spec.cpu = "x86-64";
  spec.cpu_features = {"sse2"};
  spec.faster_cpu_libraries = {{"future-cpu", {"sse2", "quantum-simd"}, spec.cpu_library},
                               {"ssse3-cpu", {"sse2", "ssse3"}, spec.cpu_library}};
  return spec;
}

// 2 * (x + bias) and x + bias on a fixed input, through `b`.
std::vector<float> run_tiny(const rt::Bundle& b) {
  auto entry = b.entry("forward");
  EXPECT_TRUE(entry.ok());
  std::vector<float> x = {1, -2, 3.5f, 4, 0.25f, 6, -7, 8};
  auto outs = entry->run({rt::TensorRef{rt::DType::f32, {2, 4}, x.data()}});
  EXPECT_TRUE(outs.ok()) << outs.status().message();
  std::vector<float> all;
  for (const rt::Tensor& t : *outs)
    all.insert(all.end(), t.data_as<float>(), t.data_as<float>() + t.numel());
  return all;
}

TEST(CpuLibraries, KernelCpusArePortableBaselinePlusTheHostLevel) {
  const std::vector<std::string> cpus = lowering::kernel_cpus(lowering::Options{"x86_64-unknown-linux-gnu", ""});
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(cpus.front(), "x86-64-v2");
  ASSERT_LE(cpus.size(), 2u);
  if (cpus.size() == 2) {
    EXPECT_TRUE(cpus[1] == "x86-64-v3" || cpus[1] == "x86-64-v4") << cpus[1];
    EXPECT_TRUE(rt::missing_cpu_features(kernel_cpu_features(cpus[1])).empty()) << cpus[1];
  }
#if defined(__x86_64__)
  // Every machine with AVX2 and FMA gets at least x86-64-v3 (the build machines have them).
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
    EXPECT_EQ(cpus.size(), 2u);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    EXPECT_EQ(cpus.back(), "x86-64-v4");
  else
    EXPECT_NE(cpus.back(), "x86-64-v4");
#endif
  // --cpu NAME: exactly that CPU; other targets: one library.
  EXPECT_EQ(lowering::kernel_cpus(lowering::Options{"x86_64-unknown-linux-gnu", "x86-64-v3"}),
            std::vector<std::string>{"x86-64-v3"});
  EXPECT_EQ(lowering::kernel_cpus(lowering::Options{"aarch64-linux-gnu", ""}),
            std::vector<std::string>{"generic"});
}

TEST(CpuLibraries, OpenLoadsTheFastestLibraryThisCpuRuns) {
  fs::path dir = fresh_temp_dir("cpu_libs") / "tiny.aot";
  artifacts::write_bundle(spec_with_faster_libraries(), dir);
  EXPECT_TRUE(fs::exists(dir / "cpu/x86_64-unknown-linux-gnu.so"));
  EXPECT_TRUE(fs::exists(dir / "cpu/x86_64-unknown-linux-gnu.ssse3-cpu.so"));
  EXPECT_TRUE(fs::exists(dir / "cpu/x86_64-unknown-linux-gnu.future-cpu.so"));
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->format_minor(), rt::kFormatMinor);
  ASSERT_EQ(b->cpu_libraries().size(), 3u);
  EXPECT_EQ(b->cpu_libraries()[0].path, "cpu/x86_64-unknown-linux-gnu.so");
  EXPECT_EQ(b->cpu_libraries()[1].cpu, "future-cpu");  // fastest first, as written
  EXPECT_EQ(b->cpu(), "ssse3-cpu");                    // future-cpu needs what no CPU has
  EXPECT_EQ(b->cpu_library(), "cpu/x86_64-unknown-linux-gnu.ssse3-cpu.so");
  EXPECT_EQ(b->cpu_features(), (std::vector<std::string>{"sse2", "ssse3"}));
  size_t checked = 0;
  EXPECT_TRUE(b->selftest(&checked).ok());
}

TEST(CpuLibraries, DisabledFeaturesFallBackToTheBaselineWithTheSameResults) {
  fs::path dir = fresh_temp_dir("cpu_libs_off") / "tiny.aot";
  artifacts::write_bundle(spec_with_faster_libraries(), dir);
  auto fast = rt::Bundle::open(dir.string());
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  rt::OpenOptions options;
  options.disabled_cpu_features = {"ssse3"};
  auto base = rt::Bundle::open(dir.string(), options);
  ASSERT_TRUE(base.ok()) << base.status().message();
  EXPECT_EQ(base->cpu(), "x86-64");
  EXPECT_EQ(base->cpu_library(), "cpu/x86_64-unknown-linux-gnu.so");
  EXPECT_EQ(run_tiny(*fast), run_tiny(*base));

  // The same through the environment (what the CLI tests and aotrace_run use).
  ASSERT_EQ(::setenv("AOTRACE_DISABLE_CPU_FEATURES", "avx512f, ssse3", 1), 0);
  auto env = rt::Bundle::open(dir.string());
  ::unsetenv("AOTRACE_DISABLE_CPU_FEATURES");
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ(env->cpu_library(), "cpu/x86_64-unknown-linux-gnu.so");

  // Disabling what the baseline needs leaves no library: refused, saying why.
  options.disabled_cpu_features = {"sse2"};
  auto none = rt::Bundle::open(dir.string(), options);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), rt::StatusCode::unsupported);
  EXPECT_NE(none.status().message().find("disabled by OpenOptions::disabled_cpu_features or "
                                         "AOTRACE_DISABLE_CPU_FEATURES"),
            std::string::npos)
      << none.status().message();
}

TEST(CpuLibraries, ChooseCpuLibraryPrefersTheFirstFasterOneThatRuns) {
  std::vector<rt::CpuLibraryInfo> libs = {{"base.so", "base", {"sse2"}},
                                          {"fast.so", "fast", {"sse2", "quantum-simd"}},
                                          {"mid.so", "mid", {"sse2"}}};
  EXPECT_EQ(rt::choose_cpu_library(libs), 2);
  EXPECT_EQ(rt::choose_cpu_library(libs, {"sse2"}), -1);
  libs.pop_back();
  EXPECT_EQ(rt::choose_cpu_library(libs), 0);
  EXPECT_EQ(rt::choose_cpu_library({}), -1);
  EXPECT_EQ(rt::choose_cpu_library({{"old.so", "", {}}}), 0);  // format 1.0: nothing recorded
}

TEST(CpuLibraries, AFasterLibraryMissingFromTheBundleIsCorruption) {
  fs::path dir = fresh_temp_dir("cpu_libs_missing") / "tiny.aot";
  artifacts::write_bundle(spec_with_faster_libraries(), dir);
  fs::remove(dir / "cpu/x86_64-unknown-linux-gnu.future-cpu.so");  // never loaded here, still checked
  auto b = rt::Bundle::open(dir.string());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), rt::StatusCode::data_loss);
  EXPECT_NE(b.status().message().find("file cpu/x86_64-unknown-linux-gnu.future-cpu.so is missing"),
            std::string::npos)
      << b.status().message();
}

TEST(CpuLibraries, ABundleWithOneLibraryReportsIt) {
  fs::path dir = fresh_temp_dir("cpu_libs_one") / "tiny.aot";
  artifacts::BundleSpec spec = tiny_bundle_spec();
  spec.cpu = "x86-64-v2";
  spec.cpu_features = kernel_cpu_features("x86-64-v2");
  artifacts::write_bundle(spec, dir);
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->cpu_libraries().size(), 1u);
  EXPECT_EQ(b->cpu(), "x86-64-v2");
  EXPECT_EQ(b->cpu_library(), "cpu/x86_64-unknown-linux-gnu.so");
}

// A format 1.1 bundle (one library, no faster_cpu_libraries) still loads, its library chosen.
TEST(CpuLibraries, AnOlderMinorBundleLoadsItsOneLibrary) {
  fs::path dir = fresh_temp_dir("cpu_libs_1_1") / "tiny.aot";
  artifacts::BundleSpec spec = tiny_bundle_spec();
  spec.cpu = "x86-64-v2";
  spec.cpu_features = kernel_cpu_features("x86-64-v2");
  artifacts::write_bundle(spec, dir);
  std::string bytes = without_footer(read_bytes(dir / "bundle.fb"));
  ASSERT_EQ(fb::GetBundle(bytes.data())->faster_cpu_libraries(), nullptr);
  ASSERT_TRUE(fb::GetMutableBundle(bytes.data())->mutate_format_minor(1));
  write_bytes(dir / "bundle.fb", with_footer(bytes));
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->format_minor(), 1u);
  EXPECT_EQ(b->cpu_library(), "cpu/x86_64-unknown-linux-gnu.so");
  EXPECT_EQ(b->cpu(), "x86-64-v2");
}

}  // namespace
}  // namespace aotrace::testing
