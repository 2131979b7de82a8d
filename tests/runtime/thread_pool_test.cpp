// The runtime's thread pool (DESIGN §5, issue 6): every index exactly once, nested calls inline,
// concurrent callers, sleeping workers; and kernels that call ctx->parallel_for through a bundle.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "artifacts/runtime/aotrace_c.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/thread_pool.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;
using rt::DType;
using rt::TensorRef;
using rt::ThreadPool;

// Counts how often each index is visited; checks every range is non-empty and in bounds.
struct Coverage {
  explicit Coverage(int64_t n) : counts(static_cast<size_t>(n)) {}
  std::vector<std::atomic<int>> counts;
  std::atomic<int> bad_ranges{0};
  std::atomic<int> calls{0};

  static void body(void* closure, int64_t begin, int64_t end) {
    auto* c = static_cast<Coverage*>(closure);
    ++c->calls;
    if (begin < 0 || begin >= end || end > static_cast<int64_t>(c->counts.size())) {
      ++c->bad_ranges;
      return;
    }
    for (int64_t i = begin; i < end; ++i) c->counts[static_cast<size_t>(i)].fetch_add(1);
  }
  // Indices not visited exactly once.
  int64_t wrong() const {
    int64_t w = 0;
    for (const auto& c : counts) w += c.load() != 1;
    return w;
  }
};

TEST(ThreadPool, EveryIndexExactlyOnceForManySizesAndThreadCounts) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 100, 1000, 4097, 100003}) {
      for (int repeat = 0; repeat < 20; ++repeat) {
        Coverage c(n);
        pool.parallel_for(n, &Coverage::body, &c);
        ASSERT_EQ(c.bad_ranges.load(), 0) << "threads " << threads << " n " << n;
        ASSERT_EQ(c.wrong(), 0) << "threads " << threads << " n " << n;
        // Contiguous chunks, at most a few per thread.
        ASSERT_LE(c.calls.load(), std::max<int64_t>(1, std::min<int64_t>(n, 4 * threads)));
      }
    }
  }
}

TEST(ThreadPool, NonPositiveThreadCountMeansOneAndRunsInline) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.num_threads(), 1);
  std::thread::id caller = std::this_thread::get_id(), seen;
  auto body = [](void* closure, int64_t, int64_t) {
    *static_cast<std::thread::id*>(closure) = std::this_thread::get_id();
  };
  pool.parallel_for(1000, body, &seen);
  EXPECT_EQ(seen, caller);
}

// A body that starts a parallel loop: the inner loop runs inline, on the outer chunk's thread.
struct Nested {
  ThreadPool* pool;
  std::vector<std::atomic<int>> counts = std::vector<std::atomic<int>>(64 * 100);
  std::atomic<int> inner_on_other_thread{0};
  struct Row {
    Nested* nested;
    int64_t row;
    std::thread::id thread;
  };
  static void inner(void* closure, int64_t begin, int64_t end) {
    auto* r = static_cast<Row*>(closure);
    if (std::this_thread::get_id() != r->thread) ++r->nested->inner_on_other_thread;
    for (int64_t i = begin; i < end; ++i) r->nested->counts[static_cast<size_t>(r->row * 100 + i)]++;
  }
  static void outer(void* closure, int64_t begin, int64_t end) {
    auto* n = static_cast<Nested*>(closure);
    for (int64_t row = begin; row < end; ++row) {
      Row r{n, row, std::this_thread::get_id()};
      n->pool->parallel_for(100, &Nested::inner, &r);
    }
  }
};

TEST(ThreadPool, NestedCallsRunInlineWithoutDeadlock) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    for (int repeat = 0; repeat < 50; ++repeat) {
      Nested n;
      n.pool = &pool;
      pool.parallel_for(64, &Nested::outer, &n);
      for (const auto& c : n.counts) ASSERT_EQ(c.load(), 1);
      EXPECT_EQ(n.inner_on_other_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, ConcurrentCallersEachGetEveryIndexOnce) {
  ThreadPool pool(4);
  std::atomic<int> wrong{0};
  auto caller = [&](int t) {
    for (int call = 0; call < 1000; ++call) {
      Coverage c(1 + (t * 37 + call) % 300);
      pool.parallel_for(static_cast<int64_t>(c.counts.size()), &Coverage::body, &c);
      if (c.wrong() != 0 || c.bad_ranges.load() != 0) ++wrong;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) threads.emplace_back(caller, t);
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Workers that slept (idle longer than their spin) wake for the next loop and take chunks.
TEST(ThreadPool, SleepingWorkersWakeAndTakePart) {
  ThreadPool pool(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: workers sleep
  struct Threads {
    std::mutex mutex;
    std::set<std::thread::id> ids;
  } seen;
  auto body = [](void* closure, int64_t, int64_t) {
    auto* s = static_cast<Threads*>(closure);
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->ids.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // leaves the CPU to the workers
  };
  pool.parallel_for(16, body, &seen);
  EXPECT_GE(seen.ids.size(), 2u);
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    Coverage c(1000);
    pool.parallel_for(1000, &Coverage::body, &c);
    EXPECT_EQ(c.wrong(), 0);
  }
}

// Each thread runs its own contiguous share of the indices first (thread_pool.h): with 2
// threads and 28 indices (8 chunks), the caller 0-13 and the worker 14-27, in shares of equal
// size though 28 is no multiple of 8. The chunks are long enough that neither thread can finish
// its share before the other starts its own.
TEST(ThreadPool, EachThreadRunsItsOwnEvenShareFirst) {
  ThreadPool pool(2);
  struct Runs {
    std::mutex mutex;
    std::vector<std::thread::id> by_index = std::vector<std::thread::id>(28);
  } runs;
  auto body = [](void* closure, int64_t begin, int64_t end) {
    auto* r = static_cast<Runs*>(closure);
    {
      std::lock_guard<std::mutex> lock(r->mutex);
      for (int64_t i = begin; i < end; ++i) r->by_index[static_cast<size_t>(i)] = std::this_thread::get_id();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  };
  pool.parallel_for(28, body, &runs);
  const std::thread::id caller = std::this_thread::get_id();
  for (size_t i = 0; i < 14; ++i) EXPECT_EQ(runs.by_index[i], caller) << "index " << i;
  // The worker woke within the caller's 160 ms and took its own share, from its start.
  EXPECT_NE(runs.by_index[14], caller);
  for (size_t i = 15; i < 28; ++i) EXPECT_EQ(runs.by_index[i], runs.by_index[14]) << "index " << i;
}

TEST(ThreadPool, DefaultThreadCountFollowsTheEnvironment) {
  const char* old = std::getenv("AOTRACE_NUM_THREADS");
  std::string saved = old ? old : "";
  ::setenv("AOTRACE_NUM_THREADS", "3", 1);
  EXPECT_EQ(rt::default_num_threads(), 3);
  ::setenv("AOTRACE_NUM_THREADS", "zero", 1);  // not a positive integer: ignored
  EXPECT_GE(rt::default_num_threads(), 1);
  ::unsetenv("AOTRACE_NUM_THREADS");
  EXPECT_GE(rt::default_num_threads(), 1);
  if (old) ::setenv("AOTRACE_NUM_THREADS", saved.c_str(), 1);
}

// Kernels calling ctx->parallel_for through a bundle (test_kernels.c).
class ParallelKernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_temp_dir("parallel") / "parallel.aot";
    artifacts::write_bundle(parallel_bundle_spec(), dir_);
  }
  static inline fs::path dir_;
};

// z = x + y through `entry` with `threads` threads; the number of wrong elements.
int64_t wrong_sums(const rt::Bundle& bundle, const std::string& entry_name, std::vector<int64_t> shape) {
  auto entry = bundle.entry(entry_name);
  EXPECT_TRUE(entry.ok());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> x(static_cast<size_t>(n)), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i % 1009) * 0.5f;
    y[i] = 1.0f + static_cast<float>(i % 7);
  }
  int64_t wrong = 0;
  for (int repeat = 0; repeat < 10; ++repeat) {
    auto out = entry->run({TensorRef(DType::f32, shape, x.data()), TensorRef(DType::f32, shape, y.data())});
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return n;
    const float* z = (*out)[0].data_as<float>();
    for (size_t i = 0; i < x.size(); ++i) wrong += z[i] != x[i] + y[i];
  }
  return wrong;
}

TEST_F(ParallelKernels, ParallelLoopsGiveTheSameAnswerWithOneAndFourThreads) {
  for (int threads : {1, 4}) {
    rt::OpenOptions options;
    options.num_threads = threads;
    auto b = rt::Bundle::open(dir_.string(), options);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->num_threads(), threads);
    EXPECT_EQ(wrong_sums(*b, "add", {16}), 0) << threads << " threads";
    EXPECT_EQ(wrong_sums(*b, "add", {100003}), 0) << threads << " threads";
    EXPECT_EQ(wrong_sums(*b, "add_nested", {64, 1000}), 0) << threads << " threads";
  }
}

TEST_F(ParallelKernels, ConcurrentRunsShareThePool) {
  rt::OpenOptions options;
  options.num_threads = 4;
  auto b = rt::Bundle::open(dir_.string(), options);
  ASSERT_TRUE(b.ok()) << b.status().message();
  std::atomic<int64_t> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] { wrong += wrong_sums(*b, t % 2 ? "add" : "add_nested",
                                                      t % 2 ? std::vector<int64_t>{100003}
                                                            : std::vector<int64_t>{64, 1000}); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ParallelKernels, ThreadCountOptionsAndTheCApi) {
  rt::OpenOptions bad;
  bad.num_threads = -1;
  auto b = rt::Bundle::open(dir_.string(), bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), rt::StatusCode::invalid_argument);
  EXPECT_NE(b.status().message().find("num_threads must be 0 (the default) or positive, got -1"),
            std::string::npos)
      << b.status().message();

  ::setenv("AOTRACE_NUM_THREADS", "3", 1);
  auto by_env = rt::Bundle::open(dir_.string());
  ::unsetenv("AOTRACE_NUM_THREADS");
  ASSERT_TRUE(by_env.ok());
  EXPECT_EQ(by_env->num_threads(), 3);

  aotrace_open_options options;
  aotrace_open_options_init(&options);
  EXPECT_EQ(options.verify_hashes, 1);
  EXPECT_EQ(options.num_threads, 0);
  options.num_threads = 2;
  aotrace_bundle* cb = nullptr;
  ASSERT_EQ(aotrace_bundle_open_with_options(dir_.c_str(), &options, &cb), 0) << aotrace_last_error();
  EXPECT_EQ(aotrace_bundle_num_threads(cb), 2);
  std::vector<float> x(100003, 1.5f), y(100003, 2.0f), z(100003, 0.0f);
  const int64_t shape[1] = {100003};
  aotrace_tensor in[2] = {{0, 1, shape, x.data()}, {0, 1, shape, y.data()}};
  aotrace_tensor out[1] = {{0, 1, shape, z.data()}};
  ASSERT_EQ(aotrace_entry_run(cb, "add", in, 2, out, 1), 0) << aotrace_last_error();
  EXPECT_EQ(z.front(), 3.5f);
  EXPECT_EQ(z.back(), 3.5f);
  aotrace_bundle_close(cb);
  options.num_threads = -2;
  EXPECT_EQ(aotrace_bundle_open_with_options(dir_.c_str(), &options, &cb), 1);
  EXPECT_EQ(cb, nullptr);
}

}  // namespace
}  // namespace aotrace::testing
