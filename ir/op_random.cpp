// OpKind::Random: its rule, its reference and the generator every backend reproduces (ir.h).
#include <cmath>
#include <cstring>

#include "ir/ir_private.h"

namespace aotrace::ir {

void philox4x32(uint32_t c[4], uint32_t k[2]) {
  for (int r = 0; r < kPhiloxRounds; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c[2];
    const uint32_t next[4] = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
                              static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    for (int i = 0; i < 4; ++i) c[i] = next[i];
    k[0] += kPhiloxW0;
    k[1] += kPhiloxW1;
  }
}

double philox_sample(int64_t seed, int64_t offset, int64_t stream, int64_t index, bool normal) {
  const auto s = static_cast<uint64_t>(seed), i = static_cast<uint64_t>(index);
  uint32_t key[2] = {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)};
  uint32_t c[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(stream),
                   static_cast<uint32_t>(offset)};
  philox4x32(c, key);
  constexpr double kScale = 1.0 / 16777216.0;  // 2^-24
  if (!normal) return static_cast<double>(c[0] >> 8) * kScale;
  const double u1 = static_cast<double>((c[0] >> 8) + 1) * kScale;
  const double u2 = static_cast<double>(c[1] >> 8) * kScale;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

InferFn infer_random() {
  return [](std::span<const TensorType> t, const Attrs& attrs) {
    if (t[0].dtype != DType::i64 || t[0].shape.size() != 1 || !(t[0].shape[0] == SymExpr(2)))
      internal_error("random: the rng operand must be i64[2], got " + t[0].str());
    const DType dtype = attrs.dtype("dtype");
    if (!is_floating(dtype)) user_error("random: dtype must be floating, got " + std::string(dtype_name(dtype)));
    const std::string& dist = attrs.s("distribution");
    if (dist != "uniform" && dist != "normal") internal_error("random: unknown distribution " + dist);
    attrs.i("stream");
    return std::vector<TensorType>{{dtype, t[0].device, shape_attr(attrs, "shape")}};
  };
}

ReferenceFn reference_random(InferFn infer) {
  return with_results(infer, [](std::span<const HostTensor> in, const Attrs& attrs, std::vector<HostTensor>& out) {
    int64_t rng[2];  // exact: a seed may not fit a double
    std::memcpy(rng, in[0].data.data(), sizeof rng);
    const int64_t seed = rng[0], offset = rng[1];
    const bool normal = attrs.s("distribution") == "normal";
    const int64_t stream = attrs.i("stream");
    for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set(i, philox_sample(seed, offset, stream, i, normal));
  });
}

}  // namespace aotrace::ir
