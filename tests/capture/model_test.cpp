// Model capture tests (issue 3 "Done when"): real model code captures with zero graph breaks, and
// the captured graph, run by the IR's reference implementations, matches torch eager.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>

#include "embed/embed.h"

namespace fs = std::filesystem;
using namespace aotrace;

namespace {

const fs::path kModels = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "capture" / "models";

struct ModelCase {
  std::string script, call;
  std::vector<embed::CaptureInput> inputs;
  int64_t int_range = 0;  // integer inputs are drawn from [0, int_range)
};

std::string describe_breaks(const embed::Capture& c) {
  std::ostringstream s;
  for (const auto& b : c.breaks) {
    s << "[" << b.category << "] " << b.reason << "\n";
    for (const auto& l : b.user_stack) s << "    at " << l.str() << "\n";
  }
  return s.str();
}

ir::HostTensor random_input(const embed::CaptureInput& in, int64_t int_range, std::mt19937& rng) {
  ir::HostTensor t = ir::HostTensor::zeros(in.dtype, in.shape);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int64_t> ints(0, std::max<int64_t>(int_range, 1) - 1);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, ir::is_floating(in.dtype) ? normal(rng) : static_cast<double>(ints(rng)));
  return t;
}

void expect_matches_eager(const ModelCase& m) {
  auto& interp = embed::Interpreter::instance();
  interp.run_script(kModels / m.script);
  embed::Capture c = interp.capture(m.call, m.inputs);
  ASSERT_TRUE(c.breaks.empty()) << m.call << " has graph breaks:\n" << describe_breaks(c);
  ASSERT_EQ(c.graphs.size(), 1u);
  std::mt19937 rng(7);
  std::vector<ir::HostTensor> inputs;
  for (const auto& in : m.inputs) inputs.push_back(random_input(in, m.int_range, rng));
  std::vector<ir::HostTensor> got = ir::evaluate(c.graph, inputs);
  std::vector<ir::HostTensor> want = interp.run_eager(m.call, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].shape, want[o].shape) << "output " << o;
    // The f32 model tolerance of issues 3 and 4: |got - want| <= 1e-4 + 1e-4 * |want|.
    double worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double a = got[o].get(i), b = want[o].get(i);
      worst = std::max(worst, std::abs(a - b));
      bad += !(std::abs(a - b) <= 1e-4 + 1e-4 * std::abs(b));
    }
    EXPECT_EQ(bad, 0) << m.call << " output " << o << " differs from torch eager; max abs error "
                      << worst;
  }
}

embed::CaptureInput input(const char* name, ir::DType dtype, std::vector<int64_t> shape) {
  return embed::CaptureInput{name, dtype, std::move(shape), {}};
}

TEST(ModelCapture, Gpt2Style) {
  expect_matches_eager({"gpt2.py", "model", {input("idx", ir::DType::i64, {2, 8})}, 64});
}

class VisionModel : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionModel, CapturesWithoutBreaksAndMatchesEager) {
  const int64_t size = GetParam() == "vit_b_16" ? 32 : 64;
  expect_matches_eager({"vision.py", "model('" + GetParam() + "')",
                        {input("x", ir::DType::f32, {1, 3, size, size})}});
}

INSTANTIATE_TEST_SUITE_P(Torchvision, VisionModel,
                         ::testing::Values("resnet18", "mobilenet_v2", "mobilenet_v3_small",
                                           "squeezenet1_1", "vit_b_16"),
                         [](const auto& info) { return info.param; });

}  // namespace
