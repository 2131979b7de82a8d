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
  auto topk = [&](ir::ValueId v, int64_t k, int64_t axis, bool largest) { return topk_of(g, v, k, axis, largest); };
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
// vocabulary of 20011 at k = 200 (k² ≤ 2n: the sorted arrays), largest and smallest, whose
// values come in 500 levels (ties everywhere: the lower index first) with NaNs (largest: first;
// smallest: last); strided rows (over a leading axis) with k = 7, and with k the whole axis (a
// heap); k = 1; f16 rows; the CPU and the emulated GPU against the reference.
TEST(Ops, TopKRowsOfAVocabularyWithTiesAndNaN) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 20011}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({300, 3}), "L['y']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {4, 64}), "L['h']");
  auto topk = [&](ir::ValueId v, int64_t k, int64_t axis, bool largest) { return topk_of(g, v, k, axis, largest); };
  std::vector<ir::ValueId> a = topk(x, 200, 1, true), b = topk(x, 200, 1, false), c = topk(y, 7, 0, true);
  std::vector<ir::ValueId> d = topk(y, 300, 0, false), e = topk(x, 1, 1, true), f = topk(h, 10, 1, false);
  set_outputs(g, {a[0], a[1], b[0], b[1], c[0], c[1], d[0], d[1], e[1], f[0], f[1]});
  std::vector<ir::HostTensor> in = random_inputs(g, 5, -3, 3);
  for (int64_t i = 0; i < 2 * 20011; ++i) in[0].set(i, static_cast<double>(i * 7919 % 500) / 100 - 2.5);
  for (int64_t i : {17, 4000, 20011 + 2, 20011 + 19999}) in[0].set(i, NAN);
  for (int64_t i = 0; i < 900; i += 3) in[1].set(i, static_cast<double>(i % 4));  // column 0: four levels
  in[1].set(3 * 150 + 1, NAN);
  expect_outputs_match(g, in);
}

// A topk with k > kTopkRowsMaxK (a sort; topk_as_heap) ranks each row as a heap in its
// indices' output (emit_topk_heap) and gathers the values: sorts of 3001 positions, largest and
// smallest, in 40 value levels (ties: the lower index first) with NaNs of either sign (largest:
// first; smallest: last) and -0/+0 (equal: by index); k short of the row; a strided axis (a
// leading one); i32, u8 and f16 rows (slots packing a 32-bit key with the index); f64 and i64
// rows (slots of indices alone); a 0-d topk; values consumed by an op; the CPU and the emulated
// GPU against the reference.
TEST(Ops, TopKSortsOfWideRowsAsAHeap) {
  const int64_t n = 3001;
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, n}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({1500, 2}), "L['y']");
  ir::ValueId i = g.add_input("i", typed(DType::i32, {1, 1300}), "L['i']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {1, 2048}), "L['h']");
  ir::ValueId s = g.add_input("s", f32({}), "L['s']");
  ir::ValueId w = g.add_input("w", typed(DType::f64, {2, 1500}), "L['w']");
  ir::ValueId l = g.add_input("l", typed(DType::i64, {1, 1200}), "L['l']");
  ir::ValueId u = g.add_input("u", typed(DType::u8, {1, 1100}), "L['u']");
  auto topk = [&](ir::ValueId v, int64_t k, int64_t axis, bool largest) { return topk_of(g, v, k, axis, largest); };
  std::vector<ir::ValueId> a = topk(x, n, 1, true), b = topk(x, n, 1, false), c = topk(x, 2000, 1, true);
  std::vector<ir::ValueId> d = topk(y, 1100, 0, false), e = topk(i, 1300, 1, true), f = topk(h, 2048, 1, false);
  std::vector<ir::ValueId> z = topk(s, 1, 0, true);
  // f64 and i64: slots of indices alone, compares reading x.
  std::vector<ir::ValueId> p = topk(w, 1500, 1, true), q = topk(w, 1200, 1, false), r = topk(l, 1200, 1, false);
  std::vector<ir::ValueId> v = topk(u, 1100, 1, true);
  set_outputs(g, {a[0], a[1], b[0], b[1], c[1], d[0], d[1], e[0], e[1], f[0], f[1], z[0], z[1],
                  g.add(OpKind::Exp, {c[0]}), p[0], p[1], q[0], q[1], r[0], r[1], v[0], v[1]});
  std::vector<ir::HostTensor> in = random_inputs(g, 7, -3, 3);
  for (int64_t p = 0; p < 2 * n; ++p) in[0].set(p, static_cast<double>(p * 7919 % 40) / 8 - 2.5);
  for (int64_t p : {int64_t{5}, int64_t{1777}, n + 3, n + 2999}) in[0].set(p, p % 2 ? -NAN : NAN);  // either sign
  for (int64_t p : {11, 12, 13}) in[0].set(p, p == 12 ? -0.0 : 0.0);
  for (int64_t p = 0; p < 3000; p += 2) in[1].set(p, static_cast<double>(p % 6));  // column 0: levels
  in[1].set(2 * 700, NAN);
  for (int64_t p = 0; p < 1300; ++p) in[2].set(p, static_cast<double>(p * 31 % 97));
  for (int64_t p = 0; p < 3000; ++p) in[5].set(p, p % 500 == 7 ? NAN : static_cast<double>(p * 7 % 300) / 4 - 30);
  in[5].set(100, -0.0), in[5].set(101, 0.0);
  for (int64_t p = 0; p < 1200; ++p) in[6].set(p, static_cast<double>(p * 13 % 400) * 3e9 - 6e11);  // beyond 32 bits
  for (int64_t p = 0; p < 1100; ++p) in[7].set(p, static_cast<double>(p * 37 % 256));
  expect_outputs_match(g, in);
}

// searchsorted (emit_search_sorted: torch's binary search per value): sorted rows of 50 with
// ties (left and right differ), values on them, between, below, above and NaN (past every
// element), NaN at a row's end (as torch.sort leaves it); one 1-D sequence for values of rank 3;
// i32; a searchsorted fused into a consumer; the CPU and the emulated GPU against the reference.
TEST(Ops, SearchSortedFindsTorchsInsertionPoints) {
  ir::Graph g;
  ir::ValueId rows = g.add_input("rows", f32({3, 50}), "L['rows']");
  ir::ValueId v = g.add_input("v", f32({3, 9}), "L['v']");
  ir::ValueId edges = g.add_input("edges", typed(DType::i32, {17}), "L['edges']");
  ir::ValueId w = g.add_input("w", typed(DType::i32, {2, 3, 5}), "L['w']");
  auto search = [&](ir::ValueId s, ir::ValueId x, bool right) {
    return g.add(OpKind::SearchSorted, {s, x}, attrs({{"right", int64_t{right}}}));
  };
  set_outputs(g, {search(rows, v, false), search(rows, v, true), search(edges, w, false), search(edges, w, true),
                  g.add(OpKind::Mul, {search(rows, v, true), g.constant(2, DType::i64)})});
  std::vector<ir::HostTensor> in = random_inputs(g, 5, 0, 20);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 50; ++j) in[0].set(r * 50 + j, static_cast<double>(j / 3) + r);  // ties of 3
  in[0].set(2 * 50 + 49, NAN);
  const double values[] = {5, 5.5, -1, 100, NAN, 0, 16, 16.5, 2};
  for (int64_t e = 0; e < 27; ++e) in[1].set(e, values[e % 9] + static_cast<double>(e / 9));
  for (int64_t j = 0; j < 17; ++j) in[2].set(j, static_cast<double>(j / 2 * 3));
  expect_outputs_match(g, in);
}

// Scatter kernels (emit_scatter_rows: each row copies self's row, then writes src where the
// index points, in order): repeated positions (the last write wins; accumulate: sums in order,
// f16 rounded after each add), an index smaller than self outside the axis (the rows past it
// keep self) and than src, along a leading axis (a CPU task walks a run of neighbouring rows:
// runs of 64, 64 and 22), over two dims after the axis, i32 indices, bool and i64 rows, a
// permutation over 5003 positions (top-p sampling's mask put back in vocabulary order),
// operands computed in the kernel; the CPU and the emulated GPU against the reference.
TEST(Ops, ScatterRowsKeepTheLastWriteAndSumInOrder) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 7}), "L['x']");
  ir::ValueId i = g.add_input("i", typed(DType::i64, {3, 5}), "L['i']");
  ir::ValueId s = g.add_input("s", f32({3, 6}), "L['s']");
  ir::ValueId j = g.add_input("j", typed(DType::i32, {9, 7}), "L['j']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {4, 7}), "L['h']");
  ir::ValueId m = g.add_input("m", typed(DType::b8, {1, 5003}), "L['m']");
  ir::ValueId p = g.add_input("p", typed(DType::i64, {1, 5003}), "L['p']");
  ir::ValueId n = g.add_input("n", typed(DType::i64, {4, 7}), "L['n']");
  ir::ValueId big = g.add_input("b", f32({9, 7}), "L['b']");
  auto scatter = [&](ir::ValueId self, ir::ValueId index, ir::ValueId src, int64_t axis, bool accumulate) {
    return g.add(OpKind::Scatter, {self, index, src}, attrs({{"axis", axis}, {"accumulate", int64_t{accumulate}}}));
  };
  auto cast = [&](ir::ValueId v, DType to) {
    ir::Attrs a;
    a.set("dtype", to);
    return g.add(OpKind::Cast, {v}, a);
  };
  // An index narrower than self after the axis: the rows past it are only copied.
  ir::ValueId wide = g.add_input("c", f32({3, 150}), "L['c']");
  ir::ValueId wi = g.add_input("ci", typed(DType::i64, {5, 130}), "L['ci']");
  ir::ValueId ws = g.add_input("cs", f32({5, 130}), "L['cs']");
  ir::ValueId cube = g.add_input("q", f32({2, 6, 3, 5}), "L['q']");
  ir::ValueId qi = g.add_input("qi", typed(DType::i32, {2, 4, 3, 4}), "L['qi']");
  set_outputs(g, {scatter(wide, wi, ws, 0, false), scatter(wide, wi, ws, 0, true), scatter(cube, qi, cube, 1, false),
                  scatter(cube, qi, cube, 1, true), scatter(x, i, s, 0, false),
                  scatter(x, i, s, 1, false), scatter(x, i, s, 1, true),
                  scatter(g.add(OpKind::Exp, {x}), j, g.add(OpKind::Neg, {big}), 0, true),
                  scatter(x, j, big, 0, false),
                  scatter(h, j, cast(big, DType::f16), 0, true),
                  scatter(m, p, g.add(OpKind::Not, {m}), 1, false),
                  scatter(n, j, cast(big, DType::i64), 0, true)});
  std::vector<ir::HostTensor> in = random_inputs(g, 3, -3, 3);
  for (int64_t q = 0; q < 15; ++q) in[1].set(q, static_cast<double>(q * 5 % 7 % 4));  // repeats
  for (int64_t q = 0; q < 63; ++q) in[3].set(q, static_cast<double>((q * 3 + q / 7) % 4));
  for (int64_t q = 0; q < 5003; ++q) in[5].set(q, static_cast<double>(q % 3 == 0));
  for (int64_t q = 0; q < 5003; ++q) in[6].set(q, static_cast<double>(q * 2011 % 5003));  // a permutation
  for (int64_t q = 0; q < 650; ++q) in[10].set(q, static_cast<double>(q * 7 % 3));
  for (int64_t q = 0; q < 96; ++q) in[13].set(q, static_cast<double>(q * 5 % 6));
  expect_outputs_match(g, in);
}

// A scatter index out of range (negative or past the dim) writes nothing, where torch raises:
// no write lands outside the row (the reference raises, so the kernels are checked by hand).
TEST(Ops, ScatterIndexOutOfRangeWritesNothing) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 4}), "L['x']");
  ir::ValueId i = g.add_input("i", typed(DType::i64, {2, 3}), "L['i']");
  ir::ValueId s = g.add_input("s", f32({2, 3}), "L['s']");
  set_outputs(g, {g.add(OpKind::Scatter, {x, i, s}, attrs({{"axis", int64_t{1}}, {"accumulate", int64_t{0}}}))});
  std::vector<ir::HostTensor> in = random_inputs(g, 3, 1, 2);
  const double index[] = {-1, 4, 2, 1000000, 0, -5};
  for (int64_t q = 0; q < 6; ++q) in[1].set(q, index[q]);
  for (const Options& o : {Options{}, cuda_emulation(Options{})}) {
    std::vector<ir::HostTensor> out = compile_and_run(g, in, nullptr, o);
    for (int64_t q = 0; q < 8; ++q)
      EXPECT_EQ(out[0].get(q), q == 2 ? in[2].get(2) : q == 4 ? in[2].get(4) : in[0].get(q)) << q;
  }
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
  std::vector<ir::ValueId> t = topk_of(g, slice(g, y, 0, 2, 3), 1, 1, true);
  set_outputs(g, {t[1]});
  expect_outputs_match(g, random_inputs(g, 11, -2, 2));
}

}  // namespace
}  // namespace aotrace::lowering
