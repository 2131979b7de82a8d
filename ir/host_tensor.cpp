// HostTensor: a contiguous tensor in host memory, read and written through double; and the
// f16/bf16 conversions it uses.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // zero
  } else {        // subnormal: value = mant * 2^-24
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  uint32_t abs = f & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;   // nan
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds to >= 65520: inf
  if (abs < 0x38800000) {                       // below the smallest normal half: subnormal
    // value / 2^-24, rounded to nearest even.
    float scaled = std::ldexp(std::fabs(value), 24);
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);  // round mantissa to 10 bits, ties even
  return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_bf16(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((f >> 16) | 0x40);  // nan
  f += 0x7fff + ((f >> 16) & 1);
  return static_cast<uint16_t>(f >> 16);
}

namespace {

template <typename T>
T load(const Bytes& data, int64_t i) {
  T v;
  std::memcpy(&v, data.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void store(Bytes& data, int64_t i, T v) {
  std::memcpy(data.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

// double -> integer as C++ would truncate it, without undefined behaviour: NaN gives 0, values
// outside int64 saturate; narrower integer types then wrap (as torch's casts do).
int64_t to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

HostTensor HostTensor::zeros(DType dtype, std::vector<int64_t> shape) {
  HostTensor t{dtype, std::move(shape), {}};
  for (auto d : t.shape) AOT_CHECK(d >= 0, "negative dim in HostTensor::zeros");
  t.data.assign(static_cast<size_t>(t.numel()) * dtype_size(dtype), 0);
  return t;
}

HostTensor HostTensor::from_f32(std::vector<int64_t> shape, const std::vector<float>& values) {
  HostTensor t = zeros(DType::f32, std::move(shape));
  AOT_CHECK(static_cast<int64_t>(values.size()) == t.numel(),
            "from_f32: " + std::to_string(values.size()) + " values for " +
                std::to_string(t.numel()) + " elements");
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

double HostTensor::get(int64_t i) const {
  AOT_CHECK(i >= 0 && i < numel(), "HostTensor::get index out of range");
  switch (dtype) {
    case DType::f32: return load<float>(data, i);
    case DType::f16: return f16_to_f32(load<uint16_t>(data, i));
    case DType::bf16: return bf16_to_f32(load<uint16_t>(data, i));
    case DType::f64: return load<double>(data, i);
    case DType::i64: return static_cast<double>(load<int64_t>(data, i));
    case DType::i32: return load<int32_t>(data, i);
    case DType::i8: return load<int8_t>(data, i);
    case DType::u8: return load<uint8_t>(data, i);
    case DType::b8: return load<uint8_t>(data, i) != 0 ? 1.0 : 0.0;
  }
  internal_error("HostTensor::get: bad dtype");
}

void HostTensor::set(int64_t i, double v) {
  AOT_CHECK(i >= 0 && i < numel(), "HostTensor::set index out of range");
  switch (dtype) {
    case DType::f32: return store<float>(data, i, static_cast<float>(v));
    case DType::f16: return store<uint16_t>(data, i, f32_to_f16(static_cast<float>(v)));
    case DType::bf16: return store<uint16_t>(data, i, f32_to_bf16(static_cast<float>(v)));
    case DType::f64: return store<double>(data, i, v);
    case DType::i64: return store<int64_t>(data, i, to_int64(v));
    case DType::i32: return store<int32_t>(data, i, static_cast<int32_t>(to_int64(v)));
    case DType::i8: return store<int8_t>(data, i, static_cast<int8_t>(to_int64(v)));
    case DType::u8: return store<uint8_t>(data, i, static_cast<uint8_t>(to_int64(v)));
    case DType::b8: return store<uint8_t>(data, i, v != 0 ? 1 : 0);
  }
  internal_error("HostTensor::set: bad dtype");
}

TensorType host_type(const HostTensor& t) {
  return TensorType{t.dtype, Device{}, Shape(t.shape.begin(), t.shape.end())};
}

}  // namespace aotrace::ir
