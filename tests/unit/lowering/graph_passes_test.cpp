// Pass-level tests: each graph pass on a small graph, and what fusion decides.
#include <gtest/gtest.h>

#include "lowering/passes.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::OpKind;
using Names = std::vector<std::string>;

TEST(GraphPasses, DecomposeSoftmax) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 8}), "L['x']");
  ir::Attrs a;
  a.set("axis", int64_t{1});
  set_outputs(g, {g.add(OpKind::Softmax, {x}, a)});
  ir::Graph d = decompose(g);
  EXPECT_EQ(op_names(d), (Names{"reduce_max", "sub", "exp", "reduce_sum", "div"}));
  ir::verify(d);
}

TEST(GraphPasses, DecomposeLinearLeavesNoComposite) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 8}), "L['x']");
  ir::ValueId w = g.add_weight("w", f32({16, 8}), "w", nullptr);
  ir::ValueId b = g.add_weight("b", f32({16}), "b", nullptr);
  ir::ValueId y = g.add(OpKind::Linear, {x, w, b});
  ir::Attrs m = reduce_attrs({1}, false);
  set_outputs(g, {g.add(OpKind::Mean, {y}, m)});
  EXPECT_EQ(op_names(decompose(g)), (Names{"permute", "matmul", "add", "reduce_sum", "full", "div"}));
}

TEST(GraphPasses, DceRemovesUnusedNode) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3}), "L['x']");
  g.add(OpKind::Exp, {x});
  set_outputs(g, {g.add(OpKind::Neg, {x})});
  EXPECT_EQ(op_names(dce(g)), (Names{"neg"}));
}

TEST(GraphPasses, DceKeepsEverythingUsed) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3}), "L['x']");
  set_outputs(g, {g.add(OpKind::Neg, {g.add(OpKind::Exp, {x})})});
  EXPECT_EQ(dce(g).str(), g.str());
}

TEST(GraphPasses, CseMergesDuplicates) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3}), "L['x']");
  ir::ValueId a = g.add(OpKind::Exp, {x}), b = g.add(OpKind::Exp, {x});
  set_outputs(g, {g.add(OpKind::Add, {a, b})});
  ir::Graph c = cse(g);
  ASSERT_EQ(op_names(c), (Names{"exp", "add"}));
  EXPECT_EQ(c.nodes[1].operands[0], c.nodes[1].operands[1]);
}

TEST(GraphPasses, CseKeepsDifferentAttrs) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 3}), "L['x']");
  ir::ValueId a = g.add(OpKind::ReduceSum, {x}, reduce_attrs({0}, true));
  ir::ValueId b = g.add(OpKind::ReduceSum, {x}, reduce_attrs({1}, true));
  set_outputs(g, {g.add(OpKind::Add, {a, b})});
  EXPECT_EQ(op_names(cse(g)), (Names{"reduce_sum", "reduce_sum", "add"}));
}

TEST(GraphPasses, FoldConstantsComputesScalarArithmetic) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3}), "L['x']");
  ir::ValueId k = g.add(OpKind::Mul, {g.constant(2, ir::DType::f32), g.constant(3, ir::DType::f32)});
  set_outputs(g, {g.add(OpKind::Add, {x, k})});
  ir::Graph f = dce(fold_constants(g));
  ASSERT_EQ(op_names(f), (Names{"full", "add"}));
  EXPECT_DOUBLE_EQ(f.nodes[0].attrs.f("value"), 6.0);
}

TEST(GraphPasses, FoldConstantsLeavesTensorOpsAlone) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3}), "L['x']");
  set_outputs(g, {g.add(OpKind::Add, {x, g.constant(1, ir::DType::f32)})});
  EXPECT_EQ(fold_constants(g).str(), g.str());
}

FusedGraph fused(const ir::Graph& g) { return fuse(dce(cse(fold_constants(decompose(g))))); }

TEST(Fusion, ElementwiseChainIsOneKernel) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 8}), "L['x']");
  ir::ValueId b = g.add_input("b", f32({8}), "L['b']");
  ir::ValueId y = g.add(OpKind::Add, {x, g.constant(1, ir::DType::f32)});
  y = g.add(OpKind::Relu, {g.add(OpKind::Neg, {g.add(OpKind::Mul, {g.add(OpKind::Exp, {y}), b})})});
  set_outputs(g, {y});
  FusedGraph f = fused(g);
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_EQ(f.kernels[0].reads, (std::vector<ir::ValueId>{0, 1}));
}

TEST(Fusion, LinearBiasReluIsOneKernel) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 8}), "L['x']");
  ir::ValueId w = g.add_weight("w", f32({16, 8}), "w", nullptr);
  ir::ValueId b = g.add_weight("b", f32({16}), "b", nullptr);
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Linear, {x, w, b})})});
  FusedGraph f = fused(g);
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_GE(f.kernels[0].reduction, 0);
}

TEST(Fusion, SoftmaxMaterialisesBroadcastReductions) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 8}), "L['x']");
  ir::Attrs a;
  a.set("axis", int64_t{1});
  set_outputs(g, {g.add(OpKind::Softmax, {x}, a)});
  // max (broadcast back), exp (read by two kernels), sum (broadcast back), the division.
  EXPECT_EQ(fused(g).kernels.size(), 4u);
}

TEST(Fusion, ReduceWithPrologueAndEpilogue) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 8}), "L['x']");
  ir::ValueId s = g.add(OpKind::ReduceSum, {g.add(OpKind::Exp, {x})}, reduce_attrs({1}, false));
  set_outputs(g, {g.add(OpKind::Log, {s})});
  FusedGraph f = fused(g);
  ASSERT_EQ(f.kernels.size(), 1u);
  EXPECT_EQ(f.kernels[0].reads, (std::vector<ir::ValueId>{x}));
}

}  // namespace
}  // namespace aotrace::lowering
