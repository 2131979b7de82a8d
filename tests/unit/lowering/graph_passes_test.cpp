// Pass-level tests: each graph pass on a small graph, and what fusion decides.
#include <algorithm>
#include <tuple>

#include <gtest/gtest.h>

#include "lowering/passes.h"
#include "tests/unit/lowering/plan_runner.h"
#include "tests/unit/lowering/reference_check.h"
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

// A topk ranked as a heap (topk_as_heap: k > kTopkRowsMaxK, or k² > 2n) takes its values as a
// gather at its indices (only the indices kernel ranks the row); the others and a 0-d topk keep
// theirs.
TEST(GraphPasses, WideTopkGathersItsValues) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 4 * kTopkRowsMaxK + 8}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({100, 2}), "L['y']");
  ir::ValueId s = g.add_input("s", f32({}), "L['s']");
  auto topk = [&](ir::ValueId v, int64_t k, int64_t axis) { return topk_of(g, v, k, axis, true); };
  // k² against 2n: 8100 ≤ 2 · 4104 and 196 ≤ 200 (arrays), 225 > 200 (a heap).
  std::vector<ir::ValueId> wide = topk(x, kTopkRowsMaxK + 1, 1), narrow = topk(x, 90, 1);
  std::vector<ir::ValueId> under = topk(y, 14, 0), over = topk(y, 15, 0), scalar = topk(s, 1, 0);
  set_outputs(g, {wide[0], wide[1], narrow[0], under[0], over[0], scalar[0]});
  ir::Graph d = decompose(g);
  EXPECT_EQ(op_names(d), (Names{"topk", "gather", "topk", "topk", "topk", "gather", "topk"}));
  const ir::Node& gather = d.nodes[1];
  EXPECT_EQ(gather.attrs.i("axis"), 1);
  EXPECT_EQ(gather.operands[1], d.nodes[0].results[1]);
  EXPECT_EQ(d.outputs[0], gather.results[0]);
  EXPECT_EQ(d.outputs[1], d.nodes[0].results[1]);
  EXPECT_EQ(d.outputs[2], d.nodes[2].results[0]);
  EXPECT_EQ(d.outputs[3], d.nodes[3].results[0]);
  EXPECT_EQ(d.outputs[4], d.nodes[5].results[0]);
  EXPECT_EQ(d.nodes[5].attrs.i("axis"), 0);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(d.type(d.outputs[i]).str(), g.type(g.outputs[i]).str());
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

// Eval batch norm with weight statistics becomes x * alpha + beta with alpha and beta folded
// into per-channel weights at compile time (no rsqrt per element), with eager's numbers.
TEST(GraphPasses, FoldsBatchNormStatistics) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 4, 3, 3}), "L['x']");
  std::vector<float> var_values{0.5f, 1.5f, 2.0f, 0.25f};
  ir::ValueId var = g.add_weight("bn.running_var", f32({4}), "L['self'].bn.running_var",
                                 std::make_shared<const ir::Bytes>(reinterpret_cast<const uint8_t*>(var_values.data()),
                                                                   reinterpret_cast<const uint8_t*>(var_values.data() + 4)));
  ir::ValueId mean = weight(g, "bn.running_mean", {4}, 3), w = weight(g, "bn.weight", {4}, 4), b = weight(g, "bn.bias", {4}, 5);
  set_outputs(g, {g.add(OpKind::BatchNorm, {x, mean, var, w, b}, attrs({{"eps", 1e-5}}))});
  ir::Graph f = dce(cse(fold_constants(decompose(g))));
  EXPECT_EQ(op_names(f), (Names{"mul", "add"}));
  // Two per-channel weights, [4, 1, 1], named after the statistics they came from.
  int folded = 0;
  for (const auto& weight : f.weights)
    if (weight.source.rfind("reshape(", 0) == 0) {
      EXPECT_EQ(f.type(weight.value).str(), "f32[4, 1, 1]") << weight.name;
      ++folded;
    }
  EXPECT_EQ(folded, 2);
  std::vector<ir::HostTensor> in{random_tensor({2, 4, 3, 3}, 9)};
  std::vector<ir::HostTensor> want = ir::evaluate(g, in), got = ir::evaluate(f, in);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < want[0].numel(); ++i) EXPECT_NEAR(got[0].get(i), want[0].get(i), 1e-5) << i;
}

TEST(GraphPasses, PadConvInputs) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 2, 5, 5}), "L['x']");
  ir::ValueId w = g.add_input("w", f32({3, 2, 3, 3}), "L['w']");
  ir::Attrs conv;
  conv.set("stride", std::vector<int64_t>{1, 1}).set("dilation", std::vector<int64_t>{1, 1})
      .set("groups", int64_t{1});
  ir::Attrs padded = conv, unpadded = conv;
  padded.set("pad_low", std::vector<int64_t>{1, 2}).set("pad_high", std::vector<int64_t>{1, 0});
  unpadded.set("pad_low", std::vector<int64_t>{0, 0}).set("pad_high", std::vector<int64_t>{0, 0});
  set_outputs(g, {g.add(OpKind::Conv, {x, w}, padded), g.add(OpKind::Conv, {x, w}, unpadded)});
  ir::Graph p = pad_conv_inputs(g);
  ASSERT_EQ(op_names(p), (Names{"pad", "conv", "conv"}));
  EXPECT_EQ(p.nodes[0].attrs.ints("low"), (std::vector<int64_t>{0, 0, 1, 2}));
  EXPECT_EQ(p.nodes[0].attrs.ints("high"), (std::vector<int64_t>{0, 0, 1, 0}));
  EXPECT_EQ(p.nodes[1].attrs.ints("pad_low"), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(p.type(p.outputs[0]).str(), g.type(g.outputs[0]).str());
  EXPECT_EQ(p.nodes[2].operands[0], x);  // no padding: unchanged
  // Fusion materialises the pad as the conv's input: a kernel of its own.
  EXPECT_EQ(fuse(p).kernels.size(), 3u);
}

// A strided 1×1 conv (resnet's downsampling shortcut) reads a strided slice of its input as a
// stride-1 conv: strides (2, 2) and (3, 1) over odd sizes, with padding and a bias, batch 2.
TEST(GraphPasses, StridedOneByOneConvsReadASubsampledInput) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 8, 13, 11}), "L['x']");
  ir::ValueId w = g.add_weight("w", f32({12, 8, 1, 1}), "L['self'].w", random_weight_bytes({12, 8, 1, 1}, 1));
  ir::ValueId b = g.add_weight("b", f32({12}), "L['self'].b", random_weight_bytes({12}, 2));
  auto conv = [&](std::vector<int64_t> stride, std::vector<int64_t> pad) {
    ir::Attrs a;
    a.set("stride", stride).set("dilation", std::vector<int64_t>{1, 1}).set("groups", int64_t{1})
        .set("pad_low", pad).set("pad_high", pad);
    return g.add(OpKind::Conv, {x, w, b}, a);
  };
  set_outputs(g, {conv({2, 2}, {0, 0}), conv({3, 1}, {0, 0}), conv({2, 2}, {1, 1})});
  ir::Graph p = pad_conv_inputs(g);
  ASSERT_EQ(op_names(p), (Names{"slice", "slice", "conv", "slice", "conv", "pad", "slice", "slice", "conv"}));
  for (const ir::Node& n : p.nodes)
    if (n.op == OpKind::Conv) EXPECT_EQ(n.attrs.ints("stride"), (std::vector<int64_t>{1, 1}));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(p.type(p.outputs[i]).str(), g.type(g.outputs[i]).str());
  expect_matches_reference_in(g, -1, 1);
}

TEST(GraphPasses, PackWeightsKeepsTheMeaning) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({5, 20}), "L['x']");
  ir::ValueId img = g.add_input("img", f32({1, 3, 6, 6}), "L['img']");
  ir::ValueId w = g.add_weight("w", f32({19, 20}), "L['self'].w", random_weight_bytes({19, 20}, 1));
  ir::ValueId k = g.add_weight("k", f32({7, 3, 3, 3}), "L['self'].k", random_weight_bytes({7, 3, 3, 3}, 2));
  ir::Attrs conv;
  conv.set("stride", std::vector<int64_t>{1, 1}).set("dilation", std::vector<int64_t>{1, 1})
      .set("groups", int64_t{1}).set("pad_low", std::vector<int64_t>{0, 0})
      .set("pad_high", std::vector<int64_t>{0, 0});
  set_outputs(g, {g.add(OpKind::Matmul, {x, g.add(OpKind::Permute, {w}, perm_attrs({1, 0}))}),
                  g.add(OpKind::Conv, {img, k}, conv)});
  ir::Graph p = pack_weights(g);
  ASSERT_EQ(p.weights.size(), 4u);
  EXPECT_EQ(p.type(p.weights[2].value).str(), "f32[2, 20, 16]");  // 19 columns in panels of 16
  EXPECT_EQ(p.type(p.weights[3].value).str(), "f32[2, 27, 6]");   // 7 rows in panels of 6
  EXPECT_EQ(p.weights[2].source, "packed_b16(L['self'].w)");
  std::vector<ir::HostTensor> inputs = {random_tensor({5, 20}, 3), random_tensor({1, 3, 6, 6}, 4)};
  std::vector<ir::HostTensor> before = ir::evaluate(g, inputs), after = ir::evaluate(p, inputs);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(compare(after[i], before[i], 0, 0), "") << i;
  // Too few rows for a GEMM (M = 1): left alone.
  ir::Graph one;
  ir::ValueId x1 = one.add_input("x", f32({1, 20}), "L['x']");
  ir::ValueId w1 = one.add_weight("w", f32({19, 20}), "L['self'].w", random_weight_bytes({19, 20}, 1));
  set_outputs(one, {one.add(OpKind::Matmul, {x1, one.add(OpKind::Permute, {w1}, perm_attrs({1, 0}))})});
  EXPECT_EQ(pack_weights(one).weights.size(), 1u);
}

// A weight as a batched matmul's A (winograd's U [16, O, C]): A panels per batch, read back
// through permute + reshape + slice; one that broadcasts over the batch is left alone.
TEST(GraphPasses, PackWeightsPacksABatchedWeightA) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 20, 9}), "L['x']");
  ir::ValueId u = g.add_weight("u", f32({3, 8, 20}), "L['self'].u", random_weight_bytes({3, 8, 20}, 1));
  ir::ValueId shared = g.add_weight("s", f32({8, 20}), "L['self'].s", random_weight_bytes({8, 20}, 2));
  set_outputs(g, {g.add(OpKind::Matmul, {u, x}), g.add(OpKind::Matmul, {shared, x})});
  ir::Graph p = pack_weights(g);
  ASSERT_EQ(p.weights.size(), 3u);
  EXPECT_EQ(p.type(p.weights[2].value).str(), "f32[3, 2, 20, 6]");  // 8 rows in panels of 6
  EXPECT_EQ(p.weights[2].source, "packed_a6_mk(L['self'].u)");
  int packed = 0;
  for (const ir::Node& n : p.nodes) packed += n.attrs.has("packed_a") ? 1 : 0;
  EXPECT_EQ(packed, 1);
  std::vector<ir::HostTensor> inputs = {random_tensor({3, 20, 9}, 3)};
  std::vector<ir::HostTensor> before = ir::evaluate(g, inputs), after = ir::evaluate(p, inputs);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(compare(after[i], before[i], 0, 0), "") << i;
}

FusedGraph fused(const ir::Graph& g) { return fuse(dce(cse(fold_constants(decompose(g))))); }

ir::Attrs conv_attrs(std::vector<int64_t> stride, std::vector<int64_t> low, std::vector<int64_t> high, int64_t groups) {
  return attrs({{"stride", stride}, {"dilation", std::vector<int64_t>{1, 1}}, {"pad_low", low}, {"pad_high", high},
                {"groups", groups}});
}

// An inverted residual block as mobilenet_v2 and efficientnet build it: a 1×1 expand with a
// batch-norm-like scale and shift and ReLU6, a depthwise conv (`k`×`k`, `stride`), SiLU, a
// squeeze-excitation scale from the spatial mean, a 1×1 project and the residual add; the
// feature map is also a graph output, so it converts back to NCHW there. In dtype `t`.
ir::Graph inverted_residual(int64_t c, int64_t k, int64_t stride, ir::DType t = ir::DType::f32) {
  ir::Graph g;
  const int64_t e = c * 4, pad = k / 2;
  auto w = [&](const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
    return typed_weight(g, t, name, std::move(dims), seed);
  };
  ir::ValueId x = g.add_input("x", typed(t, {1, 16, 11, 11}), "L['x']");
  ir::ValueId h = g.add(OpKind::Conv, {x, w("expand", {e, 16, 1, 1}, 1), w("expand.b", {e}, 2)},
                        conv_attrs({1, 1}, {0, 0}, {0, 0}, 1));
  h = g.add(OpKind::Add, {g.add(OpKind::Mul, {h, w("bn.scale", {e, 1, 1}, 3)}), w("bn.shift", {e, 1, 1}, 4)});
  h = g.add(OpKind::Minimum, {g.add(OpKind::Maximum, {h, g.constant(0, t)}), g.constant(6, t)});
  ir::ValueId d = g.add(OpKind::Conv, {h, w("dw", {e, 1, k, k}, 5), w("dw.b", {e}, 6)},
                        conv_attrs({stride, stride}, {pad, pad}, {pad, pad}, e));
  d = g.add(OpKind::Mul, {d, g.add(OpKind::Sigmoid, {d})});
  ir::ValueId pooled = g.add(OpKind::Mean, {d}, reduce_attrs({2, 3}, true));
  d = g.add(OpKind::Mul, {d, g.add(OpKind::Sigmoid, {pooled})});
  ir::ValueId y = g.add(OpKind::Conv, {d, w("project", {16, e, 1, 1}, 7)}, conv_attrs({1, 1}, {0, 0}, {0, 0}, 1));
  if (stride == 1) y = g.add(OpKind::Add, {y, x});
  set_outputs(g, {y, d, g.add(OpKind::Mean, {d}, reduce_attrs({2, 3}, false))});
  return g;
}

// The block's convs become two matmuls and elementwise taps: no conv is left, and the lowered
// graph gives the reference's numbers (3×3 and 5×5, stride 1 and 2, 64 and 80 expanded
// channels: whole vectors and a tail).
TEST(ChannelsLast, InvertedResidualBlocksRunChannelsLast) {
  for (auto [c, k, stride] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{16, 3, 1}, {20, 5, 2}, {16, 3, 2}}) {
    SCOPED_TRACE("expanded " + std::to_string(4 * c) + ", " + std::to_string(k) + "x" + std::to_string(k) +
                 ", stride " + std::to_string(stride));
    ir::Graph g = inverted_residual(c, k, stride);
    Names ops = op_names(channels_last(decompose(g)));
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "conv"), 0);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "matmul"), 2);
    expect_on_every_cpu(g);
  }
}

// f16 and bf16 blocks run channels-last too: the 1×1 convs as half matmuls (the packed GEMM),
// the depthwise conv's taps in f32 (its input cast to f32, f32 tap and bias weights) with one
// cast back, so that the conv rounds once, as the NCHW conv and eager's do, not after each tap:
// in bf16, 256 + 0.5 + 0.5 + 0.5 is 257.5, which rounds to 258, so minus 256 is 2; rounded tap by
// tap it stays 256 (0).
TEST(ChannelsLast, HalfBlocksRunChannelsLastRoundingEachConvOnce) {
  for (ir::DType t : {ir::DType::f16, ir::DType::bf16}) {
    SCOPED_TRACE(ir::dtype_name(t));
    ir::Graph g = inverted_residual(16, 3, 1, t);
    ir::Graph converted = channels_last(decompose(g));
    Names ops = op_names(converted);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "conv"), 0);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "matmul"), 2);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "cast"), 2);  // the input, the sum
    for (const auto& weight : converted.weights)
      if (weight.name.find(".tap") != std::string::npos || weight.name == "dw.b.f32")
        EXPECT_EQ(converted.type(weight.value).dtype, ir::DType::f32) << weight.name;
    // The block's values reach 11: a few units in the last place of that apart (sums in
    // another order, rounded in f16 or bf16, through ReLU6, SiLU and the 1×1 convs).
    expect_on_every_cpu(g, -1, 1, t == ir::DType::f16 ? Tolerance{1e-2, 1e-2} : Tolerance{2e-2, 8e-2});
  }
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(ir::DType::bf16, {1, 64, 3, 3}), "L['x']");
  ir::HostTensor filter = ir::HostTensor::zeros(ir::DType::bf16, {64, 1, 3, 3});
  for (int64_t c = 0; c < 64; ++c)
    for (int64_t tap = 0; tap < 4; ++tap) filter.set(c * 9 + tap, tap == 0 ? 256 : 0.5);
  ir::ValueId w = g.add_weight("dw", typed(ir::DType::bf16, {64, 1, 3, 3}), "L['self'].dw",
                               std::make_shared<ir::Bytes>(filter.data));
  set_outputs(g, {g.add(OpKind::Sub, {g.add(OpKind::Conv, {x, w}, conv_attrs({1, 1}, {0, 0}, {0, 0}, 64)),
                                       g.constant(256, ir::DType::bf16)})});
  Names single = op_names(channels_last(decompose(g)));
  ASSERT_EQ(std::count(single.begin(), single.end(), "conv"), 0);
  ir::HostTensor ones = ir::HostTensor::zeros(ir::DType::bf16, {1, 64, 3, 3});
  for (int64_t i = 0; i < ones.numel(); ++i) ones.set(i, 1);
  std::vector<ir::HostTensor> out = compile_and_run(g, {ones});
  ASSERT_EQ(out.size(), 1u);
  for (int64_t c = 0; c < 64; ++c) EXPECT_EQ(out[0].get(c), 2) << "channel " << c;
}

// An operand broadcast along one spatial dim only ([1, 1, H, 1], [W]) has no [N, H·W, C]
// form: that op runs NCHW, between converted neighbours, and the numbers stay the reference's.
TEST(ChannelsLast, PartialSpatialBroadcastsRunNchw) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 64, 9, 7}), "L['x']");
  ir::ValueId d = g.add(OpKind::Conv, {x, weight(g, "dw", {64, 1, 3, 3}, 1)}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 64));
  d = g.add(OpKind::Mul, {d, weight(g, "rows", {1, 1, 9, 1}, 2)});
  d = g.add(OpKind::Add, {d, weight(g, "cols", {7}, 3)});
  d = g.add(OpKind::Conv, {g.add(OpKind::Relu, {d}), weight(g, "dw2", {64, 1, 3, 3}, 4)}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 64));
  set_outputs(g, {d});
  Names ops = op_names(channels_last(decompose(g)));
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "conv"), 0);
  expect_on_every_cpu(g);
}

// resnet's bottleneck (1×1, 3×3, 1×1) has no depthwise conv: it stays NCHW, as does a
// depthwise conv of fewer than 64 channels and its 1×1 neighbours.
TEST(ChannelsLast, ChainsWithoutAWideDepthwiseConvStayNchw) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 32, 8, 8}), "L['x']");
  ir::ValueId h = g.add(OpKind::Relu, {g.add(OpKind::Conv, {x, weight(g, "a", {16, 32, 1, 1}, 1)}, conv_attrs({1, 1}, {0, 0}, {0, 0}, 1))});
  h = g.add(OpKind::Relu, {g.add(OpKind::Conv, {h, weight(g, "b", {16, 16, 3, 3}, 2)}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 1))});
  h = g.add(OpKind::Conv, {h, weight(g, "c", {32, 16, 1, 1}, 3)}, conv_attrs({1, 1}, {0, 0}, {0, 0}, 1));
  h = g.add(OpKind::Conv, {g.add(OpKind::Add, {h, x}), weight(g, "dw", {32, 1, 3, 3}, 4)}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 32));
  set_outputs(g, {g.add(OpKind::Conv, {h, weight(g, "d", {8, 32, 1, 1}, 5)}, conv_attrs({1, 1}, {0, 0}, {0, 0}, 1))});
  ir::Graph d = decompose(g);
  EXPECT_EQ(op_names(channels_last(d)), op_names(d));
}

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

// Only topk's indices used (torch.topk(...)[1], greedy decoding): its operand's producers still
// follow the rules, so the matmul (with exp as its epilogue) is a kernel of its own, computed
// once, and not inlined into topk's loops, which read each element k times.
TEST(Fusion, TopKIndicesOnlyKeepsItsOperandsKernels) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 8}), "L['x']");
  ir::ValueId w = g.add_input("w", f32({8, 10}), "L['w']");
  ir::ValueId m = g.add(OpKind::Matmul, {x, w});
  ir::ValueId e = g.add(OpKind::Exp, {m});
  std::vector<ir::ValueId> t = topk_of(g, e, 2, 1, true);
  set_outputs(g, {t[1]});
  FusedGraph f = fused(g);
  ASSERT_EQ(f.kernels.size(), 2u);
  EXPECT_EQ(f.kernels[0].root, e);
  EXPECT_EQ(f.kernels[1].root, t[1]);
  EXPECT_EQ(f.kernels[1].reads, (std::vector<ir::ValueId>{e}));
}

// Attention's heads merged back (`y.transpose(1, 2).reshape(B, T, C)`) and multiplied by the
// output projection: the reshape of the permute is no strided view, so it is copied by a kernel
// of its own (as eager's .contiguous() does) and the projection's GEMM reads the copy in place.
// A weight's permute + reshape (pack_weights' panels) stays inlined. Values checked by
// Gemm.AttentionOperandsAreStridedViews and the gpt2/bert model tests.
TEST(Fusion, HeadsMergedByPermuteAndReshapeAreCopiedOnceForTheGemm) {
  ir::Graph g;
  ir::ValueId y = g.add_input("y", f32({1, 4, 8, 16}), "L['y']");  // [B, heads, T, head dim]
  ir::ValueId w = g.add_input("w", f32({64, 64}), "L['w']");
  ir::ValueId merged = g.add(OpKind::Reshape, {g.add(OpKind::Permute, {y}, perm_attrs({0, 2, 1, 3}))}, shape_attrs({1, 8, 64}));
  set_outputs(g, {g.add(OpKind::Matmul, {merged, w})});
  FusedGraph f = fused(g);
  ASSERT_EQ(f.kernels.size(), 2u);
  EXPECT_EQ(f.kernels[0].root, merged);
  EXPECT_EQ(f.kernels[1].reads, (std::vector<ir::ValueId>{merged, w}));
  // Without a GEMM reading it, the same view stays an index map of its consumer.
  ir::Graph e;
  ir::ValueId ye = e.add_input("y", f32({1, 4, 8, 16}), "L['y']");
  ir::ValueId me = e.add(OpKind::Reshape, {e.add(OpKind::Permute, {ye}, perm_attrs({0, 2, 1, 3}))}, shape_attrs({1, 8, 64}));
  set_outputs(e, {e.add(OpKind::Exp, {me})});
  EXPECT_EQ(fused(e).kernels.size(), 1u);
}

}  // namespace
}  // namespace aotrace::lowering

namespace aotrace::lowering {
namespace {

// conv_taps cuts the taps that read only padding: a 3×3 conv (padding 1) of 1×1 images is a
// 1×1 conv; ASPP's dilation 36 over a 4×4 map keeps the centre tap; a 1-row image keeps a
// 1×3 kernel; stride 2 cuts the first tap only; a cut that starts past the padding crops
// (negative padding); a grouped conv with a bias; a conv1d; f16. A 1×1 stride-2 conv whose
// only tap reads padding, and a conv whose every tap is live, stay as they are. The lowered
// graph (every later pass, the kernels) against the reference of the original convs.
TEST(GraphPasses, ConvTapsReadingOnlyPaddingAreCut) {
  ir::Graph g;
  auto conv = [&](ir::ValueId x, std::vector<int64_t> w, std::vector<int64_t> stride, std::vector<int64_t> dilation,
                  std::vector<int64_t> low, std::vector<int64_t> high, int64_t groups = 1, bool bias = false,
                  ir::DType t = ir::DType::f32) {
    const int seed = static_cast<int>(g.nodes.size()) + 1;
    std::vector<ir::ValueId> operands = {x, typed_weight(g, t, "w" + std::to_string(seed), w, seed)};
    if (bias) operands.push_back(typed_weight(g, t, "b" + std::to_string(seed), {w[0]}, seed + 100));
    ir::Attrs a;
    a.set("stride", stride).set("dilation", dilation).set("groups", groups).set("pad_low", low).set("pad_high", high);
    return g.add(OpKind::Conv, operands, a);
  };
  ir::ValueId one = g.add_input("one", f32({2, 8, 1, 1}), "L['one']");
  ir::ValueId map = g.add_input("map", f32({1, 6, 4, 4}), "L['map']");
  ir::ValueId row = g.add_input("row", f32({1, 4, 1, 9}), "L['row']");
  ir::ValueId two = g.add_input("two", f32({1, 4, 2, 2}), "L['two']");
  ir::ValueId crop = g.add_input("crop", f32({1, 3, 4, 4}), "L['crop']");
  ir::ValueId seq = g.add_input("seq", f32({2, 5, 3}), "L['seq']");
  ir::ValueId half = g.add_input("half", typed(ir::DType::f16, {1, 8, 1, 1}), "L['half']");
  ir::ValueId live = g.add_input("live", f32({1, 4, 5, 5}), "L['live']");
  set_outputs(g, {conv(one, {10, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
                  conv(map, {5, 6, 3, 3}, {1, 1}, {36, 36}, {36, 36}, {36, 36}),
                  conv(row, {7, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}),
                  conv(two, {5, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}),
                  conv(crop, {4, 3, 3, 3}, {1, 1}, {3, 3}, {2, 2}, {2, 2}),
                  conv(one, {12, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 4, true),
                  conv(seq, {6, 5, 5}, {1}, {4}, {8}, {8}),
                  conv(half, {6, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, true, ir::DType::f16),
                  conv(one, {3, 8, 1, 1}, {2, 2}, {1, 1}, {1, 1}, {1, 1}),
                  conv(live, {3, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1})});
  ir::Graph cut = conv_taps(g);
  std::vector<std::string> kernels;
  std::vector<std::vector<int64_t>> pads;
  for (const ir::Node& n : cut.nodes)
    if (n.op == OpKind::Conv) {
      kernels.push_back(cut.type(n.operands[1]).str());
      std::vector<int64_t> p = n.attrs.ints("pad_low"), high = n.attrs.ints("pad_high");
      p.insert(p.end(), high.begin(), high.end());
      pads.push_back(p);
    }
  EXPECT_EQ(kernels, (Names{"f32[10, 8, 1, 1]", "f32[5, 6, 1, 1]", "f32[7, 4, 1, 3]", "f32[5, 4, 2, 2]", "f32[4, 3, 1, 1]",
                            "f32[12, 2, 1, 1]", "f32[6, 5, 1]", "f16[6, 8, 1, 1]", "f32[3, 8, 1, 1]", "f32[3, 4, 3, 3]"}));
  EXPECT_EQ(pads, (std::vector<std::vector<int64_t>>{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 1, 0, 1}, {0, 0, 0, 0}, {-1, -1, -1, -1},
                                                     {0, 0, 0, 0}, {0, 0}, {0, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 1, 1}}));
  for (size_t i = 0; i < g.outputs.size(); ++i) EXPECT_EQ(cut.type(cut.outputs[i]).str(), g.type(g.outputs[i]).str());
  expect_matches_reference_in(g, -1, 1);
}

}  // namespace
}  // namespace aotrace::lowering
