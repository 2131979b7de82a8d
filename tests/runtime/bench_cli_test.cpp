// `aotrace bench`, and `--threads` of `aotrace run` and the standalone `aotrace_run` (issue 6), on
// the hand-written parallel bundle (tiny_bundle.h); and `make bench`'s script on a tiny spec. Asserts the output's structure and the
// error messages, never timings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "artifacts/runtime/npy.h"
#include "tests/support/subprocess.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;
using aotrace::test::expect_contains;
using aotrace::test::quote;
using nlohmann::json;

class BenchCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fresh_temp_dir("bench_cli");
    artifacts::write_bundle(parallel_bundle_spec(), root_ / "parallel.aot");
  }
  static aotrace::test::CommandResult bench(const std::string& args) {
    return aotrace::test::run_command(quote(AOTRACE_CLI) + " bench " + quote((root_ / "parallel.aot").string()) +
                                      " " + args);
  }
  static inline fs::path root_;
};

TEST_F(BenchCli, JsonReportsLatencyPercentilesAndIterations) {
  auto r = bench("--entry add --shape x=16 --shape y=16 --iterations 50 --threads 2 --json 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = json::parse(r.output);
  EXPECT_EQ(j["entry"], "add");
  EXPECT_EQ(j["variant"], "v0");
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["iterations"], 50);
  EXPECT_GE(j["warmup_iterations"].get<int>(), 1);
  ASSERT_EQ(j["inputs"].size(), 2u);
  EXPECT_EQ(j["inputs"][1]["name"], "y");
  EXPECT_EQ(j["inputs"][1]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][1]["shape"], json::array({16}));
  for (const char* key : {"median_ms", "p10_ms", "p90_ms", "mean_ms", "min_ms", "max_ms", "total_s"})
    EXPECT_TRUE(j[key].is_number()) << key;
  EXPECT_LE(j["min_ms"].get<double>(), j["p10_ms"].get<double>());
  EXPECT_LE(j["p10_ms"].get<double>(), j["median_ms"].get<double>());
  EXPECT_LE(j["median_ms"].get<double>(), j["p90_ms"].get<double>());
  EXPECT_LE(j["p90_ms"].get<double>(), j["max_ms"].get<double>());
}

TEST_F(BenchCli, TextReportAndDefaultShapesOfASingleVariantEntry) {
  auto r = bench("--entry add_nested --min-time 0.05 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "entry 'add_nested', variant v0, 1 thread(s)");
  expect_contains(r.output, "input x: float32 64x1000");
  expect_contains(r.output, " iterations (after ");
  expect_contains(r.output, "median ");
  expect_contains(r.output, "p10 ");
  expect_contains(r.output, "p90 ");
}

TEST_F(BenchCli, ShapesSelectTheVariant) {
  auto r = bench("--entry add --shape x=100003 --shape y=100003 --iterations 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output)["variant"], "v1");
}

TEST_F(BenchCli, MalformedShapeIsAUserError) {
  auto r = bench("--entry add --shape x=16xa --shape y=16");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: --shape 'x=16xa': '16xa' is not a list of dims");
  expect_contains(r.output, "hint: write dims separated by 'x', e.g. --shape x=8x784");
  r = bench("--entry add --shape x16");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "--shape 'x16' is not NAME=DIMS");
}

TEST_F(BenchCli, ShapeNoVariantAcceptsNamesTheGuards) {
  auto r = bench("--entry add --shape x=17 --shape y=17");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: no variant of entry 'add' accepts these inputs");
  expect_contains(r.output, "variant v0");
  expect_contains(r.output, "hint: pass --shape with sizes the bundle was compiled for");
}

TEST_F(BenchCli, MissingShapeOfAMultiVariantEntryListsTheVariants) {
  auto r = bench("--entry add --shape y=16");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: entry 'add' needs --shape x=DIMS");
  expect_contains(r.output, "hint: its variants take x as [16] (v0), [100003] (v1)");
}

TEST_F(BenchCli, UnknownEntryAndInputAreUserErrors) {
  auto r = bench("--entry nope");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "has no entry 'nope' (entries: add, add_nested)");
  r = bench("--entry add_nested --shape z=3");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "entry 'add_nested' has no input 'z'");
  expect_contains(r.output, "hint: its inputs are: x, y");
}

TEST_F(BenchCli, UsageErrorsAreExit2) {
  EXPECT_EQ(bench("--entry add_nested --iterations 5 --min-time 1").exit_code, 2);
  EXPECT_EQ(bench("--entry add_nested --threads -1").exit_code, 2);
  EXPECT_EQ(bench("--entry add_nested --iterations 0").exit_code, 2);
}

// `aotrace run --threads N` and `aotrace_run --threads N` give the kernels' answer.
TEST_F(BenchCli, RunWithThreads) {
  fs::path dir = root_ / "run";
  fs::create_directories(dir);
  std::vector<float> x(100003), y(100003);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i % 13);
    y[i] = 0.5f;
  }
  ASSERT_TRUE(rt::npy_write((dir / "x.npy").string(), rt::TensorRef(rt::DType::f32, {100003}, x.data())).ok());
  ASSERT_TRUE(rt::npy_write((dir / "y.npy").string(), rt::TensorRef(rt::DType::f32, {100003}, y.data())).ok());
  const std::string inputs = " --entry add --input x=" + quote((dir / "x.npy").string()) + " --input y=" +
                             quote((dir / "y.npy").string());
  const std::string bundle = quote((root_ / "parallel.aot").string());
  for (const std::string& cmd :
       {quote(AOTRACE_CLI) + " run " + bundle + inputs + " --threads 3 --output-dir " + quote((dir / "a").string()),
        quote(AOTRACE_RUN) + " " + bundle + inputs + " --threads 2 --output-dir " + quote((dir / "b").string())}) {
    fs::create_directories(dir / "b");
    auto r = aotrace::test::run_command(cmd);
    ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
  }
  for (const char* sub : {"a", "b"}) {
    auto out = rt::npy_read((dir / sub / "out0.npy").string());
    ASSERT_TRUE(out.ok()) << out.status().message();
    int wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) wrong += out->data_as<float>()[i] != x[i] + y[i];
    EXPECT_EQ(wrong, 0) << sub;
  }
  auto r = aotrace::test::run_command(quote(AOTRACE_RUN) + " " + bundle + inputs + " --threads many");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_contains(r.output, "--threads takes a number from 0 to 1024");
  r = aotrace::test::run_command(quote(AOTRACE_CLI) + " run " + bundle + inputs + " --threads -2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// `make bench`'s script (bench/run_bench.py) end to end on a tiny spec of its own: it compiles each
// entry with the CLI, checks it against torch eager, times both sides and prints the table, the
// geometric mean and the sgemm line. Structure only, never timings.
// --profile times each kernel call of a compiled bundle: the slowest kernels with what each
// computes (ops, types, the user's line) and their share; JSON lists them too.
TEST(BenchProfile, ListsTheSlowestKernelsWithWhatTheyCompute) {
  fs::path dir = fresh_temp_dir("bench_profile");
  std::ofstream(dir / "net.py") << "import torch\n"
                                   "torch.manual_seed(0)\n"
                                   "lin = torch.nn.Linear(256, 512)\n"
                                   "def net(x):\n"
                                   "    return torch.relu(lin(x)).sum(-1)\n";
  std::ofstream(dir / "net.yaml") << "version: 1\nname: net\nscript: net.py\nentries:\n"
                                     "  net:\n    call: net\n    inputs:\n      x: {dtype: float32, shape: [64, 256]}\n";
  auto r = aotrace::test::run_command(quote(AOTRACE_CLI) + " compile " + quote((dir / "net.yaml").string()) + " -o " +
                                      quote((dir / "net.aot").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = aotrace::test::run_command(quote(AOTRACE_CLI) + " bench " + quote((dir / "net.aot").string()) +
                                 " --iterations 5 --profile 2 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "kernel calls, ");
  expect_contains(r.output, " ms per call in kernels; the slowest:");
  expect_contains(r.output, "matmul f32[64, 512] <- f32[64, 256], f32[256, 512]");
  expect_contains(r.output, "(net.py:5)");
  r = aotrace::test::run_command(quote(AOTRACE_CLI) + " bench " + quote((dir / "net.aot").string()) +
                                 " --iterations 3 --profile 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  const json& profile = j["profile"];
  ASSERT_GE(profile["kernels"].get<int>(), 1);
  double share = 0;
  for (const json& k : profile["slowest"]) {
    EXPECT_FALSE(k["what"].get<std::string>().empty()) << k.dump();
    EXPECT_GE(k["mean_ms"].get<double>(), 0.0);
    share += k["share"].get<double>();
  }
  EXPECT_EQ(profile["slowest"].size(), std::min<size_t>(5, profile["kernels"].get<size_t>()));
  if (profile["slowest"].size() == profile["kernels"].get<size_t>()) EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_EQ(aotrace::test::run_command(quote(AOTRACE_CLI) + " bench " + quote((dir / "net.aot").string()) +
                                       " --profile 0").exit_code, 2);
}

TEST(BenchScript, RunsATinySpecAndPrintsItsTable) {
  fs::path dir = fresh_temp_dir("bench_script");
  std::ofstream(dir / "tiny.py") << "import torch\n"
                                    "torch.manual_seed(0)\n"
                                    "mlp = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.ReLU(),\n"
                                    "                          torch.nn.Linear(24, 8)).eval()\n"
                                    "def matmul(a, b):\n"
                                    "    return a @ b\n";
  std::ofstream(dir / "tiny.yaml") << "version: 1\nname: tiny\nscript: tiny.py\nentries:\n"
                                      "  mlp_b4:\n    call: mlp\n    inputs:\n      x: {dtype: float32, shape: [4, 16]}\n"
                                      "  sgemm_32:\n    call: matmul\n    inputs:\n"
                                      "      a: {dtype: float32, shape: [32, 32]}\n      b: {dtype: float32, shape: [32, 32]}\n";
  auto r = aotrace::test::run_command("/usr/bin/python3.11 " + quote(BENCH_SCRIPT) + " --aotrace " + quote(AOTRACE_CLI) +
                                      " --threads 1 --min-time 0.02 --spec " + quote((dir / "tiny.yaml").string()) +
                                      " --out " + quote((dir / "out").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "model              inputs");
  expect_contains(r.output, "mlp_b4             x[4x16]");
  expect_contains(r.output, "geometric mean speed-up (eager / aotrace) over 1 model(s): ");
  expect_contains(r.output, "sgemm 32x32x32: aotrace ");
  // Without --ort the ORT column is empty and says why; the bench still runs.
  expect_contains(r.output, "ORT column empty for mlp_b4, sgemm_32: ORT not set up (make bench passes --ort after make bench-deps)");
  json results = json::parse(std::ifstream(dir / "out" / "bench_results.json"));
  EXPECT_EQ(results["threads"], 1);
  ASSERT_EQ(results["rows"].size(), 2u);
  for (const json& row : results["rows"]) {
    EXPECT_FALSE(row.contains("error")) << row.dump();
    for (const char* key : {"compile_s", "aotrace_ms", "eager_ms", "speedup", "max_abs_err"})
      EXPECT_TRUE(row[key].is_number()) << key << " in " << row.dump();
    EXPECT_LT(row["max_abs_err"].get<double>(), 1e-3);
  }
  // A spec naming an entry it does not have is refused with the entries it has.
  r = aotrace::test::run_command("/usr/bin/python3.11 " + quote(BENCH_SCRIPT) + " --aotrace " + quote(AOTRACE_CLI) +
                                 " --spec " + quote((dir / "tiny.yaml").string()) + " resnet");
  EXPECT_NE(r.exit_code, 0);
  expect_contains(r.output, "no entry resnet in ");
  expect_contains(r.output, "(entries: mlp_b4, sgemm_32)");
}

}  // namespace
}  // namespace aotrace::testing
