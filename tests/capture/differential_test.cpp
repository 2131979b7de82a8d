// Differential test: every capture case (tests/capture/cases) that captures as one graph runs
// four ways on the same random inputs: torch eager (through the embedded interpreter), the IR's
// reference implementations, and the CPU kernels lowering emits for it, run as the runtime runs
// a bundle's plan, and its GPU kernels under grid emulation (lowering/cuda/). All must agree in
// the number, shape, dtype and values of the outputs: a capture that models Python or torch
// wrongly, or a GPU kernel that computes another number than the CPU's, shows up here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <random>

#include "embed/embed.h"
#include "tests/capture/case_header.h"
#include "tests/unit/lowering/plan_runner.h"
#include "tests/unit/lowering/reference_check.h"

namespace fs = std::filesystem;
using namespace aotrace;

namespace {

// AOTRACE_CAPTURE_CASES=DIR runs the cases of another folder (a corpus being tried), and
// AOTRACE_PROBE=1 fails a case that raises a user error or breaks instead of skipping it, with
// its message: together they measure how much of a corpus compiles and matches eager.
fs::path cases_dir() {
  const char* dir = std::getenv("AOTRACE_CAPTURE_CASES");
  return dir && *dir ? fs::path(dir) : fs::path(AOTRACE_SOURCE_DIR) / "tests" / "capture" / "cases";
}
const fs::path kCases = cases_dir();
const bool kProbe = std::getenv("AOTRACE_PROBE") != nullptr;

// Floats from N(0, 1); integers in [0, 4), valid as indices of the cases' small shapes.
ir::HostTensor random_input(const embed::CaptureInput& in, std::mt19937& rng) {
  ir::HostTensor t = ir::HostTensor::zeros(in.dtype, in.shape);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> ints(0, in.dtype == ir::DType::b8 ? 1 : 3);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, ir::is_floating(in.dtype) ? normal(rng) : ints(rng));
  return t;
}

// A key-padding mask a PaddingMask guard accepts (left-aligned, row 0 without padding), with
// random lengths, the rest 0 included: random bools would fail the guard.
void fill_padding_mask(ir::HostTensor& t, std::mt19937& rng) {
  if (t.shape.size() != 2) return;
  const int64_t rows = t.shape[0], cols = t.shape[1];
  std::uniform_int_distribution<int64_t> length(0, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r == 0 ? cols : length(rng);
    for (int64_t c = 0; c < cols; ++c) t.set(r * cols + c, c >= n ? 1.0 : 0.0);
  }
}

std::string type_str(const ir::HostTensor& t) {
  std::string s = std::string(ir::dtype_name(t.dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

// "" when `got` matches eager's `want` in dtype, shape and value: within 1e-4, or for f16 and
// bf16 within 2 units in the last place (kernels compute a fused chain of f16 ops in f32 and
// round once, as Inductor does; eager rounds after every op).
std::string differs(const ir::HostTensor& got, const ir::HostTensor& want) {
  if (got.dtype != want.dtype || got.shape != want.shape)
    return "is " + type_str(got) + ", eager gives " + type_str(want);
  const double tol = got.dtype == ir::DType::f16 ? 2e-3 : got.dtype == ir::DType::bf16 ? 1.6e-2 : 1e-4;
  return lowering::testing::compare(got, want, tol, tol);
}

int compared_cases = 0;

class Differential : public ::testing::TestWithParam<std::string> {};

TEST_P(Differential, ReferenceAndKernelsMatchEager) {
  const fs::path script = kCases / (GetParam() + ".py");
  test::CaseHeader h = test::parse_case_header(script);
  auto& interp = embed::Interpreter::instance();
  interp.run_script(script);
  embed::Capture c;
  try {
    c = interp.capture(h.call, h.inputs);
  } catch (const UserError& e) {
    // A case of an error message (capture_tests checks it), not of a graph.
    if (kProbe) ADD_FAILURE() << "user error: " << e.what() << " at " << e.loc().file << ":" << e.loc().line;
    return;
  }
  if (!c.breaks.empty() || c.graphs.size() != 1) {  // graph breaks: capture_tests' goldens
    if (kProbe)
      for (const auto& b : c.breaks)
        ADD_FAILURE() << "break [" << b.category << "] " << b.reason
                      << (b.user_stack.empty() ? "" : " at " + b.user_stack.back().file + ":" +
                                                           std::to_string(b.user_stack.back().line));
    return;
  }
  ++compared_cases;
  // Every declared input is a graph input: one turned into a constant would still "match" on
  // the example it was captured from.
  EXPECT_EQ(c.graph.inputs.size() - (c.graph.rng_input >= 0 ? 1 : 0), h.inputs.size())
      << "graph inputs vs the inputs the case declares";
  // The capture's own example call: eager's output has the captured tree, constants included.
  EXPECT_TRUE(c.example.has_outputs) << "eager returned another structure or other constants than the output tree "
                                     << c.graph.output_tree.str();
  std::mt19937 rng(11);
  std::vector<ir::HostTensor> inputs;
  for (const auto& in : h.inputs) inputs.push_back(random_input(in, rng));
  for (const ir::Guard& g : c.guards)
    if (g.kind == ir::Guard::Kind::PaddingMask) fill_padding_mask(inputs.at(static_cast<size_t>(g.input)), rng);
  std::vector<ir::HostTensor> want = interp.run_eager(h.call, inputs, c.graph.input_updates);
  if (c.graph.rng_input >= 0) {
    // Random numbers: torch's generator is not the bundle's. The kernels must draw exactly the
    // reference's numbers (the same Philox stream); eager gives the types.
    ir::HostTensor state = ir::HostTensor::zeros(ir::DType::i64, {2});
    state.set(0, 1234);
    state.set(1, 7);
    inputs.insert(inputs.begin() + c.graph.rng_input, state);
    std::vector<ir::HostTensor> reference = ir::evaluate(c.graph, inputs);
    std::vector<ir::HostTensor> kernels = lowering::testing::compile_and_run(c.graph, inputs);
    std::vector<ir::HostTensor> gpu = lowering::testing::compile_and_run(c.graph, inputs, nullptr, lowering::testing::cuda_emulation());
    ASSERT_EQ(reference.size(), want.size());
    ASSERT_EQ(kernels.size(), want.size());
    ASSERT_EQ(gpu.size(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      EXPECT_EQ(type_str(reference[o]), type_str(want[o])) << "output " << o;
      EXPECT_EQ(differs(kernels[o], reference[o]), "") << "output " << o << " of the CPU kernels vs the reference";
      EXPECT_EQ(differs(gpu[o], reference[o]), "") << "output " << o << " of the GPU kernels (grid emulation) vs the reference";
    }
    return;
  }
  std::vector<ir::HostTensor> reference = ir::evaluate(c.graph, inputs);
  std::vector<ir::HostTensor> kernels = lowering::testing::compile_and_run(c.graph, inputs);
  std::vector<ir::HostTensor> gpu = lowering::testing::compile_and_run(c.graph, inputs, nullptr, lowering::testing::cuda_emulation());
  ASSERT_EQ(reference.size(), want.size()) << "outputs of the graph vs eager";
  ASSERT_EQ(kernels.size(), want.size()) << "outputs of the kernels vs eager";
  ASSERT_EQ(gpu.size(), want.size()) << "outputs of the emulated GPU kernels vs eager";
  for (size_t o = 0; o < want.size(); ++o) {
    EXPECT_EQ(differs(reference[o], want[o]), "") << "output " << o << " of the reference implementations";
    EXPECT_EQ(differs(kernels[o], want[o]), "") << "output " << o << " of the CPU kernels";
    EXPECT_EQ(differs(gpu[o], want[o]), "") << "output " << o << " of the GPU kernels (grid emulation)";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Differential, ::testing::ValuesIn(test::case_names(kCases)),
                         [](const auto& info) { return info.param; });

// The capture of tests/capture/cases/NAME.py at its header's call and inputs.
embed::Capture capture_case(const std::string& name) {
  const fs::path script = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "capture" / "cases" / (name + ".py");
  const test::CaseHeader h = test::parse_case_header(script);
  auto& interp = embed::Interpreter::instance();
  interp.run_script(script);
  return interp.capture(h.call, h.inputs);
}

// Writes through index tensors past their dim, where torch raises (setitem_out_of_range.py):
// none lands on another element. y[i, j] = 5 at (1, 0), then (-5, 5) and (2, -9), whose linear
// indices (1 and 3) would name (0, 1) and (0, 3); z[:, i] = -1 at columns 1, -5 and 2.
TEST(IndexWrites, PastTheirDimWriteNothing) {
  const embed::Capture c = capture_case("setitem_out_of_range");
  ASSERT_TRUE(c.breaks.empty());
  ir::HostTensor x = ir::HostTensor::zeros(ir::DType::f32, {4, 4});
  for (int64_t e = 0; e < 16; ++e) x.set(e, static_cast<double>(e));
  ir::HostTensor i = ir::HostTensor::zeros(ir::DType::i64, {3}), j = i;
  const double is[] = {1, -5, 2}, js[] = {0, 5, -9};
  for (int64_t e = 0; e < 3; ++e) i.set(e, is[e]), j.set(e, js[e]);
  std::vector<ir::HostTensor> out = lowering::testing::compile_and_run(c.graph, {x, i, j});
  ASSERT_EQ(out.size(), 2u);
  for (int64_t e = 0; e < 16; ++e) {
    EXPECT_EQ(out[0].get(e), e == 4 ? 5.0 : x.get(e)) << "y at " << e;
    EXPECT_EQ(out[1].get(e), e % 4 == 1 || e % 4 == 2 ? -1.0 : x.get(e)) << "z at " << e;
  }
}

// torch.multinomial draws category i with probability p_i / total: 20000 rows of
// [0.1, 0, 0.6, 0.3] (multinomial_rows.py) on the CPU kernels and the emulated GPU's, each
// category's frequency within 0.015 of its probability (4.5 standard deviations at 0.5), category
// 1 never.
// The multinomial tests' rows: 20000 of these probabilities.
constexpr double kProbs[] = {0.1, 0, 0.6, 0.3};
constexpr int64_t kRows = 20000;

// The inputs of a capture of one [kRows, 4] input, its rows kProbs, with the generator's state
// (seed).
std::vector<ir::HostTensor> multinomial_inputs(const embed::Capture& c, int64_t seed) {
  EXPECT_TRUE(c.breaks.empty());
  EXPECT_GE(c.graph.rng_input, 0);
  ir::HostTensor p = ir::HostTensor::zeros(ir::DType::f32, {kRows, 4});
  for (int64_t e = 0; e < p.numel(); ++e) p.set(e, kProbs[e % 4]);
  ir::HostTensor state = ir::HostTensor::zeros(ir::DType::i64, {2});
  state.set(0, static_cast<double>(seed));
  std::vector<ir::HostTensor> inputs = {p};
  inputs.insert(inputs.begin() + std::max(0, c.graph.rng_input), state);
  return inputs;
}

TEST(Multinomial, DrawsEachCategoryWithItsProbability) {
  const embed::Capture c = capture_case("multinomial_rows");
  const std::vector<ir::HostTensor> inputs = multinomial_inputs(c, 99);
  const double* probs = kProbs;
  for (const lowering::Options& o : {lowering::Options{}, lowering::testing::cuda_emulation()}) {
    std::vector<ir::HostTensor> out = lowering::testing::compile_and_run(c.graph, inputs, nullptr, o);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].shape, (std::vector<int64_t>{kRows, 1}));
    double counts[4] = {};
    for (int64_t e = 0; e < kRows; ++e) {
      const auto k = static_cast<int64_t>(out[0].get(e));
      ASSERT_TRUE(k >= 0 && k < 4) << k;
      counts[k] += 1;
    }
    EXPECT_EQ(counts[1], 0) << "a category of probability 0";
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(counts[k] / kRows, probs[k], 0.015) << "category " << k;
  }
}

// k draws a row (multinomial_samples.py), rows [0.1, 0, 0.6, 0.3] again: two without replacement
// are two different categories, never 1, the ordered pair (i, j) with probability
// p_i · p_j / (1 - p_i) (a first draw, then one from the rest); three with replacement are three
// independent draws, each column's frequencies the probabilities. Within 0.015, on the CPU
// kernels and the emulated GPU's.
TEST(Multinomial, DrawsKSamplesWithAndWithoutReplacement) {
  const embed::Capture c = capture_case("multinomial_samples");
  const std::vector<ir::HostTensor> inputs = multinomial_inputs(c, 7);
  const double* probs = kProbs;
  for (const lowering::Options& o : {lowering::Options{}, lowering::testing::cuda_emulation()}) {
    std::vector<ir::HostTensor> out = lowering::testing::compile_and_run(c.graph, inputs, nullptr, o);
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].shape, (std::vector<int64_t>{kRows, 2}));
    ASSERT_EQ(out[1].shape, (std::vector<int64_t>{kRows, 3}));
    double pairs[4][4] = {}, columns[3][4] = {};
    for (int64_t r = 0; r < kRows; ++r) {
      const auto i = static_cast<int64_t>(out[0].get(2 * r)), j = static_cast<int64_t>(out[0].get(2 * r + 1));
      ASSERT_TRUE(i >= 0 && i < 4 && j >= 0 && j < 4 && i != j) << "row " << r << ": " << i << ", " << j;
      pairs[i][j] += 1.0 / kRows;
      for (int64_t col = 0; col < 3; ++col) {
        const auto k = static_cast<int64_t>(out[1].get(3 * r + col));
        ASSERT_TRUE(k >= 0 && k < 4) << k;
        columns[col][k] += 1.0 / kRows;
      }
    }
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        if (i != j) EXPECT_NEAR(pairs[i][j], probs[i] * probs[j] / (1 - probs[i]), 0.015) << "pair " << i << ", " << j;
    for (int col = 0; col < 3; ++col)
      for (int k = 0; k < 4; ++k) EXPECT_NEAR(columns[col][k], probs[k], 0.015) << "draw " << col << ", category " << k;
    EXPECT_EQ(columns[0][1] + columns[1][1] + columns[2][1], 0) << "a category of probability 0";
  }
}

// After every case: most cases must be graphs, or this test would quietly compare nothing.
class CoverageCheck : public ::testing::Environment {
 public:
  void TearDown() override {
    printf("capture cases compared with eager: %d\n", compared_cases);
    if (::testing::GTEST_FLAG(filter) != "*" || std::getenv("AOTRACE_CAPTURE_CASES")) return;  // a subset
    EXPECT_GE(compared_cases, kMinCompared) << "only " << compared_cases << " capture cases were compared with eager";
  }
  static constexpr int kMinCompared = 70;
};
const auto* const coverage_check = ::testing::AddGlobalTestEnvironment(new CoverageCheck);

}  // namespace
