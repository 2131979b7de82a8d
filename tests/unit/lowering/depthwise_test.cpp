// The depthwise conv kernels (lowering/cpu/emit_depthwise.cpp): 3x3 and 5x5 windows, stride 1
// and 2, padding 0, 1 and 2 (border vectors: masked loads; interior: plain loads), dilation,
// output widths from 1 to 33 (partial vectors, rows narrower than one vector), a channel
// multiplier of 2, and fused epilogues (bias, batch-norm-like scale and shift, ReLU6, SiLU,
// hardswish, a residual add). Compared with the reference interpreter on the x86-64-v2 baseline
// (4 lanes), and where this machine has them on x86-64-v3 (8 lanes) and x86-64-v4 (16 lanes).
// Symbolic sizes: Dynamic.DepthwiseConvWithSymbolicBatchHeightAndWidth (dynamic_test.cpp).
#include <cmath>

#include <gtest/gtest.h>

#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::DType;
using ir::OpKind;
using Ints = std::vector<int64_t>;

ir::Attrs dw_attrs(Ints stride, Ints dilation, Ints low, Ints high, int64_t groups) {
  return attrs({{"stride", stride}, {"dilation", dilation}, {"pad_low", low}, {"pad_high", high},
                {"groups", groups}});
}

// Each width, a graph of every window, stride and padding whose output is not empty: the convs
// keep their padding (no pad kernels), one kernel each.
TEST(Depthwise, Windows3And5Strides1And2Padding012OverWidths1To33) {
  for (int64_t width : {1, 3, 7, 17, 33}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", f32({1, 3, 9, width}), "L['x']");
    std::vector<ir::ValueId> outs;
    uint32_t seed = 1;
    for (int64_t k : {3, 5})
      for (int64_t stride : {1, 2})
        for (int64_t pad : {0, 1, 2}) {
          if (width + 2 * pad < k) continue;
          ir::ValueId w = weight(g, "w" + std::to_string(seed), {3, 1, k, k}, seed);
          ++seed;
          outs.push_back(g.add(OpKind::Conv, {x, w}, dw_attrs({stride, stride}, {1, 1}, {pad, pad}, {pad, pad}, 3)));
        }
    set_outputs(g, outs);
    SCOPED_TRACE("width " + std::to_string(width));
    EXPECT_EQ(expect_on_every_cpu(g).num_kernels(), static_cast<int>(outs.size()));
  }
}

// Wider rows (several interior vectors between the border ones), dilation 2 in both dims and in
// one, a height stride different from the width's, asymmetric and negative padding, batch 2.
TEST(Depthwise, Dilation2MixedStridesAsymmetricPaddingAndBatch2) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 4, 12, 70}), "L['x']");
  ir::ValueId w3 = weight(g, "w3", {4, 1, 3, 3}, 1), w5 = weight(g, "w5", {4, 1, 5, 5}, 2);
  ir::ValueId w13 = weight(g, "w13", {4, 1, 1, 3}, 3);
  set_outputs(g, {g.add(OpKind::Conv, {x, w3}, dw_attrs({1, 1}, {2, 2}, {2, 2}, {2, 2}, 4)),
                  g.add(OpKind::Conv, {x, w3}, dw_attrs({2, 2}, {2, 2}, {2, 2}, {2, 2}, 4)),
                  g.add(OpKind::Conv, {x, w5}, dw_attrs({1, 2}, {1, 2}, {2, 1}, {0, 2}, 4)),
                  g.add(OpKind::Conv, {x, w3}, dw_attrs({2, 1}, {2, 1}, {0, 1}, {1, 0}, 4)),
                  g.add(OpKind::Conv, {x, w13}, dw_attrs({1, 2}, {1, 1}, {0, -1}, {0, -1}, 4))});
  EXPECT_EQ(expect_on_every_cpu(g).num_kernels(), 5);
}

// Groups 4 with 8 output channels: output channel c reads input channel c / 2.
TEST(Depthwise, ChannelMultiplier2) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 4, 10, 19}), "L['x']");
  ir::ValueId w = weight(g, "w", {8, 1, 3, 3}, 4), b = weight(g, "b", {8}, 5);
  ir::ValueId w5 = weight(g, "w5", {8, 1, 5, 5}, 6);
  set_outputs(g, {g.add(OpKind::Conv, {x, w, b}, dw_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}, 4)),
                  g.add(OpKind::Conv, {x, w5}, dw_attrs({2, 2}, {1, 1}, {2, 2}, {2, 2}, 4))});
  expect_on_every_cpu(g);
}

// mobilenet's and efficientnet's blocks: conv + bias + batch-norm + ReLU6 (stride 1 and 2),
// SiLU and hardswish (5x5), and ReLU6 + a residual add, each one kernel.
TEST(Depthwise, BiasBatchNormActivationsAndResidualAreOneKernel) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 16, 14, 33}), "L['x']");
  ir::ValueId res = g.add_input("res", f32({1, 16, 14, 33}), "L['res']");
  ir::ValueId b = weight(g, "b", {16}, 8);
  ir::ValueId scale = weight(g, "scale", {16, 1, 1}, 10), shift = weight(g, "shift", {16, 1, 1}, 11);
  uint32_t seed = 20;
  auto conv = [&](int64_t k, int64_t stride, bool bias) {
    ir::ValueId w = weight(g, "w" + std::to_string(seed), {16, 1, k, k}, seed);
    ++seed;
    std::vector<ir::ValueId> operands = {x, w};
    if (bias) operands.push_back(b);
    return g.add(OpKind::Conv, operands, dw_attrs({stride, stride}, {1, 1}, {k / 2, k / 2}, {k / 2, k / 2}, 16));
  };
  auto bn = [&](ir::ValueId v) { return g.add(OpKind::Add, {g.add(OpKind::Mul, {v, scale}), shift}); };
  auto relu6 = [&](ir::ValueId v) { return g.add(OpKind::Clamp, {v}, attrs({{"min", 0.0}, {"max", 6.0}})); };
  set_outputs(g, {relu6(bn(conv(3, 1, true))), relu6(bn(conv(3, 2, true))), g.add(OpKind::Silu, {bn(conv(5, 1, false))}),
                  g.add(OpKind::Hardswish, {bn(conv(5, 2, false))}), g.add(OpKind::Add, {relu6(conv(3, 1, true)), res})});
  // Inputs in [-4, 4]: the sums reach past 6, so ReLU6 clips at both ends.
  EXPECT_EQ(expect_on_every_cpu(g, -4, 4).num_kernels(), 5);
}

ir::Attrs max_pool_attrs(Ints kernel, Ints stride, Ints padding, bool ceil_mode, Ints dilation) {
  return attrs({{"kind", std::string("max")}, {"kernel", kernel}, {"stride", stride}, {"padding", padding},
                {"dilation", dilation}, {"ceil_mode", int64_t{ceil_mode}}, {"count_include_pad", int64_t{1}}});
}

// Max pools take the same kernel, with -inf outside the input and max for the taps: windows 2,
// 3 and 5, strides 1 and 2, padding up to half the window, ceil_mode (windows past the end),
// dilation 2, over widths 1 to 33; NaN propagates as torch's does; a ReLU epilogue fuses.
TEST(Depthwise, MaxPoolsOverWidths1To33WithCeilModeDilationAndNaN) {
  for (int64_t width : {1, 3, 7, 17, 33}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", f32({1, 3, 9, width}), "L['x']");
    std::vector<ir::ValueId> outs;
    for (int64_t k : {2, 3, 5})
      for (int64_t stride : {1, 2})
        for (int64_t pad = 0; pad <= k / 2; ++pad)
          for (bool ceil_mode : {false, true}) {
            if (width + 2 * pad < k) continue;
            outs.push_back(g.add(OpKind::Pool, {x}, max_pool_attrs({k, k}, {stride, stride}, {pad, pad}, ceil_mode, {1, 1})));
          }
    if (width >= 5)
      outs.push_back(g.add(OpKind::Pool, {x}, max_pool_attrs({3, 3}, {2, 1}, {1, 1}, false, {2, 2})));
    outs.push_back(g.add(OpKind::Relu, {g.add(OpKind::Pool, {x}, max_pool_attrs({3, 3}, {2, 2}, {1, 1}, false, {1, 1}))}));
    set_outputs(g, outs);
    SCOPED_TRACE("width " + std::to_string(width));
    EXPECT_EQ(expect_on_every_cpu(g, -4, 4).num_kernels(), static_cast<int>(outs.size()));
    std::vector<ir::HostTensor> in = random_inputs(g, 3, -4, 4);
    in[0].set(static_cast<int64_t>(width * 4 + width / 2), NAN);  // row 4 of channel 0
    in[0].set(static_cast<int64_t>(2 * 9 * width + 8 * width), NAN);  // the last row's first column, channel 2
    expect_outputs_match(g, in);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
      Options v4;
      v4.cpu = "x86-64-v4";
      expect_outputs_match(g, in, std::nullopt, v4);
    }
  }
}

// f16 and bf16 convs and max pools take the same kernel: their input rows widened to f32 as
// they are copied into the scratch, the taps summed in f32 and each output rounded once (bias
// included) before the epilogue, as the reference and eager round the conv's result: in bf16,
// 256 + 0.5 + 0.5 + 0.5 is 257.5, which rounds to 258, so minus 256 is 2 (unrounded: 1.5; tap by
// tap: 0).
TEST(Depthwise, HalfConvsAndPoolsWidenTheirRowsAndRoundOnce) {
  for (ir::DType t : {DType::f16, DType::bf16}) {
    for (int64_t width : {7, 17, 33}) {
      SCOPED_TRACE(std::string(ir::dtype_name(t)) + ", width " + std::to_string(width));
      ir::Graph g;
      ir::ValueId x = g.add_input("x", typed(t, {1, 8, 9, width}), "L['x']");
      ir::ValueId conv = g.add(OpKind::Conv, {x, typed_weight(g, t, "w3", {8, 1, 3, 3}, 1), typed_weight(g, t, "b", {8}, 2)},
                               dw_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}, 8));
      ir::ValueId relu6 = g.add(OpKind::Minimum, {g.add(OpKind::Maximum, {conv, g.constant(0, t)}), g.constant(6, t)});
      set_outputs(g, {relu6, g.add(OpKind::Conv, {x, typed_weight(g, t, "w5", {8, 1, 5, 5}, 3)}, dw_attrs({2, 2}, {1, 1}, {2, 2}, {2, 2}, 8)),
                      g.add(OpKind::Pool, {x}, max_pool_attrs({3, 3}, {2, 2}, {1, 1}, false, {1, 1}))});
      EXPECT_EQ(expect_on_every_cpu(g, -4, 4).num_kernels(), 3);  // no pad kernels: the scratch pads
    }
  }
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(DType::bf16, {1, 8, 3, 3}), "L['x']");
  ir::HostTensor filter = ir::HostTensor::zeros(DType::bf16, {8, 1, 3, 3});
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t tap = 0; tap < 4; ++tap) filter.set(c * 9 + tap, tap == 0 ? 256 : 0.5);
  ir::ValueId w = g.add_weight("w", typed(DType::bf16, {8, 1, 3, 3}), "L['self'].w", std::make_shared<ir::Bytes>(filter.data));
  set_outputs(g, {g.add(OpKind::Sub, {g.add(OpKind::Conv, {x, w}, dw_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}, 8)),
                                       g.constant(256, DType::bf16)})});
  ir::HostTensor ones = ir::HostTensor::zeros(DType::bf16, {1, 8, 3, 3});
  for (int64_t i = 0; i < ones.numel(); ++i) ones.set(i, 1);
  for (const char* cpu : {"", "x86-64-v4"}) {
    if (*cpu != 0 && !__builtin_cpu_supports("avx512f")) continue;
    Options o;
    o.cpu = cpu;
    std::vector<ir::HostTensor> out = compile_and_run(g, {ones}, nullptr, o);
    ASSERT_EQ(out.size(), 1u);
    for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(out[0].get(c), 2) << "channel " << c << " " << cpu;
  }
}

// A depthwise conv written as elementwise ops on a channels-last tensor (padding, nine strided
// slices, a per-channel weight each, summed and clamped): one elementwise kernel whose reads are
// clamped at the padding. With its output's alias scope (kernel_emitter.cpp mark_alias) LLVM
// vectorises it along the channels, power-of-two counts too (C = 16 and 32 were left scalar
// before); the vector code must give the reference's numbers, channel tails (24, 40) included.
TEST(Depthwise, ChannelsLastTapsAsElementwiseOps) {
  for (int64_t c : {16, 24, 32, 40}) {
    for (int64_t stride : {1, 2}) {
      ir::Graph g;
      ir::ValueId x = g.add_input("x", f32({1, 9, 10, c}), "L['x']");
      ir::ValueId padded = g.add(OpKind::Pad, {x}, attrs({{"low", Ints{0, 1, 1, 0}}, {"high", Ints{0, 1, 1, 0}}, {"value", 0.0}}));
      const int64_t ho = (9 + 2 - 3) / stride + 1, wo = (10 + 2 - 3) / stride + 1;
      ir::ValueId acc = -1;
      for (int64_t kh = 0; kh < 3; ++kh) {
        for (int64_t kw = 0; kw < 3; ++kw) {
          ir::ValueId rows = g.add(OpKind::Slice, {padded}, attrs({{"axis", int64_t{1}}, {"start", kh}, {"end", ir::Shape{kh + (ho - 1) * stride + 1}}, {"step", stride}}));
          ir::ValueId tap = g.add(OpKind::Slice, {rows}, attrs({{"axis", int64_t{2}}, {"start", kw}, {"end", ir::Shape{kw + (wo - 1) * stride + 1}}, {"step", stride}}));
          ir::ValueId w = weight(g, "w" + std::to_string(kh * 3 + kw), {c}, static_cast<uint32_t>(kh * 3 + kw + 1));
          ir::ValueId term = g.add(OpKind::Mul, {tap, w});
          acc = acc < 0 ? term : g.add(OpKind::Add, {acc, term});
        }
      }
      ir::ValueId relu6 = g.add(OpKind::Minimum, {g.add(OpKind::Maximum, {acc, g.constant(0, DType::f32)}), g.constant(6, DType::f32)});
      set_outputs(g, {relu6});
      SCOPED_TRACE("C = " + std::to_string(c) + ", stride " + std::to_string(stride));
      EXPECT_EQ(expect_on_every_cpu(g).num_kernels(), 1);
    }
  }
}

}  // namespace
}  // namespace aotrace::lowering
