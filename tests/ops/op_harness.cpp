// Random inputs and tolerant comparison for the op and model tests (see op_harness.h).
#include "tests/ops/op_harness.h"

#include <cmath>
#include <random>
#include <regex>
#include <sstream>

namespace aotrace::testing {

std::vector<InputSpec> parse_inputs(const std::string& spec) {
  static const std::regex one(R"((\w+):(\w+)\[([0-9,]*)\](?:\{(-?[0-9.e]+),(-?[0-9.e]+)\})?)");
  std::vector<InputSpec> out;
  for (std::sregex_iterator it(spec.begin(), spec.end(), one), end; it != end; ++it) {
    InputSpec s;
    s.input.name = (*it)[1];
    auto dtype = ir::parse_dtype((*it)[2].str());
    if (!dtype) throw std::runtime_error("bad dtype in input spec " + spec);
    s.input.dtype = *dtype;
    std::stringstream dims((*it)[3].str());
    for (std::string d; std::getline(dims, d, ',');) s.input.shape.push_back(std::stoll(d));
    if ((*it)[4].matched) s.range = {std::stod((*it)[4]), std::stod((*it)[5])};
    out.push_back(s);
  }
  return out;
}

ir::HostTensor random_input(const InputSpec& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ir::HostTensor t = ir::HostTensor::zeros(spec.input.dtype, spec.input.shape);
  const ir::DType d = spec.input.dtype;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (d == ir::DType::b8) {
      t.set(i, static_cast<double>(rng() & 1));
    } else if (ir::is_floating(d)) {
      auto [lo, hi] = spec.range.value_or(std::pair{-3.0, 3.0});
      t.set(i, std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      auto [lo, hi] = spec.range.value_or(std::pair{-5.0, 5.0});
      t.set(i, static_cast<double>(std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng)));
    }
  }
  return t;
}

Tolerance op_tolerance(ir::DType d) {
  switch (d) {
    case ir::DType::f32: return {1e-5, 1e-4};
    case ir::DType::f64: return {1e-10, 1e-9};
    case ir::DType::f16: return {1e-2, 1e-2};
    case ir::DType::bf16: return {3e-2, 3e-2};
    default: return {0, 0};
  }
}

std::string compare(const ir::HostTensor& got, const ir::HostTensor& want, std::optional<Tolerance> tol) {
  auto type = [](const ir::HostTensor& t) {
    return ir::TensorType{t.dtype, ir::Device{}, ir::Shape(t.shape.begin(), t.shape.end())}.str();
  };
  if (got.dtype != want.dtype || got.shape != want.shape)
    return "got " + type(got) + ", torch gives " + type(want);
  Tolerance tl = tol.value_or(op_tolerance(want.dtype));
  std::ostringstream s;
  int bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else ok = std::fabs(g - w) <= tl.atol + tl.rtol * std::fabs(w);
    if (!ok) {
      if (bad++ < 5) s << "  [" << i << "] got " << g << ", torch " << w << "\n";
      if (std::isfinite(g) && std::isfinite(w)) worst = std::max(worst, std::fabs(g - w));
    }
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(got.numel()) + " values of " + type(want) +
         " differ (max abs diff " + std::to_string(worst) + "):\n" + s.str();
}

}  // namespace aotrace::testing
