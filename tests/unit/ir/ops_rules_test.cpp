// Shape/type rules and reference implementations of the primitives added for issue 4 (conv,
// pool, slice, pad, concat, gather, index_select, topk, argmax, cumsum, remainder/floor_div):
// results on small hand-computed examples, symbolic shapes and the user errors on misuse.
// Comparisons against torch for every op live in tests/ops.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

SymExpr s0 = SymExpr::symbol("s0");

TensorType of(DType dtype, Shape shape) { return {dtype, Device{}, std::move(shape)}; }
TensorType f32(Shape shape) { return of(DType::f32, std::move(shape)); }

TensorType result(OpKind op, std::vector<TensorType> operands, Attrs attrs = {}) {
  Graph g;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < operands.size(); ++i) ids.push_back(g.add_input("x" + std::to_string(i), operands[i], ""));
  return g.type(g.add(op, ids, attrs));
}

std::string error_of(OpKind op, std::vector<TensorType> operands, Attrs attrs = {}) {
  try {
    result(op, operands, attrs);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

// Runs one op on host tensors through a graph and evaluate().
std::vector<HostTensor> run(OpKind op, std::vector<HostTensor> in, Attrs attrs = {}) {
  Graph g;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < in.size(); ++i)
    ids.push_back(g.add_input("x" + std::to_string(i), TensorType{in[i].dtype, Device{}, Shape(in[i].shape.begin(), in[i].shape.end())}, ""));
  auto results = g.add_node(op, ids, attrs);
  g.set_outputs(results, {});
  verify(g);
  return evaluate(g, in);
}

HostTensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<double> values) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<double> values(const HostTensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

TEST(OpsRules, ConvShapesWithGroupsStrideAndPadding) {
  Attrs a;
  a.set("stride", std::vector<int64_t>{2, 1}).set("dilation", std::vector<int64_t>{1, 2})
      .set("pad_low", std::vector<int64_t>{1, 0}).set("pad_high", std::vector<int64_t>{1, 0}).set("groups", int64_t{2});
  EXPECT_EQ(result(OpKind::Conv, {f32({s0, 4, 9, 9}), f32({6, 2, 3, 3}), f32({6})}, a).str(), "f32[s0, 6, 5, 5]");
  EXPECT_NE(error_of(OpKind::Conv, {f32({1, 5, 9, 9}), f32({6, 2, 3, 3})}, a).find("channels"), std::string::npos);
}

TEST(OpsRules, PoolCeilModeDropsWindowsStartingInPadding) {
  Attrs a;
  a.set("kind", std::string("max")).set("kernel", std::vector<int64_t>{2}).set("stride", std::vector<int64_t>{2})
      .set("padding", std::vector<int64_t>{1}).set("dilation", std::vector<int64_t>{1}).set("ceil_mode", int64_t{1});
  // torch: L=4, k=2, s=2, p=1, ceil: (4+2-2)/2 ceil = 2, +1 = 3; last start 4 < 4+1: kept.
  EXPECT_EQ(result(OpKind::Pool, {f32({1, 1, 4})}, a).str(), "f32[1, 1, 3]");
  a.set("padding", std::vector<int64_t>{0});
  EXPECT_EQ(result(OpKind::Pool, {f32({1, 1, 5})}, a).str(), "f32[1, 1, 3]");
}

TEST(OpsRules, SliceWithSymbolicEnd) {
  Attrs a;
  a.set("axis", int64_t{1}).set("start", int64_t{0}).set("end", Shape{s0}).set("step", int64_t{1});
  EXPECT_EQ(result(OpKind::Slice, {f32({1, 16})}, a).str(), "f32[1, s0]");
  a.set("start", int64_t{2}).set("end", int64_t{9}).set("step", int64_t{3});
  EXPECT_EQ(result(OpKind::Slice, {f32({1, 16})}, a).str(), "f32[1, 3]");
}

TEST(OpsRules, ConcatPromotesAndChecksOtherDims) {
  Attrs a;
  a.set("axis", int64_t{1});
  EXPECT_EQ(result(OpKind::Concat, {f32({2, 3}), of(DType::i64, {2, 5})}, a).str(), "f32[2, 8]");
  EXPECT_NE(error_of(OpKind::Concat, {f32({2, 3}), f32({3, 3})}, a).find("differ in dim 0"), std::string::npos);
}

TEST(OpsRules, IndexOpsCheckIndexDtypeAndRank) {
  Attrs a;
  a.set("axis", int64_t{0});
  EXPECT_EQ(result(OpKind::IndexSelect, {f32({5, 3}), of(DType::i32, {7})}, a).str(), "f32[7, 3]");
  EXPECT_NE(error_of(OpKind::IndexSelect, {f32({5, 3}), f32({7})}, a).find("int64 or int32"), std::string::npos);
  EXPECT_NE(error_of(OpKind::Gather, {f32({5, 3}), of(DType::i64, {2})}, a).find("rank"), std::string::npos);
}

TEST(OpsReference, RemainderAndFloorDivFollowTheDivisorSign) {
  HostTensor a = tensor(DType::i64, {4}, {7, -7, 7, -7}), b = tensor(DType::i64, {4}, {3, 3, -3, -3});
  EXPECT_EQ(values(run(OpKind::Remainder, {a, b})[0]), (std::vector<double>{1, 2, -2, -1}));
  EXPECT_EQ(values(run(OpKind::FloorDiv, {a, b})[0]), (std::vector<double>{2, -3, -3, 2}));
  HostTensor x = tensor(DType::f32, {2}, {-7.5, 7.5}), y = tensor(DType::f32, {2}, {2, -2});
  EXPECT_EQ(values(run(OpKind::Remainder, {x, y})[0]), (std::vector<double>{0.5, -0.5}));
}

TEST(OpsReference, ArgMaxTakesTheFirstMaxAndNaNWins) {
  Attrs a;
  a.set("axes", std::vector<int64_t>{1}).set("keepdim", int64_t{0});
  HostTensor x = tensor(DType::f32, {2, 4}, {1, 5, 5, 2, 1, NAN, 9, NAN});
  auto r = run(OpKind::ArgMax, {x}, a)[0];
  EXPECT_EQ(r.dtype, DType::i64);
  EXPECT_EQ(values(r), (std::vector<double>{1, 1}));
}

TEST(OpsReference, TopKSortsAndBreaksTiesByIndex) {
  Attrs a;
  a.set("k", int64_t{3}).set("axis", int64_t{0}).set("largest", int64_t{1}).set("sorted", int64_t{1});
  auto r = run(OpKind::TopK, {tensor(DType::f32, {5}, {3, 9, 3, 1, 9})}, a);
  EXPECT_EQ(values(r[0]), (std::vector<double>{9, 9, 3}));
  EXPECT_EQ(values(r[1]), (std::vector<double>{1, 4, 0}));
}

TEST(OpsReference, PadCropsWithNegativeAmounts) {
  Attrs a;
  a.set("low", std::vector<int64_t>{1}).set("high", std::vector<int64_t>{-2}).set("value", 9.0);
  EXPECT_EQ(values(run(OpKind::Pad, {tensor(DType::f32, {4}, {1, 2, 3, 4})}, a)[0]), (std::vector<double>{9, 1, 2}));
}

TEST(OpsReference, CumSumOfBoolIsInt64) {
  Attrs a;
  a.set("axis", int64_t{0});
  auto r = run(OpKind::CumSum, {tensor(DType::b8, {4}, {1, 0, 1, 1})}, a)[0];
  EXPECT_EQ(r.dtype, DType::i64);
  EXPECT_EQ(values(r), (std::vector<double>{1, 1, 2, 3}));
}

TEST(OpsReference, AvgPoolExcludesPaddingWhenAsked) {
  Attrs a;
  a.set("kind", std::string("avg")).set("kernel", std::vector<int64_t>{3}).set("stride", std::vector<int64_t>{3})
      .set("padding", std::vector<int64_t>{1}).set("dilation", std::vector<int64_t>{1}).set("ceil_mode", int64_t{0})
      .set("count_include_pad", int64_t{0});
  HostTensor x = tensor(DType::f32, {1, 1, 4}, {3, 6, 9, 12});
  EXPECT_EQ(values(run(OpKind::Pool, {x}, a)[0]), (std::vector<double>{4.5, 10.5}));
  a.set("count_include_pad", int64_t{1});
  EXPECT_EQ(values(run(OpKind::Pool, {x}, a)[0]), (std::vector<double>{3, 7}));
}

TEST(OpsDecompose, ConvTransposeOfOnesCountsOverlaps) {
  Attrs a;
  a.set("stride", std::vector<int64_t>{2}).set("padding", std::vector<int64_t>{0})
      .set("output_padding", std::vector<int64_t>{0}).set("dilation", std::vector<int64_t>{1}).set("groups", int64_t{1});
  HostTensor x = tensor(DType::f32, {1, 1, 3}, {1, 1, 1}), w = tensor(DType::f32, {1, 1, 3}, {1, 1, 1});
  // Each input spreads over 3 outputs, 2 apart: [1, 1, 2, 1, 2, 1, 1].
  EXPECT_EQ(values(run(OpKind::ConvTranspose, {x, w}, a)[0]), (std::vector<double>{1, 1, 2, 1, 2, 1, 1}));
}

}  // namespace
}  // namespace aotrace::ir
