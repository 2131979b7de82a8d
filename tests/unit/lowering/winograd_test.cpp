// Winograd F(2×2, 3×3) (lowering/winograd.cpp, cpu/emit_winograd.cpp): 3×3 stride-1 convs
// computed as input transform + 16 GEMMs + output transform, compared with the reference
// interpreter's direct conv on the x86-64-v2 baseline (4 lanes), and where this machine has
// them on x86-64-v3 (8 lanes) and x86-64-v4 (16 lanes). Sizes cover odd and even outputs (a
// last tile half outside), rows of tiles shorter than one vector and over several, padding 0,
// 1, 2 and asymmetric, batch 2 (tiles of both images in one GEMM), channel counts that are not
// whole GEMM panels, and the fused epilogues.
#include <gtest/gtest.h>

#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::OpKind;
using Ints = std::vector<int64_t>;

ir::Attrs conv_attrs(Ints low, Ints high) {
  return attrs({{"stride", Ints{1, 1}}, {"dilation", Ints{1, 1}}, {"pad_low", low}, {"pad_high", high},
                {"groups", int64_t{1}}});
}

Options always() {
  Options o;
  o.winograd = Options::Winograd::always;
  return o;
}

int count(const ir::Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op == op;
  return n;
}

// Each size with padding 1 (same size), 0 (valid), 2 and asymmetric (0, 1) / (2, 1); batch 2.
// 96×90: over 2000 tiles a plane, too many to stage in the input transform's stack buffer, so
// its vectors are stored straight into V (the smaller sizes take the staged copy).
TEST(Winograd, MatchesTheDirectConvOverSizesAndPadding) {
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {5, 9}, {8, 8}, {7, 33}, {14, 14}, {3, 70}, {96, 90}}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", f32({2, 5, h, w}), "L['x']");
    ir::ValueId wt = weight(g, "w", {7, 5, 3, 3}, 3);
    set_outputs(g, {g.add(OpKind::Conv, {x, wt}, conv_attrs({1, 1}, {1, 1})),
                    g.add(OpKind::Conv, {x, wt}, conv_attrs({0, 0}, {0, 0})),
                    g.add(OpKind::Conv, {x, wt}, conv_attrs({2, 2}, {2, 2})),
                    g.add(OpKind::Conv, {x, wt}, conv_attrs({0, 2}, {1, 1}))});
    SCOPED_TRACE("size " + std::to_string(h) + "x" + std::to_string(w));
    LoweredVariant v = expect_on_every_cpu(g, -1, 1, std::nullopt, always());
    EXPECT_EQ(count(v.graph, OpKind::WinogradInput), 4);
    EXPECT_EQ(count(v.graph, OpKind::Conv), 0);
    // Per conv: the input transform, the GEMMs, the output transform.
    EXPECT_EQ(v.num_kernels(), 12);
  }
}

// resnet's block: conv + bias, batch norm, ReLU, and the second conv's residual add: the
// epilogue fuses into the output transform's kernel. Inputs in [-2, 2].
TEST(Winograd, BiasBatchNormReluAndResidualFuseIntoTheOutputTransform) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 16, 10, 12}), "L['x']");
  ir::ValueId w1 = weight(g, "w1", {16, 16, 3, 3}, 1), w2 = weight(g, "w2", {16, 16, 3, 3}, 2);
  ir::ValueId b = weight(g, "b", {16}, 3);
  ir::ValueId scale = weight(g, "scale", {16, 1, 1}, 4), shift = weight(g, "shift", {16, 1, 1}, 5);
  ir::ValueId y = g.add(OpKind::Conv, {x, w1, b}, conv_attrs({1, 1}, {1, 1}));
  y = g.add(OpKind::Relu, {g.add(OpKind::Add, {g.add(OpKind::Mul, {y, scale}), shift})});
  y = g.add(OpKind::Conv, {y, w2}, conv_attrs({1, 1}, {1, 1}));
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {y, x})})});
  LoweredVariant v = expect_on_every_cpu(g, -2, 2, std::nullopt, always());
  EXPECT_EQ(count(v.graph, OpKind::WinogradOutput), 2);
  // Each conv is one kernel: 16 channels, so its GEMMs and input tiles fuse into the output
  // transform's kernel (fuse.cpp).
  EXPECT_EQ(v.num_kernels(), 2);
}

// f16 and bf16 convs take it too, in f32: the input cast to f32 (where another kernel produces
// it, as the second conv's, the cast is that kernel's root), U and the bias f32 weights, the
// result cast back once,
// so the conv rounds once: in bf16, 256 + 0.5 + 0.5 + 0.5 is 257.5, which rounds to 258, and
// minus 256 is 2 (rounded tap by tap it would be 0, unrounded 1.5).
TEST(Winograd, HalfConvsRunInF32AndRoundOnce) {
  for (ir::DType t : {ir::DType::f16, ir::DType::bf16}) {
    SCOPED_TRACE(ir::dtype_name(t));
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {1, 16, 10, 12}), "L['x']");
    ir::ValueId y = g.add(OpKind::Conv, {x, typed_weight(g, t, "w1", {16, 16, 3, 3}, 1), typed_weight(g, t, "b", {16}, 3)},
                          conv_attrs({1, 1}, {1, 1}));
    y = g.add(OpKind::Relu, {g.add(OpKind::Add, {g.add(OpKind::Mul, {y, typed_weight(g, t, "scale", {16, 1, 1}, 4)}),
                                                 typed_weight(g, t, "shift", {16, 1, 1}, 5)})});
    y = g.add(OpKind::Conv, {y, typed_weight(g, t, "w2", {16, 16, 3, 3}, 2)}, conv_attrs({1, 1}, {1, 1}));
    set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {y, x})})});
    LoweredVariant v = expect_on_every_cpu(g, -2, 2, std::nullopt, always());
    EXPECT_EQ(count(v.graph, OpKind::WinogradOutput), 2);
    EXPECT_EQ(count(v.graph, OpKind::Conv), 0);
    for (const auto& weight : v.graph.weights)
      EXPECT_EQ(v.graph.type(weight.value).dtype == ir::DType::f32, weight.name.find(".winograd") != std::string::npos ||
                                                                          weight.name.find(".packed") != std::string::npos ||
                                                                          weight.name.find(".f32") != std::string::npos)
          << weight.name;
    EXPECT_EQ(v.num_kernels(), 3);  // x cast to f32, then each conv in one kernel
  }
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(ir::DType::bf16, {1, 2, 4, 4}), "L['x']");
  ir::HostTensor filter = ir::HostTensor::zeros(ir::DType::bf16, {2, 2, 3, 3});
  for (int64_t tap = 0; tap < 4; ++tap) filter.set(tap, tap == 0 ? 256 : 0.5);  // output 0, input 0
  ir::ValueId w = g.add_weight("w", typed(ir::DType::bf16, {2, 2, 3, 3}), "L['self'].w", std::make_shared<ir::Bytes>(filter.data));
  set_outputs(g, {g.add(OpKind::Sub, {g.add(OpKind::Conv, {x, w}, conv_attrs({0, 0}, {0, 0})), g.constant(256, ir::DType::bf16)})});
  ir::HostTensor ones = ir::HostTensor::zeros(ir::DType::bf16, {1, 2, 4, 4});
  for (int64_t i = 0; i < ones.numel(); ++i) ones.set(i, 1);
  LoweredVariant lowered;
  std::vector<ir::HostTensor> out = compile_and_run(g, {ones}, &lowered, always());
  EXPECT_EQ(count(lowered.graph, OpKind::WinogradInput), 1);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out[0].get(i), 2) << "output " << i;
}

// The fused kernel (emit_winograd_fused): input channels over one K step (100: two of 50), output
// channels over one task's rows (80: 72 + 8, not whole MR panels), batch 3 with blocks of tile
// rows that span images (tiles 5 × 7, blocks of 9 rows), a row of tiles wider than a block
// (116 tiles: one row per block, its last panel partly past the tiles), padding 1, 0 and
// asymmetric, and bias + residual + ReLU as epilogue. 128 input channels still fuse, 129 do not.
TEST(Winograd, FusedConvMatchesTheDirectConv) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 100, 9, 13}), "L['x']");
  ir::ValueId res = g.add_input("res", f32({3, 80, 9, 13}), "L['res']");
  ir::ValueId wide = g.add_input("wide", f32({1, 20, 6, 232}), "L['wide']");
  ir::ValueId w = weight(g, "w", {80, 100, 3, 3}, 1), b = weight(g, "b", {80}, 2);
  ir::ValueId w7 = weight(g, "w7", {7, 20, 3, 3}, 3);
  ir::ValueId y = g.add(OpKind::Conv, {x, w, b}, conv_attrs({1, 1}, {1, 1}));
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {y, res})}),
                  g.add(OpKind::Conv, {x, w}, conv_attrs({0, 2}, {1, 0})),
                  g.add(OpKind::Conv, {wide, w7}, conv_attrs({1, 1}, {1, 1})),
                  g.add(OpKind::Conv, {wide, w7}, conv_attrs({0, 0}, {0, 0}))});
  LoweredVariant v = expect_on_every_cpu(g, -1, 1, Tolerance{1e-4, 1e-4}, always());
  EXPECT_EQ(count(v.graph, OpKind::WinogradOutput), 4);
  EXPECT_EQ(v.num_kernels(), 4);

  for (int64_t c : {128, 129}) {
    ir::Graph deep;
    ir::ValueId in = deep.add_input("x", f32({1, c, 8, 8}), "L['x']");
    set_outputs(deep, {deep.add(OpKind::Conv, {in, weight(deep, "w", {16, c, 3, 3}, 4)}, conv_attrs({1, 1}, {1, 1}))});
    SCOPED_TRACE(std::to_string(c) + " channels");
    EXPECT_EQ(expect_matches_reference_in(deep, -1, 1, 1, Tolerance{1e-4, 1e-4}, always()).num_kernels(), c <= 128 ? 1 : 3);
  }
}

// Taken by default where it pays (resnet's layers: 64 channels at 28×28, 7×7 outputs), not for
// few channels or under 16 output tiles (5×5), nor for strided or grouped convs.
TEST(Winograd, ChosenWhereItPays) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 64, 28, 28}), "L['x']");
  ir::ValueId seven = g.add_input("seven", f32({1, 64, 7, 7}), "L['seven']");
  ir::ValueId five = g.add_input("five", f32({1, 64, 5, 5}), "L['five']");
  ir::ValueId narrow = g.add_input("narrow", f32({1, 8, 28, 28}), "L['narrow']");
  ir::ValueId w = weight(g, "w", {64, 64, 3, 3}, 1), thin = weight(g, "thin", {64, 4, 3, 3}, 2);
  ir::ValueId w8 = weight(g, "w8", {64, 8, 3, 3}, 3);
  ir::Attrs same = conv_attrs({1, 1}, {1, 1});
  auto with = [&](const char* key, int64_t v) {
    ir::Attrs a = same;
    a.set(key, key == std::string("groups") ? ir::AttrValue(v) : ir::AttrValue(Ints{v, v}));
    return a;
  };
  set_outputs(g, {g.add(OpKind::Conv, {x, w}, same), g.add(OpKind::Conv, {seven, w}, same),
                  g.add(OpKind::Conv, {five, w}, same), g.add(OpKind::Conv, {narrow, w8}, same),
                  g.add(OpKind::Conv, {x, thin}, with("groups", 16)), g.add(OpKind::Conv, {x, w}, with("stride", 2))});
  LoweredVariant v = expect_matches_reference_in(g, -1, 1);
  EXPECT_EQ(count(v.graph, OpKind::WinogradInput), 2);
  EXPECT_EQ(count(v.graph, OpKind::Conv), 4);
  Options never;
  never.winograd = Options::Winograd::never;
  EXPECT_EQ(count(expect_matches_reference_in(g, -1, 1, 1, std::nullopt, never).graph, OpKind::WinogradInput), 0);
}

}  // namespace
}  // namespace aotrace::lowering
