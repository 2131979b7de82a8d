// Every op's reference implementation against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

HostTensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  return HostTensor::from_f32(std::move(shape), values);
}

HostTensor of(DType dtype, std::vector<int64_t> shape, std::vector<double> values) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<double> values(const HostTensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

// One-node graph over inputs of the tensors' types, run by evaluate() (composites decompose).
HostTensor run(OpKind op, std::vector<HostTensor> in, Attrs attrs = {}) {
  Graph g;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < in.size(); ++i) {
    TensorType t{in[i].dtype, Device{}, Shape(in[i].shape.begin(), in[i].shape.end())};
    ids.push_back(g.add_input("x" + std::to_string(i), t, ""));
  }
  g.set_outputs({g.add(op, ids, attrs)}, {});
  verify(g);
  return evaluate(g, in).at(0);
}

Attrs reduce(std::vector<int64_t> axes, bool keepdim) {
  Attrs a;
  a.set("axes", std::move(axes)).set("keepdim", int64_t{keepdim});
  return a;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                 double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(Reference, Full) {
  Attrs a;
  a.set("shape", Shape{2, 2}).set("value", 1.5).set("dtype", DType::f64);
  HostTensor t = run(OpKind::Full, {}, a);
  EXPECT_EQ(t.dtype, DType::f64);
  EXPECT_EQ(values(t), (std::vector<double>{1.5, 1.5, 1.5, 1.5}));
}

TEST(Reference, Unary) {
  HostTensor x = f32({4}, {-2, 0, 1, 4});
  EXPECT_EQ(values(run(OpKind::Neg, {x})), (std::vector<double>{2, 0, -1, -4}));
  EXPECT_EQ(values(run(OpKind::Relu, {x})), (std::vector<double>{0, 0, 1, 4}));
  EXPECT_EQ(values(run(OpKind::Abs, {x})), (std::vector<double>{2, 0, 1, 4}));
  expect_near(values(run(OpKind::Exp, {x})), {0.1353352832, 1, 2.718281828, 54.59815003}, 1e-5);
  expect_near(values(run(OpKind::Tanh, {x})), {-0.9640275801, 0, 0.7615941560, 0.9993292997});
  expect_near(values(run(OpKind::Sigmoid, {x})), {0.1192029220, 0.5, 0.7310585786, 0.9820137900});
  HostTensor p = f32({3}, {1, 4, 0.25});
  expect_near(values(run(OpKind::Sqrt, {p})), {1, 2, 0.5});
  expect_near(values(run(OpKind::Log, {p})), {0, 1.3862943611, -1.3862943611});
}

TEST(Reference, BinaryBroadcasts) {
  HostTensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor row = f32({3}, {10, 20, 30});
  HostTensor col = f32({2, 1}, {100, 200});
  EXPECT_EQ(values(run(OpKind::Add, {a, row})), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(values(run(OpKind::Sub, {a, col})),
            (std::vector<double>{-99, -98, -97, -196, -195, -194}));
  EXPECT_EQ(values(run(OpKind::Mul, {col, row})),
            (std::vector<double>{1000, 2000, 3000, 2000, 4000, 6000}));
  EXPECT_EQ(values(run(OpKind::Maximum, {a, f32({}, {3.5})})),
            (std::vector<double>{3.5, 3.5, 3.5, 4, 5, 6}));
  EXPECT_EQ(values(run(OpKind::Minimum, {a, f32({}, {3.5})})),
            (std::vector<double>{1, 2, 3, 3.5, 3.5, 3.5}));
  EXPECT_EQ(values(run(OpKind::Pow, {a, f32({}, {2})})),
            (std::vector<double>{1, 4, 9, 16, 25, 36}));
}

TEST(Reference, IntegerDivisionIsTrueDivision) {
  HostTensor a = of(DType::i64, {3}, {7, -7, 1});
  HostTensor b = of(DType::i32, {3}, {2, 2, 3});
  HostTensor q = run(OpKind::Div, {a, b});
  EXPECT_EQ(q.dtype, DType::f32);
  expect_near(values(q), {3.5, -3.5, 1.0 / 3});
  HostTensor s = run(OpKind::Add, {a, b});
  EXPECT_EQ(s.dtype, DType::i64);
  EXPECT_EQ(values(s), (std::vector<double>{9, -5, 4}));
}

TEST(Reference, MaximumPropagatesNaN) {
  HostTensor m = run(OpKind::Maximum, {f32({2}, {NAN, 1}), f32({2}, {0, 2})});
  EXPECT_TRUE(std::isnan(m.get(0)));
  EXPECT_EQ(m.get(1), 2);
}

TEST(Reference, Compare) {
  HostTensor a = f32({3}, {1, 2, 3});
  HostTensor b = f32({}, {2});
  auto cmp = [&](OpKind op) {
    HostTensor r = run(op, {a, b});
    EXPECT_EQ(r.dtype, DType::b8);
    return values(r);
  };
  EXPECT_EQ(cmp(OpKind::Eq), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(cmp(OpKind::Ne), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(cmp(OpKind::Lt), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(cmp(OpKind::Le), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(cmp(OpKind::Gt), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(cmp(OpKind::Ge), (std::vector<double>{0, 1, 1}));
}

TEST(Reference, Where) {
  HostTensor cond = of(DType::b8, {2, 1}, {1, 0});
  HostTensor r = run(OpKind::Where, {cond, f32({3}, {1, 2, 3}), f32({}, {-1})});
  EXPECT_EQ(values(r), (std::vector<double>{1, 2, 3, -1, -1, -1}));
}

TEST(Reference, Cast) {
  Attrs a;
  a.set("dtype", DType::i32);
  HostTensor r = run(OpKind::Cast, {f32({3}, {1.9f, -1.9f, 0})}, a);
  EXPECT_EQ(r.dtype, DType::i32);
  EXPECT_EQ(values(r), (std::vector<double>{1, -1, 0}));
  a.set("dtype", DType::b8);
  EXPECT_EQ(values(run(OpKind::Cast, {f32({3}, {1.9f, -1.9f, 0})}, a)),
            (std::vector<double>{1, 1, 0}));
}

TEST(Reference, ReduceSumAndMax) {
  HostTensor x = f32({2, 3}, {1, 5, 3, 4, 2, 6});
  HostTensor rows = run(OpKind::ReduceSum, {x}, reduce({1}, false));
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(values(rows), (std::vector<double>{9, 12}));
  HostTensor cols = run(OpKind::ReduceSum, {x}, reduce({0}, true));
  EXPECT_EQ(cols.shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(cols), (std::vector<double>{5, 7, 9}));
  HostTensor all = run(OpKind::ReduceSum, {x}, reduce({0, 1}, false));
  EXPECT_TRUE(all.shape.empty());
  EXPECT_EQ(all.get(0), 21);
  HostTensor mx = run(OpKind::ReduceMax, {x}, reduce({1}, true));
  EXPECT_EQ(mx.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(mx), (std::vector<double>{5, 6}));
  HostTensor neg = run(OpKind::ReduceMax, {f32({2}, {-3, -7})}, reduce({0}, false));
  EXPECT_EQ(neg.get(0), -3);
}

TEST(Reference, ReduceMiddleAxisOf3D) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  HostTensor r = run(OpKind::ReduceSum, {f32({2, 3, 4}, v)}, reduce({1}, false));
  // out[b, k] = sum_j (12b + 4j + k) = 36b + 12 + 3k
  EXPECT_EQ(values(r), (std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57}));
}

TEST(Reference, ReduceSumOfBoolCounts) {
  HostTensor r = run(OpKind::ReduceSum, {of(DType::b8, {4}, {1, 0, 1, 1})}, reduce({0}, false));
  EXPECT_EQ(r.dtype, DType::i64);
  EXPECT_EQ(r.get(0), 3);
}

TEST(Reference, Matmul2D) {
  HostTensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  HostTensor c = run(OpKind::Matmul, {a, b});
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(c), (std::vector<double>{58, 64, 139, 154}));
}

TEST(Reference, Matmul1D) {
  HostTensor v = f32({3}, {1, 2, 3});
  HostTensor m = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(values(run(OpKind::Matmul, {v, v})), (std::vector<double>{14}));
  HostTensor vm = run(OpKind::Matmul, {v, m});
  EXPECT_EQ(vm.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(values(vm), (std::vector<double>{58, 64}));
  HostTensor mv = run(OpKind::Matmul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), v});
  EXPECT_EQ(values(mv), (std::vector<double>{14, 32}));
}

TEST(Reference, MatmulBatchedBroadcast) {
  // a: [2, 1, 2] (two row vectors), b: [3, 2, 1]... batch dims [2] and [3] do not broadcast,
  // so use a: [2, 1, 1, 2] and b: [3, 2, 1] -> [2, 3, 1, 1].
  HostTensor a = f32({2, 1, 1, 2}, {1, 2, 3, 4});
  HostTensor b = f32({3, 2, 1}, {1, 0, 0, 1, 1, 1});
  HostTensor c = run(OpKind::Matmul, {a, b});
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 3, 1, 1}));
  EXPECT_EQ(values(c), (std::vector<double>{1, 2, 3, 3, 4, 7}));
  // Batched matrix with a shared 2-D right operand.
  HostTensor x = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor id = f32({2, 2}, {0, 1, 1, 0});  // swaps columns
  EXPECT_EQ(values(run(OpKind::Matmul, {x, id})), (std::vector<double>{2, 1, 4, 3, 6, 5, 8, 7}));
}

TEST(Reference, ReshapePermuteExpand) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Attrs shape;
  shape.set("shape", Shape{3, 2});
  HostTensor r = run(OpKind::Reshape, {x}, shape);
  EXPECT_EQ(r.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(r), values(x));
  Attrs perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  HostTensor t = run(OpKind::Permute, {x}, perm);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(t), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  perm.set("perm", std::vector<int64_t>{2, 0, 1});
  HostTensor p3 = run(OpKind::Permute, {f32({2, 3, 4}, v)}, perm);  // out[k, i, j] = in[i, j, k]
  EXPECT_EQ(p3.shape, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(p3.get(1 * 6 + 1 * 3 + 2), 12 + 8 + 1);
  Attrs ex;
  ex.set("shape", Shape{2, 2, 3});
  HostTensor e = run(OpKind::Expand, {f32({2, 1}, {7, 8})}, ex);
  EXPECT_EQ(values(e), (std::vector<double>{7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8}));
}

TEST(Reference, LinearMatchesManual) {
  HostTensor x = f32({2, 3}, {1, 2, 3, -1, 0, 1});
  HostTensor w = f32({2, 3}, {0.5, -1, 2, 1, 1, 1});
  HostTensor b = f32({2}, {10, -10});
  // y[i, o] = sum_k x[i, k] w[o, k] + b[o]
  expect_near(values(run(OpKind::Linear, {x, w, b})), {0.5 - 2 + 6 + 10, 6 - 10, -0.5 + 2 + 10,
                                                       0 - 10});
  expect_near(values(run(OpKind::Linear, {x, w})), {4.5, 6, 1.5, 0});
}

// A bfloat16 linear adds its bias to the f32 sum and rounds once, as torch: 1.0078125 · 1.0234375
// = 1.03143310546875, minus 1 rounds to 0.031494140625; the product rounded first (1.03125)
// would give 0.03125. The matmul under it keeps the f32 sum (out_dtype).
TEST(Reference, HalfLinearRoundsOnceAfterTheBias) {
  HostTensor x = of(DType::bf16, {1, 1}, {1.0078125}), w = of(DType::bf16, {1, 1}, {1.0234375});
  HostTensor b = of(DType::bf16, {1}, {-1});
  HostTensor y = run(OpKind::Linear, {x, w, b});
  EXPECT_EQ(y.dtype, DType::bf16);
  EXPECT_EQ(values(y), std::vector<double>{0.031494140625});
  Attrs sums;
  sums.set("out_dtype", DType::f32);
  HostTensor p = run(OpKind::Matmul, {x, w}, sums);
  EXPECT_EQ(p.dtype, DType::f32);
  EXPECT_EQ(values(p), std::vector<double>{1.03143310546875});
  EXPECT_EQ(values(run(OpKind::Matmul, {x, w})), std::vector<double>{1.03125});
}

TEST(Reference, Mean) {
  HostTensor x = f32({2, 3}, {1, 5, 3, 4, 2, 6});
  expect_near(values(run(OpKind::Mean, {x}, reduce({1}, false))), {3, 4});
  HostTensor m = run(OpKind::Mean, {x}, reduce({0, 1}, true));
  EXPECT_EQ(m.shape, (std::vector<int64_t>{1, 1}));
  expect_near(values(m), {3.5});
}

TEST(Reference, SoftmaxRowsSumToOne) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 1000, 1000, 1000});
  Attrs a;
  a.set("axis", int64_t{1});
  HostTensor s = run(OpKind::Softmax, {x}, a);
  double e1 = std::exp(-2.0), e2 = std::exp(-1.0), z = e1 + e2 + 1;
  expect_near(values(s), {e1 / z, e2 / z, 1 / z, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  for (int r = 0; r < 2; ++r) EXPECT_NEAR(s.get(3 * r) + s.get(3 * r + 1) + s.get(3 * r + 2), 1, 1e-6);
  HostTensor ls = run(OpKind::LogSoftmax, {x}, a);
  expect_near(values(ls), {-2 - std::log(z), -1 - std::log(z), -std::log(z), -std::log(3.0),
                           -std::log(3.0), -std::log(3.0)},
              1e-5);
}

TEST(Reference, SoftmaxOverAxis0) {
  HostTensor x = f32({2, 2}, {0, 1, 0, 3});
  Attrs a;
  a.set("axis", int64_t{0});
  expect_near(values(run(OpKind::Softmax, {x}, a)),
              {0.5, 1 / (1 + std::exp(2.0)), 0.5, 1 / (1 + std::exp(-2.0))});
}

TEST(Reference, F16ComputesAndRounds) {
  HostTensor a = of(DType::f16, {2}, {1, 2048});
  HostTensor b = of(DType::f16, {2}, {0.0001, 1});
  HostTensor s = run(OpKind::Add, {a, b});
  EXPECT_EQ(s.dtype, DType::f16);
  EXPECT_NEAR(s.get(0), 1.0001, 1e-3);
  EXPECT_EQ(s.get(1), 2048);  // 2049 is not representable in f16: ties to even
}

}  // namespace
}  // namespace aotrace::ir
