// Winograd F(2×2, 3×3) and F(4×4, 3×3) (lowering/winograd.cpp, cpu/emit_winograd.cpp): 3×3
// stride-1 convs computed as input transform + 16 or 36 GEMMs + output transform, compared with
// the reference interpreter's direct conv on the x86-64-v2 baseline (4 lanes), and where this
// machine has them on x86-64-v3 (8 lanes) and x86-64-v4 (16 lanes). Sizes cover outputs that
// are not whole tiles (a last tile partly outside), rows of tiles shorter than one vector and
// over several, padding 0, 1, 2 and asymmetric, batch 2 (tiles of both images in one GEMM),
// channel counts that are not whole GEMM panels, and the fused epilogues. F(4×4) is held to
// f32's tolerance where the outputs are O(1), and where they are large (values of 100 and
// more beside small ones) to its absolute part times the largest magnitude (ir/winograd.h).
#include <cmath>

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

// Every conv Winograd's, with output tiles of `tile` (0: chosen per conv).
Options always(int64_t tile = 0) {
  Options o;
  o.winograd = Options::Winograd::always;
  o.winograd_tile = tile;
  return o;
}

// The dtype's tolerance with its absolute part times the largest magnitude of `g`'s outputs
// (at least 1) on the inputs expect_on_every_cpu draws in [lo, hi): F(4×4)'s error scales with
// it (ir/winograd.h).
Tolerance scaled_tolerance(const ir::Graph& g, double lo, double hi) {
  const std::vector<ir::HostTensor> outputs = ir::evaluate(g, random_inputs(g, 1, lo, hi));
  double largest = 1;
  for (const ir::HostTensor& t : outputs)
    for (int64_t i = 0; i < t.numel(); ++i) largest = std::max(largest, std::abs(t.get(i)));
  const Tolerance t = tolerance_for(outputs.at(0).dtype);
  return {t.rtol, t.atol * largest};
}

// The Winograd transforms' tiles in `g` (each winograd_input's attr).
std::vector<int64_t> tiles_of(const ir::Graph& g) {
  std::vector<int64_t> out;
  for (const auto& node : g.nodes)
    if (node.op == OpKind::WinogradInput) out.push_back(node.attrs.i("tile"));
  return out;
}

int count(const ir::Graph& g, OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op == op;
  return n;
}

// Each size with padding 1 (same size), 0 (valid), 2 and asymmetric (0, 1) / (2, 1); batch 2;
// F(2×2) and F(4×4). 96×90 (F(2×2)) and 130×124 (F(4×4)): over 2000 and 1000 tiles a plane, too
// many to stage in the input transform's stack buffer, so their vectors are stored straight
// into V (the smaller sizes take the staged copy).
TEST(Winograd, MatchesTheDirectConvOverSizesAndPadding) {
  for (int64_t tile : {2, 4})
    for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{
             {4, 4}, {5, 9}, {8, 8}, {7, 33}, {14, 14}, {3, 70}, {96, 90}, {130, 124}}) {
      if ((tile == 2 && h == 130) || (tile == 4 && h == 96)) continue;
      ir::Graph g;
      ir::ValueId x = g.add_input("x", f32({2, 5, h, w}), "L['x']");
      ir::ValueId wt = weight(g, "w", {7, 5, 3, 3}, 3);
      set_outputs(g, {g.add(OpKind::Conv, {x, wt}, conv_attrs({1, 1}, {1, 1})),
                      g.add(OpKind::Conv, {x, wt}, conv_attrs({0, 0}, {0, 0})),
                      g.add(OpKind::Conv, {x, wt}, conv_attrs({2, 2}, {2, 2})),
                      g.add(OpKind::Conv, {x, wt}, conv_attrs({0, 2}, {1, 1}))});
      SCOPED_TRACE("F(" + std::to_string(tile) + "x" + std::to_string(tile) + "), size " + std::to_string(h) + "x" +
                   std::to_string(w));
      LoweredVariant v = expect_on_every_cpu(g, -1, 1, std::nullopt, always(tile));
      EXPECT_EQ(tiles_of(v.graph), std::vector<int64_t>(4, tile));
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
  for (int64_t tile : {2, 4}) {
    SCOPED_TRACE("F(" + std::to_string(tile) + "x" + std::to_string(tile) + ")");
    // The second conv's values reach 200 (weights in [-1, 1), 144 taps of the first's).
    const std::optional<Tolerance> tol = tile == 2 ? std::nullopt : std::optional(scaled_tolerance(g, -2, 2));
    LoweredVariant v = expect_on_every_cpu(g, -2, 2, tol, always(tile));
    EXPECT_EQ(tiles_of(v.graph), std::vector<int64_t>(2, tile));
    // Each conv is one kernel: 16 channels, so its GEMMs and input tiles fuse into the output
    // transform's kernel (fuse.cpp).
    EXPECT_EQ(v.num_kernels(), 2);
  }
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
    for (int64_t tile : {2, 4}) {
      SCOPED_TRACE("F(" + std::to_string(tile) + "x" + std::to_string(tile) + ")");
      // F(4×4): a first conv's value a little off rounds to the neighbouring half, which the
      // second conv carries (as a direct conv that sums in another order would).
      const std::optional<Tolerance> tol = tile == 2 ? std::nullopt : std::optional(scaled_tolerance(g, -2, 2));
      LoweredVariant v = expect_on_every_cpu(g, -2, 2, tol, always(tile));
      EXPECT_EQ(tiles_of(v.graph), std::vector<int64_t>(2, tile));
      EXPECT_EQ(count(v.graph, OpKind::Conv), 0);
      for (const auto& weight : v.graph.weights)
        EXPECT_EQ(v.graph.type(weight.value).dtype == ir::DType::f32, weight.name.find(".winograd") != std::string::npos ||
                                                                            weight.name.find(".packed") != std::string::npos ||
                                                                            weight.name.find(".f32") != std::string::npos)
            << weight.name;
      EXPECT_EQ(v.num_kernels(), 3);  // x cast to f32, then each conv in one kernel
    }
  }
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(ir::DType::bf16, {1, 2, 4, 4}), "L['x']");
  ir::HostTensor filter = ir::HostTensor::zeros(ir::DType::bf16, {2, 2, 3, 3});
  for (int64_t tap = 0; tap < 4; ++tap) filter.set(tap, tap == 0 ? 256 : 0.5);  // output 0, input 0
  ir::ValueId w = g.add_weight("w", typed(ir::DType::bf16, {2, 2, 3, 3}), "L['self'].w", std::make_shared<ir::Bytes>(filter.data));
  set_outputs(g, {g.add(OpKind::Sub, {g.add(OpKind::Conv, {x, w}, conv_attrs({0, 0}, {0, 0})), g.constant(256, ir::DType::bf16)})});
  ir::HostTensor ones = ir::HostTensor::zeros(ir::DType::bf16, {1, 2, 4, 4});
  for (int64_t i = 0; i < ones.numel(); ++i) ones.set(i, 1);
  for (int64_t tile : {2, 4}) {
    LoweredVariant lowered;
    std::vector<ir::HostTensor> out = compile_and_run(g, {ones}, &lowered, always(tile));
    EXPECT_EQ(tiles_of(lowered.graph), std::vector<int64_t>{tile});
    ASSERT_EQ(out.size(), 1u);
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out[0].get(i), 2) << "output " << i << ", tile " << tile;
  }
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
  for (int64_t tile : {2, 4}) {
    SCOPED_TRACE("F(" + std::to_string(tile) + "x" + std::to_string(tile) + ")");
    const Tolerance tol = tile == 2 ? Tolerance{1e-4, 1e-4} : scaled_tolerance(g, -1, 1);
    LoweredVariant v = expect_on_every_cpu(g, -1, 1, tol, always(tile));
    EXPECT_EQ(tiles_of(v.graph), std::vector<int64_t>(4, tile));
    EXPECT_EQ(v.num_kernels(), 4);
    for (int64_t c : {128, 129}) {
      ir::Graph deep;
      ir::ValueId in = deep.add_input("x", f32({1, c, 8, 8}), "L['x']");
      set_outputs(deep, {deep.add(OpKind::Conv, {in, weight(deep, "w", {16, c, 3, 3}, 4)}, conv_attrs({1, 1}, {1, 1}))});
      SCOPED_TRACE(std::to_string(c) + " channels");
      const Tolerance tol = tile == 2 ? Tolerance{1e-4, 1e-4} : scaled_tolerance(deep, -1, 1);
      EXPECT_EQ(expect_matches_reference_in(deep, -1, 1, 1, tol, always(tile)).num_kernels(), c <= 128 ? 1 : 3);
    }
  }
}

// Taken by default where it pays (resnet's layers: 64 channels at 28×28, 7×7 outputs), not for
// few channels or under 16 output tiles (5×5), nor for strided or grouped convs; F(4×4) where
// its GEMMs have 16 columns or more.
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
  LoweredVariant v = expect_matches_reference_in(g, -1, 1, 1, scaled_tolerance(g, -1, 1));
  // F(4×4) at 28×28 (49 tiles), F(2×2) at 7×7 batch 1 (4 tiles of 4×4: GEMMs too narrow).
  EXPECT_EQ(tiles_of(v.graph), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(count(v.graph, OpKind::Conv), 4);
  Options never;
  never.winograd = Options::Winograd::never;
  EXPECT_EQ(count(expect_matches_reference_in(g, -1, 1, 1, std::nullopt, never).graph, OpKind::WinogradInput), 0);
}

// The accuracy ir/winograd.h states, on a resnet-like layer (256 channels at 14×14, inputs in
// [0, 1) as after a ReLU, weights of He's scale): F(4×4) within 5e-6 of the direct conv
// relative to the output's largest magnitude (emulated: 1.6e-6), F(2×2) within 1e-6; and the
// f32 tolerance element by element.
TEST(Winograd, ErrorStaysWithinWhatTheTransformsState) {
  constexpr int64_t C = 256;
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, C, 14, 14}), "L['x']");
  std::vector<int64_t> dims = {C, C, 3, 3};
  auto bytes = std::make_shared<ir::Bytes>(*random_weight_bytes(dims, 7));
  auto* w = reinterpret_cast<float*>(bytes->data());
  const float scale = static_cast<float>(std::sqrt(6.0 / (9 * C)));  // uniform [-1, 1) to He's variance
  for (size_t i = 0; i < bytes->size() / sizeof(float); ++i) w[i] *= scale;
  set_outputs(g, {g.add(OpKind::Conv, {x, g.add_weight("w", f32(dims), "L['self'].w", bytes)}, conv_attrs({1, 1}, {1, 1}))});
  const std::vector<ir::HostTensor> inputs = random_inputs(g, 1, 0, 1);
  const ir::HostTensor expected = ir::evaluate(g, inputs)[0];
  double largest = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) largest = std::max(largest, std::abs(expected.get(i)));
  for (auto [tile, bound] : std::vector<std::pair<int64_t, double>>{{2, 1e-6}, {4, 5e-6}}) {
    SCOPED_TRACE("F(" + std::to_string(tile) + "x" + std::to_string(tile) + ")");
    LoweredVariant lowered;
    const ir::HostTensor actual = compile_and_run(g, inputs, &lowered, always(tile)).at(0);
    EXPECT_EQ(tiles_of(lowered.graph), std::vector<int64_t>{tile});
    double worst = 0;
    for (int64_t i = 0; i < expected.numel(); ++i) worst = std::max(worst, std::abs(actual.get(i) - expected.get(i)));
    EXPECT_LE(worst / largest, bound) << "largest " << largest;
    EXPECT_EQ(compare(actual, expected), "");
  }
}

}  // namespace
}  // namespace aotrace::lowering
