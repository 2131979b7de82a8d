// Kernels of the primitives with inner loops against the reference interpreter: reduce_min,
// argmax/argmin (NaN, ties), cumsum, conv (stride, padding, dilation, groups, depthwise, 1-D,
// fused epilogue), pool (max/avg, padding, ceil_mode, count_include_pad), topk.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::DType;
using ir::OpKind;
using Ints = std::vector<int64_t>;

TEST(Ops, ReduceMinAndArgReductionsWithNaN) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 6, 5}), "L['x']");
  ir::ValueId xt = g.add(OpKind::Permute, {x}, perm_attrs({2, 0, 1}));
  auto arg = [&](OpKind k, ir::ValueId v, int64_t axis, bool keepdim) {
    return g.add(k, {v}, reduce_attrs({axis}, keepdim));
  };
  set_outputs(g, {g.add(OpKind::ReduceMin, {x}, reduce_attrs({0, 2}, false)),
                  g.add(OpKind::ReduceMin, {xt}, reduce_attrs({1}, true)),
                  g.add(OpKind::ReduceMax, {x}, reduce_attrs({2}, false)),
                  arg(OpKind::ArgMax, x, 2, false), arg(OpKind::ArgMin, x, 1, true),
                  arg(OpKind::ArgMax, xt, 0, false), arg(OpKind::ArgMin, xt, 2, false)});
  std::vector<ir::HostTensor> in = random_inputs(g, 3, -3, 3);
  for (int64_t i : {0, 7, 33, 34, 90}) in[0].set(i, NAN);
  for (int64_t i : {10, 11, 12}) in[0].set(i, 2.5);  // ties: the first index wins
  expect_outputs_match(g, in);
}

// Float max and min over long rows (vectorised: integer keys and an any-NaN flag,
// emit_reductions.cpp): NaN first, last or inside a row makes that row NaN; rows of infinities,
// of zeros of both signs; f64 as well as f32; over the inner axis and over two axes.
TEST(Ops, FloatMaxAndMinOverLongRowsWithNaNAndInfinities) {
  for (DType t : {DType::f32, DType::f64}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {7, 301}), "L['x']");
    set_outputs(g, {g.add(OpKind::ReduceMax, {x}, reduce_attrs({1}, false)),
                    g.add(OpKind::ReduceMin, {x}, reduce_attrs({1}, true)),
                    g.add(OpKind::ReduceMax, {x}, reduce_attrs({0, 1}, false)),
                    g.add(OpKind::ReduceMin, {x}, reduce_attrs({0}, false))});
    std::vector<ir::HostTensor> in = random_inputs(g, 5, -3, 3);
    in[0].set(0, NAN);              // row 0: NaN first
    in[0].set(301 + 300, NAN);      // row 1: NaN last
    in[0].set(2 * 301 + 150, NAN);  // row 2: NaN inside
    for (int64_t j = 0; j < 301; ++j) {
      in[0].set(3 * 301 + j, j % 2 ? -INFINITY : INFINITY);  // row 3: ±inf
      in[0].set(4 * 301 + j, -INFINITY);                     // row 4: all -inf
      in[0].set(5 * 301 + j, j % 3 ? -0.0 : 0.0);            // row 5: zeros of both signs
      in[0].set(6 * 301 + j, -1e30 + j);                     // row 6: large, max last
    }
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    expect_outputs_match(g, in);
  }
}

TEST(Ops, IntegerReduceMinAndArgMax) {
  for (DType t : {DType::i64, DType::i32, DType::u8, DType::i8}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {5, 7}), "L['x']");
    set_outputs(g, {g.add(OpKind::ReduceMin, {x}, reduce_attrs({1}, false)),
                    g.add(OpKind::ArgMax, {x}, reduce_attrs({0}, false)),
                    g.add(OpKind::ArgMin, {x}, reduce_attrs({1}, true))});
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    expect_matches_reference_in(g, -4, 4);  // small range: many ties
  }
}

// cumsum along each axis (a task per row: emit_scan_kernel), of an exp, of a permuted view, of
// i32 (an i64 result), of an empty row, and with a consumer.
TEST(Ops, CumSumAlongEachAxisAndDType) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 5, 4}), "L['x']");
  ir::ValueId i = g.add_input("i", typed(DType::i32, {6}), "L['i']");
  ir::ValueId e = g.add_input("e", f32({2, 0}), "L['e']");
  auto cumsum = [&](ir::ValueId v, int64_t axis) {
    return g.add(OpKind::CumSum, {v}, attrs({{"axis", axis}}));
  };
  set_outputs(g, {cumsum(x, 0), cumsum(x, 1), cumsum(g.add(OpKind::Exp, {x}), 2),
                  cumsum(g.add(OpKind::Permute, {x}, perm_attrs({2, 1, 0})), 1), cumsum(i, 0),
                  cumsum(e, 1), g.add(OpKind::Mul, {cumsum(x, 2), g.constant(2, DType::f32)})});
  // A task (a GPU thread) per row along the axis: 5 × 4 rows over axis 0, 3 × 4 over axis 1 (of
  // x and of its permutation), one row of i, none of e.
  const std::multiset<std::string> launches = gpu_launches(g, "scan_");
  EXPECT_EQ(launches.count("20"), 1u);
  EXPECT_EQ(launches.count("12"), 2u);
  EXPECT_EQ(launches.count("1"), 1u);
  EXPECT_EQ(launches.count("0"), 1u);
  expect_matches_reference_in(g, -3, 3);  // the CPU, then the emulated GPU
}

ir::Attrs conv_attrs(Ints stride, Ints dilation, Ints low, Ints high, int64_t groups) {
  return attrs({{"stride", stride}, {"dilation", dilation}, {"pad_low", low}, {"pad_high", high},
                {"groups", groups}});
}

TEST(Ops, Conv2dStridePaddingDilationGroups) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 4, 9, 8}), "L['x']");
  ir::ValueId w = weight(g, "w", {6, 4, 3, 3}, 1), b = weight(g, "b", {6}, 2);
  ir::ValueId wg = weight(g, "wg", {6, 2, 3, 2}, 3);
  ir::ValueId wd = weight(g, "wd", {4, 1, 3, 3}, 4);
  set_outputs(g, {g.add(OpKind::Conv, {x, w, b}, conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}, 1)),
                  g.add(OpKind::Conv, {x, w}, conv_attrs({2, 3}, {1, 1}, {0, 2}, {1, 0}, 1)),
                  g.add(OpKind::Conv, {x, w, b}, conv_attrs({1, 2}, {2, 3}, {2, 3}, {2, 3}, 1)),
                  g.add(OpKind::Conv, {x, wg}, conv_attrs({2, 1}, {1, 1}, {1, 0}, {1, 1}, 2)),
                  g.add(OpKind::Conv, {x, wd}, conv_attrs({2, 2}, {1, 1}, {1, 1}, {1, 1}, 4))});
  expect_matches_reference_in(g, -1, 1);
}

TEST(Ops, Conv1dOfPermutedInputAndPaddedView) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 10, 3}), "L['x']");  // [N, L, C]: permuted to [N, C, L]
  ir::ValueId w = weight(g, "w", {5, 3, 4}, 5);
  ir::ValueId xc = g.add(OpKind::Permute, {x}, perm_attrs({0, 2, 1}));
  ir::ValueId padded = g.add(OpKind::Pad, {xc}, attrs({{"low", Ints{0, 0, 2}}, {"high", Ints{0, 0, 1}}, {"value", 0.5}}));
  set_outputs(g, {g.add(OpKind::Conv, {xc, w}, conv_attrs({2}, {1}, {1}, {2}, 1)),
                  g.add(OpKind::Conv, {padded, w}, conv_attrs({1}, {2}, {0}, {0}, 1))});
  expect_matches_reference_in(g, -1, 1);
}

TEST(Ops, ConvBatchNormReluIsOneKernel) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 3, 8, 8}), "L['x']");
  ir::ValueId w = weight(g, "w", {4, 3, 3, 3}, 6);
  ir::ValueId scale = weight(g, "scale", {4, 1, 1}, 7), shift = weight(g, "shift", {4, 1, 1}, 8);
  ir::ValueId conv = g.add(OpKind::Conv, {x, w}, conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}, 1));
  ir::ValueId bn = g.add(OpKind::Add, {g.add(OpKind::Mul, {conv, scale}), shift});
  set_outputs(g, {g.add(OpKind::Relu, {bn})});
  // Two kernels: the padded input (pad_conv_inputs), then conv + batch-norm + relu as one.
  EXPECT_EQ(expect_matches_reference_in(g, -1, 1).num_kernels(), 2);
}

ir::Attrs pool_attrs(std::string kind, Ints kernel, Ints stride, Ints padding, bool ceil_mode,
                     bool include_pad, Ints dilation) {
  return attrs({{"kind", kind}, {"kernel", kernel}, {"stride", stride}, {"padding", padding},
                {"dilation", dilation}, {"ceil_mode", int64_t{ceil_mode}},
                {"count_include_pad", int64_t{include_pad}}});
}

TEST(Ops, MaxAndAvgPool) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 3, 9, 7}), "L['x']");
  ir::ValueId l = g.add_input("l", f32({1, 2, 10}), "L['l']");
  set_outputs(g, {g.add(OpKind::Pool, {x}, pool_attrs("max", {3, 3}, {2, 2}, {1, 1}, false, true, {1, 1})),
                  g.add(OpKind::Pool, {x}, pool_attrs("max", {2, 3}, {2, 2}, {1, 0}, true, true, {2, 1})),
                  g.add(OpKind::Pool, {x}, pool_attrs("avg", {3, 3}, {2, 2}, {1, 1}, false, true, {1, 1})),
                  g.add(OpKind::Pool, {x}, pool_attrs("avg", {3, 3}, {2, 2}, {1, 1}, false, false, {1, 1})),
                  g.add(OpKind::Pool, {x}, pool_attrs("avg", {2, 2}, {2, 2}, {1, 0}, true, true, {1, 1})),
                  g.add(OpKind::Pool, {x}, pool_attrs("avg", {3, 2}, {3, 2}, {1, 1}, true, false, {1, 1})),
                  g.add(OpKind::Pool, {l}, pool_attrs("max", {3}, {1}, {1}, false, true, {1})),
                  g.add(OpKind::Pool, {l}, pool_attrs("avg", {4}, {3}, {2}, true, true, {1}))});
  std::vector<ir::HostTensor> in = random_inputs(g, 4, -2, 2);
  in[0].set(5, NAN);
  expect_outputs_match(g, in);
}

TEST(Ops, TopKLargestAndSmallestWithTiesAndNaN) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 8}), "L['x']");
  ir::ValueId i = g.add_input("i", typed(DType::i32, {10}), "L['i']");
  auto topk = [&](ir::ValueId v, int64_t k, int64_t axis, bool largest) {
    return g.add_node(OpKind::TopK, {v}, attrs({{"k", k}, {"axis", axis}, {"largest", int64_t{largest}}, {"sorted", int64_t{1}}}));
  };
  std::vector<ir::ValueId> a = topk(x, 3, 1, true), b = topk(x, 2, 0, false), c = topk(i, 4, 0, true);
  std::vector<ir::ValueId> d = topk(x, 8, 1, false);
  set_outputs(g, {a[0], a[1], b[0], b[1], c[0], c[1], d[0], d[1], g.add(OpKind::Exp, {a[0]})});
  std::vector<ir::HostTensor> in = random_inputs(g, 9, -3, 3);
  in[0].set(2, NAN);
  in[0].set(9, 1.5);
  in[0].set(10, 1.5);
  expect_outputs_match(g, in);
}

// topk kernels take a task per row (emit_topk_rows: one pass keeping the row's k best). A
// vocabulary of 5003 at k = 200, largest and smallest, whose values come in 50 levels (ties
// everywhere: the lower index first) with NaNs (largest: first; smallest: last); strided rows
// (over a leading axis) with k = 7 and with k the whole axis; k = 1; f16 rows; the CPU and the
// emulated GPU against the reference.
TEST(Ops, TopKRowsOfAVocabularyWithTiesAndNaN) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 5003}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({300, 3}), "L['y']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {4, 64}), "L['h']");
  auto topk = [&](ir::ValueId v, int64_t k, int64_t axis, bool largest) {
    return g.add_node(OpKind::TopK, {v}, attrs({{"k", k}, {"axis", axis}, {"largest", int64_t{largest}}, {"sorted", int64_t{1}}}));
  };
  std::vector<ir::ValueId> a = topk(x, 200, 1, true), b = topk(x, 200, 1, false), c = topk(y, 7, 0, true);
  std::vector<ir::ValueId> d = topk(y, 300, 0, false), e = topk(x, 1, 1, true), f = topk(h, 10, 1, false);
  set_outputs(g, {a[0], a[1], b[0], b[1], c[0], c[1], d[0], d[1], e[1], f[0], f[1]});
  std::vector<ir::HostTensor> in = random_inputs(g, 5, -3, 3);
  for (int64_t i = 0; i < 2 * 5003; ++i) in[0].set(i, static_cast<double>(i * 7919 % 50) / 10 - 2.5);
  for (int64_t i : {17, 4000, 5003 + 2, 5003 + 4999}) in[0].set(i, NAN);
  for (int64_t i = 0; i < 900; i += 3) in[1].set(i, static_cast<double>(i % 4));  // column 0: four levels
  in[1].set(3 * 150 + 1, NAN);
  expect_outputs_match(g, in);
}

// topk whose values are unused, over a layer-normed matmul (GPT greedy decoding): the kernels
// compile (the operand's chain is not inlined into topk's loops) and match the reference.
TEST(Ops, TopKIndicesOnlyOverComputedOperand) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 8}), "L['x']");
  ir::ValueId w = g.add_input("w", f32({8, 10}), "L['w']");
  ir::ValueId h = g.add(OpKind::Matmul, {x, w});
  ir::ValueId mean = g.add(OpKind::ReduceSum, {h}, reduce_attrs({1}, true));
  ir::ValueId c = g.add(OpKind::Sub, {h, mean});
  ir::ValueId y = g.add(OpKind::Matmul, {g.add(OpKind::Tanh, {c}), transpose(g, w)});
  std::vector<ir::ValueId> t = g.add_node(
      OpKind::TopK, {slice(g, y, 0, 2, 3)}, attrs({{"k", int64_t{1}}, {"axis", int64_t{1}}, {"largest", int64_t{1}}, {"sorted", int64_t{1}}}));
  set_outputs(g, {t[1]});
  expect_outputs_match(g, random_inputs(g, 11, -2, 2));
}

}  // namespace
}  // namespace aotrace::lowering
