// Model tests (issue 4): torchvision models with random weights (eval), a TransformerEncoder
// stack, a small VisionTransformer (vit_b_16's code path) and the GPT-2-style model, each
// captured with zero graph breaks; ir::evaluate of the graph matches torch eager (f32: atol 1e-4,
// rtol 1e-4). Small inputs keep the reference loops fast (resnet18 at 1x3x64x64: a few seconds).
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/ops/op_harness.h"

namespace fs = std::filesystem;
using namespace aotrace;

namespace {

const fs::path kModels = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "ops" / "models.py";

struct Model {
  std::string name;
  std::string inputs;
};
void PrintTo(const Model& m, std::ostream* os) { *os << m.name << " (" << m.inputs << ")"; }

class ModelCase : public ::testing::TestWithParam<Model> {};

TEST_P(ModelCase, EvaluateMatchesTorchEager) {
  const Model& m = GetParam();
  auto& interp = embed::Interpreter::instance();
  interp.run_script(kModels);
  auto specs = aotrace::testing::parse_inputs(m.inputs);
  std::vector<embed::CaptureInput> inputs;
  std::vector<ir::HostTensor> values;
  for (size_t i = 0; i < specs.size(); ++i) {
    inputs.push_back(specs[i].input);
    values.push_back(aotrace::testing::random_input(specs[i], 7 + i));
  }
  embed::Capture capture = interp.capture(m.name, inputs);
  ASSERT_TRUE(capture.breaks.empty()) << m.name << ": [" << capture.breaks[0].category << "] "
                                      << capture.breaks[0].reason;
  auto got = ir::evaluate(capture.graph, values);
  auto want = interp.run_eager(m.name, values);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::string diff = aotrace::testing::compare(got[i], want[i], aotrace::testing::Tolerance{1e-4, 1e-4});
    EXPECT_TRUE(diff.empty()) << m.name << " output " << i << ": " << diff;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelCase,
    ::testing::Values(Model{"resnet18", "x:f32[1,3,64,64]"}, Model{"mobilenet_v3_small", "x:f32[1,3,64,64]"},
                      Model{"mobilenet_v2", "x:f32[1,3,64,64]"}, Model{"squeezenet1_1", "x:f32[1,3,64,64]"},
                      Model{"vit_tiny", "x:f32[2,3,32,32]"}, Model{"transformer_stack", "x:f32[2,7,32]"},
                      Model{"gpt2", "idx:i64[2,16]{0,63}"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
