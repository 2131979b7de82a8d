// The nn composites of ir/ops.def (decomposed by lowering's first pass) compiled through the CPU
// backend and compared with the reference interpreter: the primitives they decompose into, in
// the combinations real models produce (norms, activations, conv_transpose, resize, adaptive
// pooling, tril/triu).
#include <gtest/gtest.h>

#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::DType;
using ir::OpKind;
using Ints = std::vector<int64_t>;

TEST(Composites, Activations) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 17}), "L['x']");
  set_outputs(g, {g.add(OpKind::Gelu, {x}, attrs({{"approximate", std::string("none")}})),
                  g.add(OpKind::Gelu, {x}, attrs({{"approximate", std::string("tanh")}})),
                  g.add(OpKind::Silu, {x}), g.add(OpKind::Hardswish, {x}),
                  g.add(OpKind::Hardsigmoid, {x}),
                  g.add(OpKind::LeakyRelu, {x}, attrs({{"negative_slope", 0.01}})),
                  g.add(OpKind::Elu, {x}, attrs({{"alpha", 1.0}})),
                  g.add(OpKind::Softplus, {x}, attrs({{"beta", 1.0}, {"threshold", 20.0}})),
                  g.add(OpKind::Clamp, {x}, attrs({{"min", 0.0}, {"max", 6.0}})),
                  g.add(OpKind::Clamp, {x}, attrs({{"min", -0.5}}))});
  expect_matches_reference_in(g, -5, 5);
}

TEST(Composites, Norms) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 6, 5, 4}), "L['x']");
  ir::ValueId s = g.add_input("s", f32({2, 7, 16}), "L['s']");
  ir::ValueId w16 = weight(g, "ln.weight", {16}, 1), b16 = weight(g, "ln.bias", {16}, 2);
  ir::ValueId w6 = weight(g, "gn.weight", {6}, 3), b6 = weight(g, "gn.bias", {6}, 4);
  ir::ValueId mean = weight(g, "bn.mean", {6}, 5);
  ir::ValueId var = g.add(OpKind::Add, {g.add(OpKind::Abs, {weight(g, "bn.var", {6}, 6)}),
                                        g.constant(0.1, DType::f32)});
  set_outputs(g, {g.add(OpKind::LayerNorm, {s, w16, b16}, attrs({{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}})),
                  g.add(OpKind::LayerNorm, {s}, attrs({{"normalized_ndim", int64_t{2}}, {"eps", 1e-5}})),
                  g.add(OpKind::GroupNorm, {x, w6, b6}, attrs({{"groups", int64_t{3}}, {"eps", 1e-5}})),
                  g.add(OpKind::BatchNorm, {x, mean, var, w6, b6}, attrs({{"eps", 1e-5}})),
                  g.add(OpKind::Var, {s}, attrs({{"axes", Ints{2}}, {"keepdim", int64_t{0}}, {"correction", int64_t{1}}}))});
  expect_matches_reference_in(g, -2, 2);
}

TEST(Composites, ConvTransposeResizeAdaptivePoolTril) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 4, 5, 6}), "L['x']");
  ir::ValueId m = g.add_input("m", f32({2, 5, 5}), "L['m']");
  ir::ValueId w = weight(g, "w", {4, 3, 3, 3}, 7), b = weight(g, "b", {3}, 8);
  set_outputs(g, {g.add(OpKind::ConvTranspose, {x, w, b},
                        attrs({{"stride", Ints{2, 2}}, {"dilation", Ints{1, 1}}, {"padding", Ints{1, 1}},
                               {"output_padding", Ints{1, 0}}, {"groups", int64_t{1}}})),
                  g.add(OpKind::Resize, {x}, attrs({{"mode", std::string("nearest")}, {"size", Ints{10, 12}},
                                                   {"scale0", 0.5}, {"scale1", 0.5}})),
                  g.add(OpKind::Resize, {x}, attrs({{"mode", std::string("linear")}, {"size", Ints{7, 9}},
                                                   {"align_corners", int64_t{0}},
                                                   {"scale0", 5.0 / 7}, {"scale1", 6.0 / 9}})),
                  g.add(OpKind::AdaptiveAvgPool, {x}, attrs({{"size", Ints{1, 1}}})),
                  g.add(OpKind::AdaptiveAvgPool, {x}, attrs({{"size", Ints{3, 4}}})),
                  g.add(OpKind::Tril, {m}, attrs({{"diagonal", int64_t{0}}})),
                  g.add(OpKind::Triu, {m}, attrs({{"diagonal", int64_t{1}}}))});
  expect_matches_reference_in(g, -2, 2);
}

}  // namespace
}  // namespace aotrace::lowering
