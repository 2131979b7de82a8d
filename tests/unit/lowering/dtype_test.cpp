// Kernels over every dtype: f16/bf16 storage (bit-exact conversions, rounding to nearest even,
// NaN, inf, subnormals), integer arithmetic and casts (truncation, wrap, bool), compared with the
// reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::DType;
using ir::OpKind;

ir::ValueId cast(ir::Graph& g, ir::ValueId x, DType to) {
  ir::Attrs a;
  a.set("dtype", to);
  return g.add(OpKind::Cast, {x}, a);
}

uint16_t bits16(const ir::HostTensor& t, int64_t i) {
  return static_cast<uint16_t>(t.data[static_cast<size_t>(2 * i)] |
                               (t.data[static_cast<size_t>(2 * i + 1)] << 8));
}

// Values that exercise every path of the f16/bf16 conversions.
std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  return {0.0f, -0.0f, 1.0f, -1.5f, 1.0f / 3, 65504.0f, 65519.0f, 65520.0f, 1e6f, -inf, inf,
          std::nanf(""), 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 8.9406967e-08f,
          3.0e-5f, -7.0e-6f, 1.0009765625f /* tie below */, 1.0029296875f /* tie above */,
          1.00048828125f, 3.4e38f, 1e-40f, 2049.0f, 2051.0f, 257.0f, 259.0f, -1e-45f};
}

// The x86-64 levels this machine runs: the x86-64-v2 baseline ("": f16 converted by integer
// code), and where it has them x86-64-v3 and v4 (F16C's vcvtph2ps / vcvtps2ph, and half vector
// math computed in f32 again after LLVM's optimisation: lowering/cpu/storage.cpp).
std::vector<std::string> cpu_levels() {
  std::vector<std::string> levels = {""};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) levels.push_back("x86-64-v3");
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    levels.push_back("x86-64-v4");
  return levels;
}

// On every level: the same bits.
TEST(DTypes, F32ToHalfAndBackIsBitExact) {
  std::vector<float> values;
  for (int copy = 0; copy < 4; ++copy)  // past a 16-lane vector loop's first iterations
    for (float v : special_values()) values.push_back(copy % 2 == 0 ? v : -v);
  auto n = static_cast<int64_t>(values.size());
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(DType::f32, {n}), "L['x']");
  ir::ValueId h = cast(g, x, DType::f16), bh = cast(g, x, DType::bf16);
  set_outputs(g, {h, bh, cast(g, h, DType::f32), cast(g, bh, DType::f32), cast(g, h, DType::bf16)});
  ir::HostTensor in = ir::HostTensor::from_f32({n}, values);
  for (const std::string& cpu : cpu_levels()) {
    SCOPED_TRACE(cpu.empty() ? "x86-64-v2" : cpu);
    Options options;
    options.cpu = cpu;
    std::vector<ir::HostTensor> out = compile_and_run(g, {in}, nullptr, options);
    for (int64_t i = 0; i < n; ++i) {
      float v = values[static_cast<size_t>(i)];
      EXPECT_EQ(bits16(out[0], i), ir::f32_to_f16(v)) << "f16 of " << v;
      EXPECT_EQ(bits16(out[1], i), ir::f32_to_bf16(v)) << "bf16 of " << v;
      float back = ir::f16_to_f32(ir::f32_to_f16(v)), bback = ir::bf16_to_f32(ir::f32_to_bf16(v));
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(out[2].get(i)) && std::isnan(out[3].get(i)));
      } else {
        EXPECT_EQ(out[2].get(i), back) << "f16 round trip of " << v;
        EXPECT_EQ(out[3].get(i), bback) << "bf16 round trip of " << v;
        EXPECT_EQ(bits16(out[4], i), ir::f32_to_bf16(back)) << "f16 → bf16 of " << v;
      }
    }
  }
}

TEST(DTypes, EveryF16BitPatternLoadsExactly) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(DType::f16, {65536}), "L['x']");
  set_outputs(g, {cast(g, x, DType::f32), g.add(OpKind::Neg, {x})});
  ir::HostTensor in = ir::HostTensor::zeros(DType::f16, {65536});
  for (int64_t i = 0; i < 65536; ++i) {
    in.data[static_cast<size_t>(2 * i)] = static_cast<uint8_t>(i & 0xff);
    in.data[static_cast<size_t>(2 * i + 1)] = static_cast<uint8_t>(i >> 8);
  }
  std::vector<ir::HostTensor> out = compile_and_run(g, {in});
  for (int64_t i = 0; i < 65536; ++i) {
    float e = ir::f16_to_f32(static_cast<uint16_t>(i));
    if (std::isnan(e)) {
      ASSERT_TRUE(std::isnan(out[0].get(i))) << i;
      continue;
    }
    ASSERT_EQ(out[0].get(i), e) << "bits " << i;
    ASSERT_EQ(bits16(out[1], i), static_cast<uint16_t>(i ^ 0x8000)) << "neg of bits " << i;
  }
}

// f16 ops whose f16 result is exact or correctly rounded from f32 (moves, compares, maxima,
// floor, +, -, ×, ÷, sqrt: f32 holds the exact result or rounds it innocuously, 24 >= 2·11 + 2
// bits) give the reference's bits on every level, over NaN, ±inf, subnormals, ties and overflow,
// in vectors of every width (96 elements) and fused into one kernel. On x86-64-v3/v4 LLVM narrows
// the compares, fneg, fabs and floor of widened values to half vectors, which are computed in f32
// again (x86 scalarises them): the numbers must not change.
TEST(DTypes, F16MathIsExactOnEveryCpu) {
  constexpr int64_t n = 96;
  ir::HostTensor x = ir::HostTensor::zeros(DType::f16, {n}), y = x;
  const std::vector<float> specials = special_values();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-8, 8);
  for (int64_t i = 0; i < n; ++i) {
    x.set(i, i < static_cast<int64_t>(specials.size()) ? specials[static_cast<size_t>(i)] : u(rng));
    y.set(i, i % 7 == 0 ? specials[static_cast<size_t>(i % specials.size())] : u(rng));
  }
  ir::Graph g;
  ir::ValueId a = g.add_input("x", typed(DType::f16, {n}), "L['x']"), b = g.add_input("y", typed(DType::f16, {n}), "L['y']");
  auto op = [&](OpKind k, std::vector<ir::ValueId> operands) { return g.add(k, std::move(operands)); };
  ir::ValueId relu6 = op(OpKind::Minimum, {op(OpKind::Maximum, {a, g.constant(0, DType::f16)}), g.constant(6, DType::f16)});
  set_outputs(g, {op(OpKind::Neg, {a}), op(OpKind::Abs, {a}), op(OpKind::Floor, {a}), op(OpKind::Ceil, {b}),
                  op(OpKind::Maximum, {a, b}), op(OpKind::Minimum, {a, b}), op(OpKind::Relu, {b}), relu6,
                  op(OpKind::Where, {op(OpKind::Gt, {a, b}), a, op(OpKind::Neg, {b})}), op(OpKind::Le, {a, b}),
                  op(OpKind::Add, {a, b}), op(OpKind::Sub, {op(OpKind::Mul, {a, b}), a}), op(OpKind::Div, {a, b}),
                  op(OpKind::Sqrt, {op(OpKind::Abs, {op(OpKind::Add, {a, g.constant(0.1, DType::f16)})})})});
  const std::vector<ir::HostTensor> inputs = {x, y};
  const std::vector<ir::HostTensor> want = ir::evaluate(g, inputs);
  for (const std::string& cpu : cpu_levels()) {
    SCOPED_TRACE(cpu.empty() ? "x86-64-v2" : cpu);
    Options options;
    options.cpu = cpu;
    std::vector<ir::HostTensor> got = compile_and_run(g, inputs, nullptr, options);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(compare(got[o], want[o], 0, 0), "") << "output " << o;
  }
}

TEST(DTypes, HalfArithmeticComputesInF32) {
  for (DType t : {DType::f16, DType::bf16}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {4, 9}), "L['x']");
    ir::ValueId y = g.add_input("y", typed(t, {9}), "L['y']");
    ir::ValueId w = g.add_input("w", typed(t, {9, 5}), "L['w']");
    set_outputs(g, {g.add(OpKind::Add, {x, y}), g.add(OpKind::Mul, {x, g.constant(0.1, t)}),
                    g.add(OpKind::Exp, {x}), g.add(OpKind::Tanh, {y}),
                    g.add(OpKind::ReduceSum, {x}, reduce_attrs({1}, false)),
                    g.add(OpKind::ReduceMax, {x}, reduce_attrs({0}, true)),
                    g.add(OpKind::Matmul, {x, w}), g.add(OpKind::Gt, {x, y}),
                    g.add(OpKind::Add, {x, cast(g, y, DType::f32)})});
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    expect_matches_reference_in(g, -2, 2);
  }
}

TEST(DTypes, IntegerArithmeticWrapsAndPromotes) {
  for (DType t : {DType::i64, DType::i32, DType::i8, DType::u8}) {
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {3, 7}), "L['x']");
    ir::ValueId y = g.add_input("y", typed(t, {7}), "L['y']");
    ir::ValueId z = g.add_input("z", typed(DType::i64, {3, 1}), "L['z']");
    std::vector<ir::ValueId> outs;
    for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Maximum, OpKind::Minimum,
                     OpKind::Div, OpKind::Eq, OpKind::Lt, OpKind::Ge})
      outs.push_back(g.add(k, {x, y}));
    outs.push_back(g.add(OpKind::Neg, {x}));
    outs.push_back(g.add(OpKind::Abs, {x}));
    outs.push_back(g.add(OpKind::Relu, {x}));
    outs.push_back(g.add(OpKind::Add, {x, z}));  // promotes to i64
    outs.push_back(g.add(OpKind::Mul, {x, g.constant(2.5, DType::f32)}));
    outs.push_back(g.add(OpKind::ReduceSum, {x}, reduce_attrs({1}, false)));
    outs.push_back(g.add(OpKind::ReduceMax, {x}, reduce_attrs({0}, false)));
    outs.push_back(g.add(OpKind::Matmul, {x, g.add(OpKind::Permute, {x}, perm_attrs({1, 0}))}));
    set_outputs(g, outs);
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    // u8 values from [-60, 60) wrap to [196, 256) ∪ [0, 60): products overflow and wrap.
    expect_matches_reference_in(g, -60, 60);
  }
}

TEST(DTypes, CastsTruncateTowardZeroAndBoolIsNonZero) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(DType::f32, {40}), "L['x']");
  ir::ValueId b = g.add(OpKind::Gt, {x, g.constant(0, DType::f32)});
  std::vector<ir::ValueId> outs;
  for (DType t : {DType::i64, DType::i32, DType::i8, DType::b8, DType::f64, DType::f16, DType::bf16})
    outs.push_back(cast(g, x, t));
  for (DType t : {DType::f32, DType::i64, DType::u8, DType::f16}) outs.push_back(cast(g, b, t));
  ir::ValueId i = cast(g, x, DType::i32);
  for (DType t : {DType::f32, DType::b8, DType::i8, DType::u8, DType::f16}) outs.push_back(cast(g, i, t));
  outs.push_back(g.add(OpKind::Add, {b, b}));  // bool + bool stays bool (or)
  outs.push_back(g.add(OpKind::Add, {b, i}));  // bool promotes to the integer
  set_outputs(g, outs);
  ir::HostTensor in = random_tensor({40}, 5, -100, 100);
  in.set(0, 0.0);
  in.set(1, -0.5);
  in.set(2, 0.999);
  in.set(3, -0.999);
  in.set(4, 127.9);
  expect_outputs_match(g, {in});
}

TEST(DTypes, F64StaysF64) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(DType::f64, {5, 6}), "L['x']");
  ir::ValueId y = g.add_input("y", typed(DType::f32, {6}), "L['y']");
  set_outputs(g, {g.add(OpKind::Add, {x, g.constant(1e-12, DType::f64)}),
                  g.add(OpKind::Mul, {x, y}), g.add(OpKind::Sigmoid, {x}),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({0, 1}, false))});
  std::vector<ir::HostTensor> inputs = random_inputs(g, 3, -1, 1);
  expect_outputs_match(g, inputs, Tolerance{1e-12, 1e-14});
}

}  // namespace
}  // namespace aotrace::lowering
