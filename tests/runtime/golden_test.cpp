// make_golden (artifacts.h): the golden pair is torch eager's call when it fits the graph, the
// reference interpreter's only as a fallback (with the reason), nothing past the size limit.
#include <gtest/gtest.h>

#include "artifacts/artifacts.h"

namespace aotrace::testing {
namespace {

// y = x + x for x: f32[2, 3], one output.
ir::Graph doubling() {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", {ir::DType::f32, ir::Device{}, {ir::SymExpr(2), ir::SymExpr(3)}}, "L['x']");
  g.set_outputs({g.add(ir::OpKind::Add, {x, x})}, ir::OutputTree{});
  ir::verify(g);
  return g;
}

ir::HostTensor values(std::vector<int64_t> shape, float first) {
  ir::HostTensor t = ir::HostTensor::zeros(ir::DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, first + static_cast<float>(i));
  return t;
}

TEST(MakeGolden, EagerCallThatFitsTheGraphIsStoredAsIs) {
  // Not x + x: the stored outputs are eager's, never recomputed.
  artifacts::GoldenPair eager{{values({2, 3}, 1)}, {values({2, 3}, 100)}};
  std::string why;
  auto golden = artifacts::make_golden(doubling(), eager, &why);
  EXPECT_EQ(why, "");
  ASSERT_EQ(golden.size(), 1u);
  EXPECT_EQ(golden[0].inputs[0].data, eager.inputs[0].data);
  EXPECT_EQ(golden[0].outputs[0].data, eager.outputs[0].data);
}

TEST(MakeGolden, WithoutEagerOutputsTheReferenceInterpreterComputesThem) {
  std::string why;
  auto golden = artifacts::make_golden(doubling(), std::nullopt, &why);
  EXPECT_EQ(why, "no eager outputs");
  ASSERT_EQ(golden.size(), 1u);
  const auto& in = golden[0].inputs.at(0);
  const auto& out = golden[0].outputs.at(0);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{2, 3}));
  for (int64_t i = 0; i < in.numel(); ++i) {
    EXPECT_GE(in.get(i), -1.0);
    EXPECT_LT(in.get(i), 1.0);
    EXPECT_EQ(out.get(i), 2 * in.get(i));
  }
}

TEST(MakeGolden, EagerCallThatDoesNotFitFallsBackAndSaysWhy) {
  std::string why;
  artifacts::GoldenPair wrong_shape{{values({2, 3}, 1)}, {values({3, 2}, 100)}};
  auto golden = artifacts::make_golden(doubling(), wrong_shape, &why);
  EXPECT_EQ(why, "output 0: eager gave f32[3, 2], the graph f32[2, 3]");
  ASSERT_EQ(golden.size(), 1u);
  EXPECT_EQ(golden[0].outputs[0].get(1), 2 * golden[0].inputs[0].get(1));

  artifacts::GoldenPair no_output{{values({2, 3}, 1)}, {}};
  artifacts::make_golden(doubling(), no_output, &why);
  EXPECT_EQ(why, "0 eager outputs for 1 graph outputs");
}

TEST(MakeGolden, NoneWhenInputsAndOutputsExceedTheLimit) {
  artifacts::GoldenPair eager{{values({2, 3}, 1)}, {values({2, 3}, 100)}};
  EXPECT_EQ(artifacts::make_golden(doubling(), eager, nullptr, 12).size(), 1u);
  EXPECT_TRUE(artifacts::make_golden(doubling(), eager, nullptr, 11).empty());
}

}  // namespace
}  // namespace aotrace::testing
