// evaluate(): a small MLP graph against hand-computed numbers, symbol binding and input checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

SymExpr s0 = SymExpr::symbol("s0");

TensorType f32(Shape shape) { return {DType::f32, Device{}, std::move(shape)}; }

std::shared_ptr<const Bytes> f32_bytes(const std::vector<float>& v) {
  auto b = std::make_shared<Bytes>(v.size() * 4);
  std::memcpy(b->data(), v.data(), b->size());
  return b;
}

// y = softmax(relu(x @ W1.T + b1) @ W2.T + b2), x: [s0, 2], hidden 2, classes 2.
Graph mlp() {
  Graph g;
  ValueId x = g.add_input("x", f32({s0, 2}), "L['x']");
  ValueId w1 = g.add_weight("fc1.weight", f32({2, 2}), "", f32_bytes({1, -1, 2, 0}));
  ValueId b1 = g.add_weight("fc1.bias", f32({2}), "", f32_bytes({0, 1}));
  ValueId w2 = g.add_weight("fc2.weight", f32({2, 2}), "", f32_bytes({1, 0, 1, 1}));
  ValueId b2 = g.add_weight("fc2.bias", f32({2}), "", f32_bytes({0, -1}));
  ValueId h = g.add(OpKind::Relu, {g.add(OpKind::Linear, {x, w1, b1})});
  ValueId logits = g.add(OpKind::Linear, {h, w2, b2});
  Attrs axis;
  axis.set("axis", int64_t{1});
  g.set_outputs({logits, g.add(OpKind::Softmax, {logits}, axis)},
                OutputTree{OutputTree::Kind::Tuple, 0,
                           {{OutputTree::Kind::Leaf, 0, {}, {}},
                            {OutputTree::Kind::Leaf, 1, {}, {}}},
                           {}});
  verify(g);
  return g;
}

TEST(Evaluate, SmallMlpMatchesHandComputation) {
  Graph g = mlp();
  // Row 0: x = [1, 2]: fc1 = [1-2+0, 2+0+1] = [-1, 3]; relu = [0, 3]; fc2 = [0, 3-1] = [0, 2].
  // Row 1: x = [3, 1]: fc1 = [3-1, 6+1] = [2, 7]; relu = [2, 7]; fc2 = [2, 2+7-1] = [2, 8].
  // Row 2: x = [-1, 0]: fc1 = [-1, -2+1] = [-1, -1]; relu = [0, 0]; fc2 = [0, -1].
  std::vector<HostTensor> in{HostTensor::from_f32({3, 2}, {1, 2, 3, 1, -1, 0})};
  auto out = evaluate(g, in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{3, 2}));
  std::vector<double> logits{0, 2, 2, 8, 0, -1};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[0].get(i), logits[i], 1e-6) << i;
  for (int r = 0; r < 3; ++r) {
    double a = logits[2 * r], b = logits[2 * r + 1];
    EXPECT_NEAR(out[1].get(2 * r), 1 / (1 + std::exp(b - a)), 1e-6);
    EXPECT_NEAR(out[1].get(2 * r + 1), 1 / (1 + std::exp(a - b)), 1e-6);
  }
}

TEST(Evaluate, SymbolsBindFromEachCall) {
  Graph g = mlp();
  std::vector<HostTensor> one{HostTensor::from_f32({1, 2}, {1, 2})};
  auto out = evaluate(g, one);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(out[0].get(1), 2, 1e-6);
}

TEST(Evaluate, SymbolicFullAndMeanUseBoundSizes) {
  Graph g;
  ValueId x = g.add_input("x", f32({s0, 3}), "L['x']");
  Attrs mean;
  mean.set("axes", std::vector<int64_t>{0}).set("keepdim", int64_t{0});
  ValueId m = g.add(OpKind::Mean, {x}, mean);  // divides by s0
  Attrs full;
  full.set("shape", Shape{s0}).set("value", 2.0).set("dtype", DType::f32);
  ValueId f = g.add(OpKind::Full, {}, full);
  g.set_outputs({m, f}, {});
  auto out = evaluate(g, std::vector<HostTensor>{HostTensor::from_f32({2, 3}, {1, 2, 3, 5, 6, 7})});
  EXPECT_NEAR(out[0].get(0), 3, 1e-6);
  EXPECT_NEAR(out[0].get(2), 5, 1e-6);
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(out[1].get(1), 2.0);
}

TEST(Evaluate, RejectsMismatchedInputs) {
  Graph g;
  ValueId a = g.add_input("a", f32({s0, 2}), "L['a']");
  ValueId b = g.add_input("b", f32({s0}), "L['b']");
  Attrs ex;
  g.set_outputs({g.add(OpKind::Add, {a, g.add(OpKind::Reshape, {b}, ex.set("shape", Shape{s0, 1}))})},
                {});
  auto t = [](std::vector<int64_t> shape) {
    return HostTensor::zeros(DType::f32, std::move(shape));
  };
  EXPECT_NO_THROW(evaluate(g, std::vector<HostTensor>{t({3, 2}), t({3})}));
  try {
    evaluate(g, std::vector<HostTensor>{t({3, 2}), t({4})});
    FAIL() << "a conflicting symbol was accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "evaluate: input 'b' expects f32[s0], got f32[4]");
  }
  EXPECT_THROW(evaluate(g, std::vector<HostTensor>{t({3, 3}), t({3})}), UserError);
  EXPECT_THROW(evaluate(g, std::vector<HostTensor>{t({3, 2})}), UserError);
  HostTensor wrong_dtype = HostTensor::zeros(DType::f64, {3});
  EXPECT_THROW(evaluate(g, std::vector<HostTensor>{t({3, 2}), wrong_dtype}), UserError);
}

}  // namespace
}  // namespace aotrace::ir
