// Runtime overheads (issue 6; goal: guard check + dispatch under 200 ns), on the hand-written
// bundle of tests/runtime (parallel_bundle_spec: entry 'add', z = x + y, 2 inputs, 10 guards;
// variant v0 is f32[16] with a serial kernel, v1 f32[100003] with one parallel loop).
//
//   build/bench/dispatch_bench [--benchmark_filter=Dispatch]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "artifacts/artifacts.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/thread_pool.h"
#include "tests/runtime/tiny_bundle.h"

namespace {
namespace fs = std::filesystem;
using namespace aotrace;
using rt::DType;
using rt::TensorRef;

const fs::path& bundle_dir() {
  static const fs::path dir = [] {
    fs::path d = testing::fresh_temp_dir("dispatch_bench") / "parallel.aot";
    artifacts::write_bundle(testing::parallel_bundle_spec(), d);
    return d;
  }();
  return dir;
}

rt::Bundle open_bundle(int threads) {
  rt::OpenOptions options;
  options.num_threads = threads;
  auto b = rt::Bundle::open(bundle_dir().string(), options);
  if (!b.ok()) {
    std::fprintf(stderr, "dispatch_bench: %s\n", b.status().message().c_str());
    std::exit(1);
  }
  return std::move(*b);
}

// x, y and z of `n` floats, as the entry's input and output refs.
struct AddBuffers {
  explicit AddBuffers(int64_t n)
      : x(static_cast<size_t>(n), 1.0f), y(x.size(), 2.0f), z(x.size()),
        inputs{TensorRef(DType::f32, {n}, x.data()), TensorRef(DType::f32, {n}, y.data())},
        outputs{TensorRef(DType::f32, {n}, z.data())} {}
  std::vector<float> x, y, z;
  std::vector<TensorRef> inputs, outputs;
};

// Guards of both variants' inputs: rank, dtype and dims of x and y (first variant matches).
void BM_GuardCheck(benchmark::State& state) {
  rt::Bundle bundle = open_bundle(1);
  rt::Entry entry = *bundle.entry("add");
  AddBuffers buf(16);
  for (auto _ : state) {
    auto v = entry.select(buf.inputs);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_GuardCheck);

// The whole call on a 16-element add: guards, run slot, pointer tables, one kernel call.
// Arg: threads of the bundle's pool (the kernel is serial: the pool must cost nothing).
void BM_GuardCheckAndDispatch(benchmark::State& state) {
  rt::Bundle bundle = open_bundle(static_cast<int>(state.range(0)));
  rt::Entry entry = *bundle.entry("add");
  AddBuffers buf(16);
  for (auto _ : state) {
    rt::Status s = entry.run_into(buf.inputs, buf.outputs);
    benchmark::DoNotOptimize(s);
  }
  state.counters["threads"] = static_cast<double>(bundle.num_threads());
}
BENCHMARK(BM_GuardCheckAndDispatch)->Arg(1)->Arg(2)->UseRealTime();

// One parallel_for over the pool's threads with an empty body: the fork-join round trip.
void BM_ParallelForRoundTrip(benchmark::State& state) {
  rt::ThreadPool pool(static_cast<int>(state.range(0)));
  auto body = [](void* closure, int64_t begin, int64_t end) {
    benchmark::DoNotOptimize(closure);
  };
  for (auto _ : state) pool.parallel_for(pool.num_threads(), body, nullptr);
}
BENCHMARK(BM_ParallelForRoundTrip)->Arg(1)->Arg(2)->UseRealTime();

// A memory-bound parallel kernel (100003-element add) through the runtime with 1 and 2 threads.
void BM_ParallelKernel(benchmark::State& state) {
  rt::Bundle bundle = open_bundle(static_cast<int>(state.range(0)));
  rt::Entry entry = *bundle.entry("add");
  AddBuffers buf(100003);
  for (auto _ : state) {
    rt::Status s = entry.run_into(buf.inputs, buf.outputs);
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(state.iterations() * 3 * 100003 * 4);
}
BENCHMARK(BM_ParallelKernel)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fs::remove_all(bundle_dir().parent_path());
  return 0;
}
