// The FMA peak of this machine, measured on the spot for `make bench` (issue 14: sgemm 512³ is
// judged against it): independent chains of fused multiply-adds on vector registers, with the
// widest ISA the CPU has (AVX-512, AVX2 + FMA, else SSE2 multiply + add), on 1 thread and on N
// threads at once. Prints one JSON object:
//   {"isa": "avx2+fma", "threads": N, "gflops_1": X, "gflops_n": Y}
//
//   fma_peak [THREADS] [SECONDS]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// Independent accumulators, as many as the registers allow beside the two operands: at least
// latency (4) × FMA ports (2).
constexpr int kChains512 = 24, kChains = 12;
constexpr long kInner = 1 << 16;     // iterations between clock reads

// Each returns the flops done (2 per lane per FMA) and a value that keeps the work alive.
__attribute__((target("avx512f"))) double run_avx512(long rounds, float* sink) {
  __m512 acc[kChains512];
  for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long r = 0; r < rounds; ++r)
    for (long i = 0; i < kInner; ++i)
#pragma GCC unroll 32
      for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 s = acc[0];
  for (int c = 1; c < kChains512; ++c) s = _mm512_add_ps(s, acc[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, s);
  *sink = lanes[0];
  return 2.0 * 16 * kChains512 * static_cast<double>(kInner) * static_cast<double>(rounds);
}

__attribute__((target("avx2,fma"))) double run_avx2(long rounds, float* sink) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long r = 0; r < rounds; ++r)
    for (long i = 0; i < kInner; ++i)
#pragma GCC unroll 32
      for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  *sink = lanes[0];
  return 2.0 * 8 * kChains * static_cast<double>(kInner) * static_cast<double>(rounds);
}

double run_sse(long rounds, float* sink) {
  __m128 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm_set1_ps(1.0f + 0.001f * static_cast<float>(c));
  const __m128 a = _mm_set1_ps(0.999999f), b = _mm_set1_ps(1e-7f);
  for (long r = 0; r < rounds; ++r)
    for (long i = 0; i < kInner; ++i)
#pragma GCC unroll 32
      for (int c = 0; c < kChains; ++c) acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], a), b);
  __m128 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm_add_ps(s, acc[c]);
  *sink = _mm_cvtss_f32(s);
  return 2.0 * 4 * kChains * static_cast<double>(kInner) * static_cast<double>(rounds);
}

using Kernel = double (*)(long, float*);

// GFLOP/s of `threads` threads each running `kernel` for about `seconds`.
double measure(Kernel kernel, int threads, double seconds) {
  using clock = std::chrono::steady_clock;
  // Calibrate: rounds per thread for the time asked.
  float sink = 0;
  auto t0 = clock::now();
  long rounds = 1;
  while (std::chrono::duration<double>(clock::now() - t0).count() < 0.05) kernel(rounds, &sink), rounds *= 2;
  const double per_round = std::chrono::duration<double>(clock::now() - t0).count() / static_cast<double>(2 * rounds - 1);
  const long n = std::max(1L, static_cast<long>(seconds / per_round));
  std::vector<double> flops(static_cast<size_t>(threads));
  std::vector<float> sinks(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  t0 = clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { flops[static_cast<size_t>(t)] = kernel(n, &sinks[static_cast<size_t>(t)]); });
  for (auto& th : pool) th.join();
  const double elapsed = std::chrono::duration<double>(clock::now() - t0).count();
  double total = 0;
  for (double f : flops) total += f;
  if (sinks[0] == 12345.0f) std::puts("");  // keeps the chains alive
  return total / elapsed / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : static_cast<int>(std::thread::hardware_concurrency());
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  __builtin_cpu_init();
  Kernel kernel = run_sse;
  const char* isa = "sse2";
  if (__builtin_cpu_supports("avx512f")) kernel = run_avx512, isa = "avx512f";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernel = run_avx2, isa = "avx2+fma";
  // Best of three per thread count: a shared machine's noise only lowers a measurement.
  double one = 0, all = 0;
  for (int r = 0; r < 3; ++r) one = std::max(one, measure(kernel, 1, seconds / 3));
  for (int r = 0; r < 3; ++r) all = std::max(all, measure(kernel, threads, seconds / 3));
  std::printf("{\"isa\": \"%s\", \"threads\": %d, \"gflops_1\": %.1f, \"gflops_n\": %.1f}\n", isa, threads, one, all);
  return 0;
}
