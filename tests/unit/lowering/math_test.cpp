// Accuracy of the inline f32 exp, erf, tanh and sigmoid (lowering/cpu/scalar_ops.cpp): each is
// compiled as a one-op kernel and run over dense sweeps (a linear sweep of the interesting range,
// a sweep of bit patterns over every binade of both signs, denormals, huge values, ±0, ±inf,
// NaN) for the portable baseline CPU (no FMA) and the host's (FMA, wide vectors); results are
// compared with double-precision libm. Also: the kernels of a GELU call no libm function.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/unit/lowering/plan_runner.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::OpKind;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();

// The CPUs to compile for: the default portable baseline (x86-64-v2 on x86: SSE, llvm.fmuladd
// as multiply and add) and the host (FMA, AVX2/AVX-512 on the build machines).
const std::vector<std::string> kCpus = {"", "native"};

std::vector<float> run_unary(OpKind op, const std::string& cpu, const std::vector<float>& x) {
  ir::Graph g;
  auto n = static_cast<int64_t>(x.size());
  ir::ValueId in = g.add_input("x", f32({n}), "L['x']");
  set_outputs(g, {g.add(op, {in})});
  Options options;
  options.cpu = cpu;
  std::vector<ir::HostTensor> out = compile_and_run(g, {ir::HostTensor::from_f32({n}, x)}, nullptr, options);
  std::vector<float> y(x.size());
  std::memcpy(y.data(), out.at(0).data.data(), y.size() * sizeof(float));
  return y;
}

// Inputs: `n` evenly spaced values in [lo, hi], then every 2^12th bit pattern of each sign
// (~2^20 values spread over all binades, denormals and ±inf/NaN patterns included), then the
// special values.
std::vector<float> sweep(float lo, float hi, int n) {
  std::vector<float> x;
  for (int i = 0; i < n; ++i) x.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1));
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 1u << 12) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  for (float s : {0.0f, -0.0f, kInf, -kInf, kNaN, kDenormMin, -kDenormMin, 1e-40f, -1e-40f,
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(), 1e30f, -1e30f, 1e-3f, -1e-3f})
    x.push_back(s);
  return x;
}

// The spacing of floats at `y` (double): 2^(e−23) for normal |y|, 2^−149 below FLT_MIN.
double ulp_of(double y) {
  y = std::fabs(y);
  if (y < std::numeric_limits<float>::min()) return kDenormMin;
  return std::ldexp(1.0, std::ilogb(y) - 23);
}

// The largest error seen, where, and how many values broke the bound.
struct ErrorStats {
  double worst = 0;
  float worst_x = 0;
  float worst_got = 0;
  int64_t failures = 0;
  std::string first_failure;

  void add(double err, double bound, float x, float got, double ref) {
    if (err > worst) {
      worst = err;
      worst_x = x;
      worst_got = got;
    }
    if (!(err <= bound) && failures++ == 0) first_failure = describe(x, got, ref, err);
  }
  static std::string describe(float x, float got, double ref, double err) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "x=%.9g got %.9g want %.17g (error %.3g)", x, got, ref, err);
    return buf;
  }
};

void report(const std::string& what, const ErrorStats& s, double bound) {
  std::printf("[ measured ] %-34s max %.3g at x=%.9g (bound %.3g)\n", what.c_str(), s.worst,
              s.worst_x, bound);
  EXPECT_EQ(s.failures, 0) << what << ": " << s.failures << " values above " << bound
                           << ", first: " << s.first_failure;
}

// Checks every finite input whose reference is a finite float: ulp error ≤ `ulps` and, when
// `abs_bound` > 0, absolute error ≤ `abs_bound`. `special` checks the rest (and may check more).
void check(const std::string& name, OpKind op, const std::vector<float>& x,
           const std::function<double(double)>& reference, double ulps, double abs_bound,
           const std::function<void(float, float)>& special) {
  for (const std::string& cpu : kCpus) {
    SCOPED_TRACE("cpu " + (cpu.empty() ? std::string("baseline") : cpu));
    std::vector<float> y = run_unary(op, cpu, x);
    ErrorStats by_ulp, by_abs;
    for (size_t i = 0; i < x.size(); ++i) {
      special(x[i], y[i]);
      if (!std::isfinite(x[i])) continue;
      double ref = reference(x[i]);
      if (std::fabs(ref) > std::numeric_limits<float>::max()) {
        EXPECT_EQ(y[i], static_cast<float>(ref)) << name << " overflow at x=" << x[i];
        continue;
      }
      double err = std::fabs(static_cast<double>(y[i]) - ref);  // NaN for a NaN result: fails
      by_ulp.add(err / ulp_of(ref), ulps, x[i], y[i], ref);
      if (abs_bound > 0) by_abs.add(err, abs_bound, x[i], y[i], ref);
    }
    std::string label = name + (cpu.empty() ? " (baseline)" : " (" + cpu + ")");
    report(label + " ulp", by_ulp, ulps);
    if (abs_bound > 0) report(label + " abs", by_abs, abs_bound);
  }
}

bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

TEST(MathF32, ExpWithinTwoUlpOverflowUnderflowAndSpecials) {
  std::vector<float> x = sweep(-110.0f, 90.0f, 1'000'001);
  for (float v : {88.72f, 88.7228f, 88.7229f, 88.73f, -87.33f, -103.0f, -103.97f, -104.0f})
    x.push_back(v);
  check("exp", OpKind::Exp, x, [](double v) { return std::exp(v); }, 2.0, 0,
        [](float xi, float yi) {
          if (std::isnan(xi)) { EXPECT_TRUE(std::isnan(yi)); }
          if (xi == kInf) { EXPECT_EQ(yi, kInf); }
          if (xi == -kInf || xi < -104.0f) {
            EXPECT_TRUE(same_bits(yi, 0.0f)) << "exp(" << xi << ")";
          }
          if (xi == 0) { EXPECT_EQ(yi, 1.0f); }
          if (xi > 88.73f) { EXPECT_EQ(yi, kInf) << "exp(" << xi << ")"; }
        });
}

TEST(MathF32, ErfAbsoluteAndRelativeErrorOddAndSaturating) {
  std::vector<float> x = sweep(-6.0f, 6.0f, 1'000'001);
  std::vector<float> tiny = sweep(-1e-2f, 1e-2f, 200'001);  // relative accuracy near 0
  x.insert(x.end(), tiny.begin(), tiny.end());
  check("erf", OpKind::Erf, x, [](double v) { return std::erf(v); }, 4.0, 2e-7,
        [](float xi, float yi) {
          if (std::isnan(xi)) { EXPECT_TRUE(std::isnan(yi)); }
          if (std::isinf(xi)) { EXPECT_EQ(yi, std::copysign(1.0f, xi)); }
          if (xi == 0) {
            EXPECT_TRUE(same_bits(yi, xi)) << "erf(" << xi << ") keeps the sign of 0";
          }
          if (std::fabs(xi) >= 4.0f) { EXPECT_EQ(std::fabs(yi), 1.0f); }
        });
  std::vector<float> pos = sweep(0.0f, 8.0f, 100'001), neg;
  for (float v : pos) neg.push_back(-v);
  std::vector<float> yp = run_unary(OpKind::Erf, "", pos), yn = run_unary(OpKind::Erf, "", neg);
  for (size_t i = 0; i < pos.size(); ++i)
    if (!std::isnan(pos[i])) {
      ASSERT_TRUE(same_bits(yn[i], -yp[i])) << "erf not odd at " << pos[i];
    }
}

TEST(MathF32, TanhWithinFourUlpOddAndSaturating) {
  std::vector<float> x = sweep(-12.0f, 12.0f, 1'000'001);
  std::vector<float> tiny = sweep(-1.0f, 1.0f, 200'001);
  x.insert(x.end(), tiny.begin(), tiny.end());
  check("tanh", OpKind::Tanh, x, [](double v) { return std::tanh(v); }, 4.0, 0,
        [](float xi, float yi) {
          if (std::isnan(xi)) { EXPECT_TRUE(std::isnan(yi)); }
          if (std::isinf(xi)) { EXPECT_EQ(yi, std::copysign(1.0f, xi)); }
          if (xi == 0) {
            EXPECT_TRUE(same_bits(yi, xi)) << "tanh(" << xi << ") keeps the sign of 0";
          }
          if (std::fabs(xi) >= 10.0f) { EXPECT_EQ(std::fabs(yi), 1.0f); }
        });
  std::vector<float> pos = sweep(0.0f, 12.0f, 100'001), neg;
  for (float v : pos) neg.push_back(-v);
  std::vector<float> yp = run_unary(OpKind::Tanh, "", pos), yn = run_unary(OpKind::Tanh, "", neg);
  for (size_t i = 0; i < pos.size(); ++i)
    if (!std::isnan(pos[i])) {
      ASSERT_TRUE(same_bits(yn[i], -yp[i])) << "tanh not odd at " << pos[i];
    }
}

TEST(MathF32, SigmoidWithinThreeUlpAndSpecials) {
  std::vector<float> x = sweep(-110.0f, 40.0f, 1'000'001);
  check("sigmoid", OpKind::Sigmoid, x, [](double v) { return 1 / (1 + std::exp(-v)); }, 3.0, 0,
        [](float xi, float yi) {
          if (std::isnan(xi)) { EXPECT_TRUE(std::isnan(yi)); }
          if (xi == kInf) { EXPECT_EQ(yi, 1.0f); }
          if (xi == -kInf) { EXPECT_TRUE(same_bits(yi, 0.0f)); }
          if (xi == 0) { EXPECT_EQ(yi, 0.5f); }
          if (xi > 18.0f) { EXPECT_EQ(yi, 1.0f) << "sigmoid(" << xi << ")"; }
        });
}

// GELU (x·0.5·(1 + erf(x/√2))) and the other three compile to kernels that call no libm
// function: the routines are inline, so the loop vectoriser can vectorise them.
TEST(MathF32, KernelsCallNoLibmTranscendentals) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({64, 256}), "L['x']");
  ir::ValueId half = g.constant(0.5, ir::DType::f32);
  ir::ValueId erf = g.add(OpKind::Erf, {g.add(OpKind::Mul, {x, g.constant(0.7071067811865476, ir::DType::f32)})});
  ir::ValueId gelu = g.add(OpKind::Mul, {g.add(OpKind::Mul, {x, half}),
                                         g.add(OpKind::Add, {erf, g.constant(1, ir::DType::f32)})});
  set_outputs(g, {gelu, g.add(OpKind::Exp, {x}), g.add(OpKind::Tanh, {x}),
                  g.add(OpKind::Sigmoid, {x})});
  for (const std::string& cpu : kCpus) {
    Options options;
    options.cpu = cpu;
    LoweredVariant lowered = lower_graph(g, "math_", options);
    std::string object(lowered.object.begin(), lowered.object.end());
    for (const char* f : {"erff", "expf", "tanhf", "exp2f", "__expf_finite"})
      EXPECT_EQ(object.find(std::string(1, '\0') + f + '\0'), std::string::npos)
          << "the " << (cpu.empty() ? "baseline" : cpu) << " object references " << f;
  }
}

}  // namespace
}  // namespace aotrace::lowering
