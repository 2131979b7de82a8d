// Hardware preflight, golden vectors, concurrent runs and failed writes (issue 5).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <thread>

#include "artifacts/runtime/aotrace_runtime.h"
#include "lowering/lowering.h"
#include "tiny_bundle.h"

// Counts this thread's operator new calls, for the no-allocation test below.
thread_local long g_allocations = 0;
void* operator new(size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;
using rt::DType;
using rt::TensorRef;

ir::HostTensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  return ir::HostTensor::from_f32(std::move(shape), values);
}

// The tiny bundle's function, by hand: (2 * (x + bias), x + bias) for x [B, 4].
artifacts::GoldenPair tiny_golden(int batch, float offset) {
  std::vector<float> x, sum, twice;
  for (int i = 0; i < batch * 4; ++i) {
    x.push_back(offset + 0.5f * static_cast<float>(i));
    sum.push_back(x.back() + static_cast<float>(i % 4 + 1));
    twice.push_back(2 * sum.back());
  }
  return {{f32({batch, 4}, x)}, {f32({batch, 4}, twice), f32({batch, 4}, sum)}};
}

artifacts::BundleSpec spec_with_golden() {
  artifacts::BundleSpec spec = tiny_bundle_spec();
  spec.entries[0].variants[0].golden = {tiny_golden(1, -1.0f)};
  spec.entries[0].variants[1].golden = {tiny_golden(2, 3.0f), tiny_golden(2, -7.0f)};
  return spec;
}

// What `aotrace compile` records: the CPU's features the runtime can check.
std::vector<std::string> kernel_cpu_features(const std::string& triple, const std::string& cpu) {
  std::vector<std::string> out;
  for (const auto& f : lowering::target_cpu_features(lowering::Options{triple, cpu}))
    if (rt::cpu_feature_known(f)) out.push_back(f);
  return out;
}

TEST(Preflight, KernelFeaturesFollowTheCpuChoice) {
  auto v2 = kernel_cpu_features("x86_64-unknown-linux-gnu", "");
  auto v3 = kernel_cpu_features("x86_64-unknown-linux-gnu", "x86-64-v3");
  auto has = [](const std::vector<std::string>& v, const char* f) {
    return std::find(v.begin(), v.end(), f) != v.end();
  };
  EXPECT_TRUE(has(v2, "sse4.2") && has(v2, "ssse3") && has(v2, "popcnt")) << v2.size();
  EXPECT_FALSE(has(v2, "avx"));
  EXPECT_TRUE(has(v3, "avx2") && has(v3, "fma") && has(v3, "avx") && has(v3, "sse4.2"));
  EXPECT_FALSE(has(v3, "avx512f"));
  EXPECT_EQ(lowering::resolved_cpu(lowering::Options{"x86_64-unknown-linux-gnu", ""}), "x86-64-v2");
  EXPECT_TRUE(kernel_cpu_features("aarch64-linux-gnu", "").empty());
  for (const auto& f : kernel_cpu_features("x86_64-unknown-linux-gnu", "x86-64-v4"))
    EXPECT_TRUE(rt::cpu_feature_known(f)) << f;
  // The portable baseline runs on every machine this project supports.
  EXPECT_TRUE(rt::missing_cpu_features(v2).empty());
  // "native" is this machine: nothing missing.
  auto native = kernel_cpu_features("x86_64-unknown-linux-gnu", "native");
  EXPECT_TRUE(has(native, "sse2"));
  EXPECT_TRUE(rt::missing_cpu_features(native).empty());
}

TEST(Preflight, BundleNeedingAFeatureThisCpuLacksIsRefusedAtOpen) {
  fs::path dir = fresh_temp_dir("preflight") / "tiny.aot";
  artifacts::BundleSpec spec = tiny_bundle_spec();
  spec.cpu = "x86-64-v2";
  spec.cpu_features = kernel_cpu_features(spec.triple, spec.cpu);
  artifacts::write_bundle(spec, dir);
  auto ok = rt::Bundle::open(dir.string());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->cpu(), "x86-64-v2");
  EXPECT_EQ(ok->cpu_features(), spec.cpu_features);

  spec.cpu = "future-cpu";
  spec.cpu_features.push_back("quantum-simd");  // no CPU has it: the runtime cannot confirm it
  artifacts::write_bundle(spec, dir);
  auto b = rt::Bundle::open(dir.string());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), rt::StatusCode::unsupported);
  EXPECT_NE(b.status().message().find("compiled for CPU future-cpu, which need CPU features this "
                                      "machine lacks: quantum-simd"),
            std::string::npos)
      << b.status().message();

  // A real feature this machine lacks, when there is one among the x86-64-v4 set.
  auto missing = rt::missing_cpu_features(kernel_cpu_features(spec.triple, "x86-64-v4"));
  if (!missing.empty()) {
    spec.cpu = "x86-64-v4";
    spec.cpu_features = kernel_cpu_features(spec.triple, "x86-64-v4");
    artifacts::write_bundle(spec, dir);
    auto v4 = rt::Bundle::open(dir.string());
    ASSERT_FALSE(v4.ok());
    EXPECT_NE(v4.status().message().find(missing.front()), std::string::npos) << v4.status().message();
  }
}

TEST(Golden, SelftestChecksEveryPair) {
  fs::path dir = fresh_temp_dir("golden") / "tiny.aot";
  artifacts::write_bundle(spec_with_golden(), dir);
  EXPECT_TRUE(fs::exists(dir / "golden/forward.v1.1.out0.npy"));
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  size_t checked = 0;
  rt::Status s = b->selftest(&checked);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(checked, 3u);
}

TEST(Golden, WrongGoldenOutputFailsTheSelftest) {
  fs::path dir = fresh_temp_dir("golden_bad") / "tiny.aot";
  artifacts::BundleSpec spec = spec_with_golden();
  spec.entries[0].variants[1].golden[1].outputs[1].set(5, 1000.0);  // not what the kernels give
  artifacts::write_bundle(spec, dir);
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  rt::Status s = b->selftest();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("variant v1 failed: output 1 (golden/forward.v1.1.out1.npy): element 5"),
            std::string::npos)
      << s.message();
}

// 8 threads × 1000 runs on both variants, each checked against its own expected output: runs
// share no scratch memory (the plan keeps x + bias in the arena between two kernels).
TEST(Concurrency, EightThreadsGiveTheSameResultsAsOne) {
  fs::path dir = fresh_temp_dir("threads") / "tiny.aot";
  artifacts::write_bundle(tiny_bundle_spec(), dir);
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  auto e = b->entry("forward");
  ASSERT_TRUE(e.ok());
  std::atomic<int> wrong{0}, failed{0};
  auto worker = [&](int t) {
    int batch = 1 + t % 2;
    std::vector<float> x(static_cast<size_t>(batch * 4)), out0(x.size()), out1(x.size());
    std::vector<TensorRef> in = {TensorRef(DType::f32, {batch, 4}, x.data())};
    std::vector<TensorRef> out = {TensorRef(DType::f32, {batch, 4}, out0.data()),
                                  TensorRef(DType::f32, {batch, 4}, out1.data())};
    for (int call = 0; call < 1000; ++call) {
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(t * 1000 + call) + 0.25f * i;
      if (!e->run_into(in, out).ok()) ++failed;
      for (size_t i = 0; i < x.size(); ++i) {
        float sum = x[i] + static_cast<float>(i % 4 + 1);
        if (out1[i] != sum || out0[i] != 2 * sum) ++wrong;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Concurrency, RunIntoAllocatesNothingOnceWarm) {
  fs::path dir = fresh_temp_dir("no_alloc") / "tiny.aot";
  artifacts::write_bundle(tiny_bundle_spec(), dir);
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  auto e = b->entry("forward");
  ASSERT_TRUE(e.ok());
  std::vector<float> x(8, 1.0f), out0(8), out1(8);
  std::vector<TensorRef> in = {TensorRef(DType::f32, {2, 4}, x.data())};
  std::vector<TensorRef> out = {TensorRef(DType::f32, {2, 4}, out0.data()),
                                TensorRef(DType::f32, {2, 4}, out1.data())};
  ASSERT_TRUE(e->run_into(in, out).ok());
  long before = g_allocations;
  bool all_ok = true;
  for (int i = 0; i < 100; ++i) all_ok &= e->run_into(in, out).ok();
  long allocations = g_allocations - before;
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(out1[5], 1.0f + 2.0f);
}

// A write that fails half-way leaves the old bundle in place and no temporary directory.
TEST(NothingLost, FailedWriteLeavesTheOldBundle) {
  fs::path root = fresh_temp_dir("nothing_lost");
  fs::path dir = root / "tiny.aot";
  artifacts::write_bundle(tiny_bundle_spec(), dir);
  const std::string old_fb = read_bytes(dir / "bundle.fb");
  artifacts::BundleSpec bad = spec_with_golden();
  bad.entries[0].variants[1].golden[0].outputs.pop_back();  // fails after weights and kernels
  EXPECT_THROW(artifacts::write_bundle(bad, dir), InternalError);
  EXPECT_EQ(read_bytes(dir / "bundle.fb"), old_fb);
  EXPECT_TRUE(rt::Bundle::open(dir.string()).ok());
  size_t entries = 0;
  for (const auto& f : fs::directory_iterator(root)) {
    ++entries;
    EXPECT_EQ(f.path().filename(), "tiny.aot");
  }
  EXPECT_EQ(entries, 1u);
}

// Only a bundle (or an empty folder) is replaced: a folder of the user's, or a file, is refused
// before anything is written, and stays as it was.
TEST(NothingLost, WriteRefusesWhatIsNotABundle) {
  fs::path root = fresh_temp_dir("nothing_lost_refuse");
  fs::create_directories(root / "notes");
  { std::ofstream(root / "notes" / "todo.txt") << "mine"; }
  { std::ofstream(root / "x.npy") << "mine too"; }
  for (const char* name : {"notes", "x.npy"}) {
    try {
      artifacts::write_bundle(tiny_bundle_spec(), root / name);
      ADD_FAILURE() << name << " was replaced";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("not an aotrace bundle"), std::string::npos) << e.what();
      EXPECT_EQ(e.hint(), "remove it or choose another -o");
    }
  }
  EXPECT_EQ(read_bytes(root / "notes" / "todo.txt"), "mine");
  EXPECT_EQ(read_bytes(root / "x.npy"), "mine too");
  size_t entries = 0;
  for (const auto& f : fs::directory_iterator(root)) entries += f.path().filename().string()[0] == '.';
  EXPECT_EQ(entries, 0u) << "no temporary directory is left";
  fs::create_directories(root / "empty");
  artifacts::write_bundle(tiny_bundle_spec(), root / "empty");
  EXPECT_TRUE(rt::Bundle::open((root / "empty").string()).ok());
  artifacts::write_bundle(tiny_bundle_spec(), root / "empty");  // now a bundle: replaced
  EXPECT_TRUE(rt::Bundle::open((root / "empty").string()).ok());
}

}  // namespace
}  // namespace aotrace::testing
