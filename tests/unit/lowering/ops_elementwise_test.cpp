// Kernels of the newer elementwise and index-mapping primitives against the reference
// interpreter: erf, rsqrt, floor, ceil, sin, cos, not, floor_div, remainder, and, or; arange,
// slice, flip, pad, concat, gather, index_select — over dtypes, broadcasting, size-0 and size-1
// dims, and non-contiguous (permuted, sliced) operands.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::DType;
using ir::OpKind;

TEST(Ops, FloatingUnaryOps) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {5, 13}), "L['x']");
    std::vector<ir::ValueId> outs;
    for (OpKind k : {OpKind::Erf, OpKind::Floor, OpKind::Ceil, OpKind::Sin, OpKind::Cos})
      outs.push_back(g.add(k, {x}));
    outs.push_back(g.add(OpKind::Rsqrt, {g.add(OpKind::Add, {g.add(OpKind::Abs, {x}), g.constant(0.5, t)})}));
    outs.push_back(g.add(OpKind::Erf, {transpose(g, x)}));  // non-contiguous operand
    set_outputs(g, outs);
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    expect_matches_reference_in(g, -3, 3);
  }
}

TEST(Ops, IntegerAndBoolUnaryOps) {
  for (DType t : {DType::i64, DType::i32, DType::i8, DType::u8, DType::b8}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {4, 6}), "L['x']");
    std::vector<ir::ValueId> outs = {g.add(OpKind::Not, {x})};
    if (t != DType::b8) {
      outs.push_back(g.add(OpKind::Floor, {x}));
      outs.push_back(g.add(OpKind::Ceil, {x}));
    }
    set_outputs(g, outs);
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    expect_matches_reference_in(g, -50, 50);
  }
}

TEST(Ops, FloorDivAndRemainderSignsAsTorch) {
  for (DType t : {DType::f32, DType::f64, DType::i64, DType::i32, DType::i8, DType::u8}) {
    ir::Graph g;
    ir::ValueId a = g.add_input("a", typed(t, {6, 8}), "L['a']");
    ir::ValueId b = g.add_input("b", typed(t, {8}), "L['b']");
    set_outputs(g, {g.add(OpKind::FloorDiv, {a, b}), g.add(OpKind::Remainder, {a, b}),
                    g.add(OpKind::Remainder, {transpose(g, a), g.constant(3, t)})});
    std::vector<ir::HostTensor> in = random_inputs(g, 7, -20, 20);
    for (int64_t i = 0; i < 8; ++i)  // no zero divisors: torch raises for integers
      if (in[1].get(i) == 0) in[1].set(i, i % 2 == 0 ? 3 : -3);
    if (t == DType::f32) in[0].set(0, -0.0);
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    expect_outputs_match(g, in);
  }
}

TEST(Ops, IntegerDivisionByZeroGivesZeroWithoutTrapping) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", typed(DType::i32, {4}), "L['a']");
  ir::ValueId b = g.add_input("b", typed(DType::i32, {4}), "L['b']");
  set_outputs(g, {g.add(OpKind::FloorDiv, {a, b}), g.add(OpKind::Remainder, {a, b})});
  ir::HostTensor x = ir::HostTensor::zeros(DType::i32, {4}), y = ir::HostTensor::zeros(DType::i32, {4});
  for (int64_t i = 0; i < 4; ++i) x.set(i, i - 2.0);
  y.set(3, -1);
  x.set(3, -2147483648.0);  // INT_MIN // -1 wraps to INT_MIN, as torch
  std::vector<ir::HostTensor> out = compile_and_run(g, {x, y});
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[0].get(i), 0);
    EXPECT_EQ(out[1].get(i), 0);
  }
  EXPECT_EQ(out[0].get(3), -2147483648.0);
  EXPECT_EQ(out[1].get(3), 0);
}

TEST(Ops, FloatFloorDivAndRemainderByZero) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", typed(DType::f32, {3}), "L['a']");
  set_outputs(g, {g.add(OpKind::FloorDiv, {a, g.constant(0, DType::f32)}),
                  g.add(OpKind::Remainder, {a, g.constant(0, DType::f32)})});
  expect_outputs_match(g, {ir::HostTensor::from_f32({3}, {1.5f, -2.0f, 0.0f})});
}

TEST(Ops, AndOrOnBoolAndIntegers) {
  for (DType t : {DType::b8, DType::i32, DType::u8, DType::i64}) {
    ir::Graph g;
    ir::ValueId a = g.add_input("a", typed(t, {3, 5}), "L['a']");
    ir::ValueId b = g.add_input("b", typed(t, {5}), "L['b']");
    set_outputs(g, {g.add(OpKind::And, {a, b}), g.add(OpKind::Or, {a, b}),
                    g.add(OpKind::And, {g.add(OpKind::Not, {a}), g.add(OpKind::Or, {a, b})})});
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    expect_matches_reference_in(g, t == DType::b8 ? 0 : -100, t == DType::b8 ? 2 : 100);
  }
}

TEST(Ops, ArangeInEveryDTypeFusesIntoItsConsumer) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 7}), "L['x']");
  auto arange = [&](int64_t n, double start, double step, DType t) {
    return g.add(OpKind::Arange, {}, attrs({{"shape", ir::Shape{n}}, {"start", start}, {"step", step}, {"dtype", t}}));
  };
  set_outputs(g, {g.add(OpKind::Add, {x, arange(7, 0.5, 0.25, DType::f32)}),
                  arange(6, -3, 1, DType::i64), arange(5, 10, -2.5, DType::i32),
                  arange(4, 0, 0.1, DType::f16), arange(0, 0, 1, DType::i64)});
  LoweredVariant v = expect_matches_reference_in(g, -1, 1);
  EXPECT_EQ(v.num_kernels(), 5);
}

TEST(Ops, SliceWithStepsOfPermutedInputs) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({6, 9}), "L['x']");
  ir::ValueId t = transpose(g, x);  // [9, 6]
  set_outputs(g, {slice(g, x, 1, 2, 9, 3), slice(g, t, 0, 1, 8, 2), slice(g, slice(g, t, 1, 1, 5), 0, 4, 4),
                  g.add(OpKind::Exp, {slice(g, x, 0, 5, 6)}),
                  g.add(OpKind::Add, {slice(g, x, 1, 0, 6), slice(g, t, 0, 3, 9)})});
  EXPECT_EQ(expect_matches_reference_in(g, -2, 2).num_kernels(), 5);
}

TEST(Ops, FlipOverAxes) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(DType::i32, {3, 1, 5}), "L['x']");
  set_outputs(g, {g.add(OpKind::Flip, {x}, attrs({{"axes", std::vector<int64_t>{0, 2}}})),
                  g.add(OpKind::Flip, {g.add(OpKind::Permute, {x}, perm_attrs({2, 1, 0}))},
                        attrs({{"axes", std::vector<int64_t>{1, 2}}}))});
  expect_matches_reference_in(g, -9, 9);
}

TEST(Ops, PadAndCropWithValues) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 4}), "L['x']");
  ir::ValueId e = g.add_input("e", f32({0, 4}), "L['e']");
  auto pad = [&](ir::ValueId v, std::vector<int64_t> low, std::vector<int64_t> high, double value) {
    return g.add(OpKind::Pad, {v}, attrs({{"low", low}, {"high", high}, {"value", value}}));
  };
  set_outputs(g, {pad(x, {1, 2}, {0, 3}, 0.0), pad(x, {-1, 1}, {2, -2}, -7.5),
                  pad(transpose(g, x), {2, 0}, {1, 1}, 1.0), pad(e, {1, 0}, {1, 1}, 3.0),
                  g.add(OpKind::Relu, {pad(g.add(OpKind::Neg, {x}), {1, 1}, {1, 1}, -1.0)})});
  expect_matches_reference_in(g, -2, 2);
  // A conv input: padded rows and columns around a fused producer, rows wide enough to take the
  // vector loop of the interior (emit_pad_rows), and a crop of the leading dim.
  ir::Graph h;
  ir::ValueId y = h.add_input("y", f32({2, 3, 5, 37}), "L['y']");
  ir::ValueId relu = h.add(OpKind::Relu, {h.add(OpKind::Neg, {y})});
  set_outputs(h, {h.add(OpKind::Pad, {relu}, attrs({{"low", std::vector<int64_t>{0, 0, 1, 2}},
                                                     {"high", std::vector<int64_t>{0, 0, 2, 1}}, {"value", 0.5}})),
                  h.add(OpKind::Pad, {y}, attrs({{"low", std::vector<int64_t>{-1, 1, 0, 3}},
                                                  {"high", std::vector<int64_t>{0, 0, 0, -5}}, {"value", 0.0}}))});
  expect_matches_reference_in(h, -2, 2);
}

TEST(Ops, ConcatOfMixedOperands) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({2, 3}), "L['a']");
  ir::ValueId b = g.add_input("b", typed(DType::i32, {2, 4}), "L['b']");
  ir::ValueId e = g.add_input("e", f32({2, 0}), "L['e']");
  ir::ValueId c = g.add_input("c", f32({5, 2}), "L['c']");
  set_outputs(g, {g.add(OpKind::Concat, {a, e, b, transpose(g, slice(g, c, 0, 1, 3))}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::Concat, {a, slice(g, a, 0, 1, 2), a}, attrs({{"axis", int64_t{0}}})),
                  g.add(OpKind::Concat, {e, a}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::Mul, {g.add(OpKind::Concat, {a, a}, attrs({{"axis", int64_t{0}}})),
                                      g.constant(2, DType::f32)})});
  expect_matches_reference_in(g, -5, 5);
}

TEST(Ops, GatherAndIndexSelectWrapNegativeIndices) {
  for (DType it : {DType::i64, DType::i32}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", f32({4, 5}), "L['x']");
    ir::ValueId gi = g.add_input("gi", typed(it, {4, 3}), "L['gi']");
    ir::ValueId si = g.add_input("si", typed(it, {6}), "L['si']");
    set_outputs(g, {g.add(OpKind::Gather, {x, gi}, attrs({{"axis", int64_t{1}}})),
                    g.add(OpKind::IndexSelect, {x, si}, attrs({{"axis", int64_t{1}}})),
                    g.add(OpKind::IndexSelect, {transpose(g, x), slice(g, si, 0, 0, 4)}, attrs({{"axis", int64_t{0}}})),
                    g.add(OpKind::Gather, {transpose(g, x), slice(g, gi, 1, 0, 2)}, attrs({{"axis", int64_t{0}}}))});
    std::vector<ir::HostTensor> in = random_inputs(g, 11, -4, 4);  // indices in [-4, 4)
    SCOPED_TRACE(std::string(ir::dtype_name(it)));
    expect_outputs_match(g, in);
  }
}

TEST(Ops, IndexOutOfRangeIsClampedNotReadOutOfBounds) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({5}), "L['x']");
  ir::ValueId i = g.add_input("i", typed(DType::i64, {3}), "L['i']");
  set_outputs(g, {g.add(OpKind::IndexSelect, {x, i}, attrs({{"axis", int64_t{0}}}))});
  ir::HostTensor idx = ir::HostTensor::zeros(DType::i64, {3});
  idx.set(0, 1000);
  idx.set(1, -1000);
  idx.set(2, 2);
  std::vector<ir::HostTensor> out =
      compile_and_run(g, {ir::HostTensor::from_f32({5}, {1, 2, 3, 4, 5}), idx});
  EXPECT_EQ(out[0].get(0), 5);
  EXPECT_EQ(out[0].get(1), 1);
  EXPECT_EQ(out[0].get(2), 3);
}

TEST(Ops, SizeZeroAndSizeOneDims) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({0, 3}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({1, 3}), "L['y']");
  ir::ValueId k0 = g.add_input("k0", f32({2, 0}), "L['k0']");
  ir::ValueId k1 = g.add_input("k1", f32({0, 4}), "L['k1']");
  set_outputs(g, {g.add(OpKind::Add, {x, y}), g.add(OpKind::ReduceSum, {x}, reduce_attrs({0}, false)),
                  g.add(OpKind::Matmul, {k0, k1}), g.add(OpKind::Exp, {y}),
                  g.add(OpKind::ReduceMax, {y}, reduce_attrs({0}, true))});
  expect_matches_reference_in(g, -1, 1);
}

// relu6 and clamp compare with constant bounds, which take one compare instead of the general
// form's two (scalar_ops.cpp emit_float_extremum): NaN still propagates from either side, the
// infinities and the bounds themselves land as before, on every CPU's vector width.
TEST(Ops, MaximumAndMinimumAgainstConstantsPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {nan, -inf, inf, -7.5f, -1e-30f, 0.0f, 1e-30f, 3.0f, 6.0f, 6.5f, 1e30f, nan,
                                     2.0f, -2.0f, nan, 5.999f, -0.5f};
  ir::Graph g;
  const int64_t n = static_cast<int64_t>(values.size());
  ir::ValueId x = g.add_input("x", typed(DType::f32, {2, n}), "L['x']");
  ir::ValueId zero = g.constant(0, DType::f32), six = g.constant(6, DType::f32);
  ir::ValueId relu6 = g.add(OpKind::Minimum, {g.add(OpKind::Maximum, {x, zero}), six});
  set_outputs(g, {relu6, g.add(OpKind::Maximum, {six, x}), g.add(OpKind::Minimum, {zero, x}),
                  g.add(OpKind::Maximum, {slice(g, x, 0, 0, 1), slice(g, x, 0, 1, 2)})});
  ir::HostTensor in = random_tensor({2, n}, 3, -1, 1, DType::f32);
  for (int64_t i = 0; i < n; ++i) {
    in.set(i, values[static_cast<size_t>(i)]);
    in.set(n + i, values[static_cast<size_t>(n - 1 - i)]);
  }
  for (const char* cpu : {"x86-64-v2", "x86-64-v3", "x86-64-v4"}) {
    if (std::string(cpu) == "x86-64-v3" && !__builtin_cpu_supports("avx2")) continue;
    if (std::string(cpu) == "x86-64-v4" && !__builtin_cpu_supports("avx512f")) continue;
    SCOPED_TRACE(cpu);
    Options o;
    o.cpu = cpu;
    const std::vector<ir::HostTensor> inputs = {in};
    std::vector<ir::HostTensor> out = compile_and_run(g, inputs, nullptr, o);
    std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
    for (size_t k = 0; k < out.size(); ++k) {
      EXPECT_EQ(compare(out[k], expected[k], 0, 0), "") << "output " << k;
      for (int64_t i = 0; i < out[k].numel(); ++i)
        EXPECT_EQ(std::isnan(out[k].get(i)), std::isnan(expected[k].get(i))) << "output " << k << " at " << i;
    }
  }
}

}  // namespace
}  // namespace aotrace::lowering
