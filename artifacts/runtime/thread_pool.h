// The runtime's thread pool (DESIGN §5): what kernels reach through aotrace_kernel_ctx's
// parallel_for. Private to the runtime; C++17 and pthreads only.
//
// One pool per Bundle, created at open with OpenOptions::num_threads threads in all: the
// calling thread plus num_threads - 1 workers. A parallel_for splits [0, n) into contiguous
// shares of equal size (within one), one per thread, each cut into a few chunks, publishes the job
// with one atomic store, runs chunks on the calling thread too and returns when every chunk is
// done. A thread that finishes its range takes chunks left in the others', so a worker that is
// slow to wake costs balance, never correctness: the caller takes what is left.
//
// Inline, with no synchronisation at all: n <= 1, a one-thread pool, a call from inside a body
// (nested parallelism), and a call while another thread's parallel_for holds the pool
// (concurrent runs of one Bundle: the busy pool is not waited for; the runs themselves are
// the parallelism). So a parallel_for never blocks on another caller and never deadlocks.
//
// Idle workers spin briefly (kSpin, about 100 µs) on the job word, then sleep on a condition
// variable; a dispatch only takes the mutex when some worker sleeps. No allocation after
// construction.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "aotrace_kernel_abi.h"

namespace aotrace::rt {

// Threads when OpenOptions::num_threads is 0: AOTRACE_NUM_THREADS when set to a positive
// integer, else the CPUs this process may run on (sched affinity), else hardware_concurrency.
int default_num_threads();

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // threads in all, caller included; < 1 means 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs body(closure, begin, end) over contiguous disjoint ranges covering [0, n).
  void parallel_for(int64_t n, aotrace_parallel_body body, void* closure);

  // The ABI callback: `pool` is a ThreadPool*.
  static void parallel_for_abi(void* pool, int64_t n, aotrace_parallel_body body, void* closure);
  // aotrace_kernel_ctx for this pool.
  aotrace_kernel_ctx kernel_ctx() { return aotrace_kernel_ctx{this, &ThreadPool::parallel_for_abi}; }

 private:
  // The job word: its generation (the high 32 bits), published last: what wakes the workers.
  // Each thread (the caller is 0, worker i is i + 1) owns a contiguous range of the chunks, in
  // its slot: generation (32) | end (16) | next unclaimed chunk (16). A thread runs its own
  // range first, then takes what is left of the others' (a slow or sleeping worker costs
  // balance, never correctness). A chunk is claimed with one CAS on a slot's whole word, so a
  // thread can never take a chunk of a job other than the one it saw; it reads the job's fields
  // only after a successful claim, when they cannot change (the job is not done before its
  // claimed chunk is). Owned ranges keep a thread on the same part of consecutive loops
  // (a GEMM's rows, then the next kernel's same rows) in its own cache: a loop's chunks taken
  // in turn by whoever came first moved each kernel's output between the cores' caches on
  // every call.
  static constexpr int kMaxThreads = 1024;
  static constexpr int kChunksPerThread = 4;  // kMaxThreads * kChunksPerThread < 2^16

  void worker_loop(int self);
  // Claims and runs chunks of generation `gen`, from thread `self`'s range first, until none
  // is left; returns how many it ran.
  int64_t run_chunks(uint32_t gen, int self);

  struct alignas(64) Slot {
    std::atomic<uint64_t> word{0};
  };
  std::vector<Slot> slots_;  // one per thread, caller first

  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // a parallel_for is using the workers

  alignas(64) std::atomic<uint64_t> job_{0};
  // The current job, written before job_ is published, read after a successful claim.
  std::atomic<aotrace_parallel_body> body_{nullptr};
  std::atomic<void*> closure_{nullptr};
  std::atomic<int64_t> n_{0};
  alignas(64) std::atomic<int64_t> remaining_{0};  // chunks not yet finished

  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace aotrace::rt
