// ThreadPool (thread_pool.h): the kernels' parallel_for.
#include "thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <system_error>

namespace aotrace::rt {
namespace {

using Clock = std::chrono::steady_clock;

// Inside a parallel_for body or on a worker thread: parallel_for runs inline.
thread_local bool t_in_parallel_region = false;

// How long an idle worker spins on the job word before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// A job word or a slot word (thread_pool.h): generation | two 16-bit fields.
constexpr uint64_t word(uint32_t gen, uint64_t high, uint64_t low) { return uint64_t{gen} << 32 | high << 16 | low; }
constexpr uint32_t word_gen(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
constexpr int64_t word_high(uint64_t w) { return static_cast<int64_t>(w >> 16 & 0xffff); }
constexpr int64_t word_low(uint64_t w) { return static_cast<int64_t>(w & 0xffff); }

// [begin, end) of part `i` of `parts` over [0, n): sizes differ by at most one.
inline void split(int64_t n, int64_t parts, int64_t i, int64_t* begin, int64_t* end) {
  const int64_t base = n / parts, extra = n % parts;
  *begin = i * base + std::min(i, extra);
  *end = *begin + base + (i < extra ? 1 : 0);
}

// The chunks of a loop over [0, n) with `threads` threads: one per index, or `per_thread` per
// thread where n allows.
inline int64_t chunk_count(int64_t n, int64_t threads, int64_t per_thread) { return std::min(n, threads * per_thread); }

// [begin, end) of chunk `i` (chunk_count) over [0, n): each thread's share of [0, n) (sizes
// within one of each other) split into its `per_thread` chunks, so that the shares stay even
// when n is not a multiple of the chunk count (28 tasks in 8 chunks of 4 and 3 gave one thread
// 16 and the other 12).
inline void chunk_range(int64_t n, int64_t threads, int64_t per_thread, int64_t i, int64_t* begin, int64_t* end) {
  if (chunk_count(n, threads, per_thread) == n) {
    *begin = i;
    *end = i + 1;
    return;
  }
  int64_t share_begin = 0, share_end = 0, b = 0, e = 0;
  split(n, threads, i / per_thread, &share_begin, &share_end);
  split(share_end - share_begin, per_thread, i % per_thread, &b, &e);
  *begin = share_begin + b;
  *end = share_begin + e;
}

void run_inline(int64_t n, aotrace_parallel_body body, void* closure) {
  const bool outer = t_in_parallel_region;
  t_in_parallel_region = true;
  body(closure, 0, n);
  t_in_parallel_region = outer;
}

}  // namespace

int default_num_threads() {
  if (const char* env = std::getenv("AOTRACE_NUM_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return static_cast<int>(std::min(v, 1024L));
  }
#if defined(__linux__)
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

ThreadPool::ThreadPool(int num_threads) : slots_(static_cast<size_t>(std::clamp(num_threads, 1, kMaxThreads))) {
  const int workers = std::clamp(num_threads, 1, kMaxThreads) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) {
    try {
      workers_.emplace_back([this, i] { worker_loop(i + 1); });
    } catch (const std::system_error&) {
      break;  // the OS refused a thread: run with the ones we have
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for_abi(void* pool, int64_t n, aotrace_parallel_body body, void* closure) {
  static_cast<ThreadPool*>(pool)->parallel_for(n, body, closure);
}

void ThreadPool::parallel_for(int64_t n, aotrace_parallel_body body, void* closure) {
  if (n <= 0) return;
  if (n == 1 || workers_.empty() || t_in_parallel_region ||
      busy_.exchange(true, std::memory_order_acquire)) {
    run_inline(n, body, closure);
    return;
  }
  const int64_t threads = num_threads();
  const int64_t chunks = chunk_count(n, threads, kChunksPerThread);
  body_.store(body, std::memory_order_relaxed);
  closure_.store(closure, std::memory_order_relaxed);
  n_.store(n, std::memory_order_relaxed);
  remaining_.store(chunks, std::memory_order_relaxed);
  const uint32_t gen = word_gen(job_.load(std::memory_order_relaxed)) + 1;
  for (int64_t t = 0; t < threads; ++t)  // thread t owns chunks [t·chunks / threads, (t+1)·chunks / threads)
    slots_[static_cast<size_t>(t)].word.store(
        word(gen, static_cast<uint64_t>((t + 1) * chunks / threads), static_cast<uint64_t>(t * chunks / threads)),
        std::memory_order_relaxed);
  // Publish (seq_cst: ordered with the sleepers_ load below, see worker_loop).
  job_.store(word(gen, 0, 0), std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }

  t_in_parallel_region = true;
  const int64_t ran = run_chunks(gen, 0);
  t_in_parallel_region = false;
  // Wait for the chunks workers claimed; they are running, so this is short.
  if (remaining_.fetch_sub(ran, std::memory_order_acq_rel) != ran) {
    for (int spins = 0; remaining_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < 4096) cpu_relax();
      else std::this_thread::yield();  // a worker was descheduled mid-chunk
    }
  }
  busy_.store(false, std::memory_order_release);
}

int64_t ThreadPool::run_chunks(uint32_t gen, int self) {
  int64_t ran = 0;
  const int threads = num_threads();
  for (int k = 0; k < threads; ++k) {  // its own range, then the others' in turn
    std::atomic<uint64_t>& slot = slots_[static_cast<size_t>((self + k) % threads)].word;
    uint64_t w = slot.load(std::memory_order_relaxed);
    while (word_gen(w) == gen && word_low(w) < word_high(w)) {
      if (!slot.compare_exchange_weak(w, w + 1, std::memory_order_acquire, std::memory_order_relaxed))
        continue;  // `w` now holds the current word
      int64_t begin = 0, end = 0;
      chunk_range(n_.load(std::memory_order_relaxed), threads, kChunksPerThread, word_low(w), &begin, &end);
      body_.load(std::memory_order_relaxed)(closure_.load(std::memory_order_relaxed), begin, end);
      ++ran;
      w = slot.load(std::memory_order_relaxed);
    }
  }
  return ran;
}

void ThreadPool::worker_loop(int self) {
  t_in_parallel_region = true;  // a body calling parallel_for runs its loop inline
  uint32_t seen = 0;            // the generation at construction
  for (;;) {
    uint64_t job = job_.load(std::memory_order_acquire);
    Clock::time_point spin_start = Clock::now();
    for (int spins = 1; word_gen(job) == seen; ++spins) {
      if (stop_.load(std::memory_order_relaxed)) return;
      cpu_relax();
      job = job_.load(std::memory_order_acquire);
      if (spins % 64 != 0 || Clock::now() - spin_start < kSpin) continue;
      // Sleep. The dispatcher stores job_ then loads sleepers_; we add to sleepers_ then load
      // job_ (all seq_cst), so at least one of us sees the other: no lost wake-up.
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] {
        job = job_.load(std::memory_order_seq_cst);
        return stop_.load(std::memory_order_relaxed) || word_gen(job) != seen;
      });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      if (stop_.load(std::memory_order_relaxed)) return;
      spin_start = Clock::now();
    }
    seen = word_gen(job);
    if (const int64_t ran = run_chunks(seen, self); ran > 0)
      remaining_.fetch_sub(ran, std::memory_order_release);
  }
}

}  // namespace aotrace::rt
