// Bundle::selftest: every variant run on its golden inputs, outputs compared with the golden
// outputs the compiler recorded from torch eager (DESIGN §5; older bundles: from its reference
// interpreter).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "bundle_data.h"
#include "npy.h"

namespace aotrace::rt {
namespace {

float f16_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(man), -24);  // subnormal
  uint32_t bits = sign | (exp == 31 ? 0x7f800000u | (man << 13) : ((exp + 112) << 23) | (man << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double element(const Tensor& t, int64_t i) {
  const void* p = t.data();
  switch (t.dtype()) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f64: return static_cast<const double*>(p)[i];
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::u8: case DType::b8: return static_cast<const uint8_t*>(p)[i];
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
  return 0;
}

bool is_float(DType d) { return d == DType::f32 || d == DType::f64 || d == DType::f16 || d == DType::bf16; }

// How far a kernel's float output may be from eager's, which sums in another order: relative to
// the element, plus absolute relative to the tensor's largest magnitude (rounding errors of a
// deep network scale with its activations, not with each output), at the type's precision.
struct Tolerance {
  double rtol, atol;
};
// `cuda_math`: of GPU kernels whose matmuls and convs round their operands to TF32 or f16
// (10-bit mantissa: 2^-11 relative per operand, compounding over a network's layers) or bf16
// (7-bit: 2^-8), for their f32 outputs; "" (f32 FMAs) or the CPU: none.
Tolerance tolerance(DType d, const std::string& cuda_math) {
  if (d == DType::f16) return {1e-2, 1e-3};
  if (d == DType::bf16) return {5e-2, 1e-2};
  if (d == DType::f32 && (cuda_math == "tf32" || cuda_math == "f16")) return {1e-2, 5e-3};
  if (d == DType::f32 && cuda_math == "bf16") return {2e-2, 2e-2};
  return {1e-3, 1e-4};  // f32: kernels sum in blocks (GEMM, vectorised reductions), eager too
}

// "" when `got` matches `want`, else where and how it differs.
std::string compare(const Tensor& got, const Tensor& want, const std::string& cuda_math) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return std::string("expected ") + dtype_name(want.dtype()) + " " + shape_str(want.shape()) +
           ", got " + dtype_name(got.dtype()) + " " + shape_str(got.shape());
  const Tolerance tol = tolerance(want.dtype(), cuda_math);
  double scale = 1;  // max(1, largest finite |want|)
  for (int64_t i = 0; i < want.numel(); ++i)
    if (double w = std::fabs(element(want, i)); std::isfinite(w)) scale = std::max(scale, w);
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = element(got, i), w = element(want, i);
    bool same = is_float(got.dtype())
                    ? (std::isnan(w) ? std::isnan(g)
                       : std::isinf(w) ? g == w
                                       : std::fabs(g - w) <= tol.atol * scale + tol.rtol * std::fabs(w))
                    : g == w;
    if (!same)
      return "element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " +
             std::to_string(w);
  }
  return "";
}

Status check_pair(const BundleData& b, const EntryData& e, const VariantData& v,
                  const GoldenData& g) {
  std::vector<Tensor> inputs, want, got;
  std::vector<TensorRef> in_refs, out_refs;
  for (const std::string& p : g.inputs) {
    auto t = npy_read(b.dir + "/" + p);
    if (!t.ok()) return Status(StatusCode::data_loss, "golden input " + p + ": " + t.status().message());
    inputs.push_back(std::move(*t));
    in_refs.push_back(inputs.back().ref());
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    auto t = npy_read(b.dir + "/" + g.outputs[i]);
    if (!t.ok())
      return Status(StatusCode::data_loss, "golden output " + g.outputs[i] + ": " + t.status().message());
    want.push_back(std::move(*t));
  }
  // The outputs' shapes for these inputs (dynamic dims from theirs).
  std::vector<int64_t> symbols(v.symbols.size());
  for (const SymbolData& s : v.symbols)
    if (s.input >= in_refs.size() || s.dim >= in_refs[s.input].shape.size())
      return Status(StatusCode::data_loss, "golden inputs of variant " + v.name + " lack dim " + s.name);
  bind_symbols(v, in_refs, symbols.data());
  for (size_t i = 0; i < v.outputs.size() && i < g.outputs.size(); ++i) {
    got.emplace_back(v.outputs[i].dtype, concrete_shape(v, v.raw_output_shapes[i], symbols.data()));
    out_refs.push_back(got.back().ref());
  }
  // A variant that draws random numbers: its golden generator state follows the inputs.
  const int64_t* rng = nullptr;
  if (v.draws_random) {
    if (inputs.size() != v.inputs.size() + 1 || inputs.back().numel() != 2 || inputs.back().dtype() != DType::i64)
      return Status(StatusCode::data_loss, "golden pair of variant " + v.name + " has no generator state");
    rng = inputs.back().data_as<int64_t>();
    in_refs.pop_back();
  }
  if (Status s = run_variant(b, e, v, in_refs, out_refs, rng); !s.ok())
    return Status(StatusCode::data_loss, "selftest of entry '" + e.name + "' variant " + v.name +
                                             ": " + s.message());
  for (int32_t i : v.updated_inputs) got.push_back(std::move(inputs[static_cast<size_t>(i)]));
  for (size_t i = 0; i < got.size(); ++i)
    if (std::string why = compare(got[i], want[i], b.cuda != nullptr ? b.cuda_math : std::string()); !why.empty())
      return Status(StatusCode::data_loss, "selftest of entry '" + e.name + "' variant " + v.name +
                                               " failed: output " + std::to_string(i) + " (" +
                                               g.outputs[i] + "): " + why);
  return Status::Ok();
}

}  // namespace

Status Bundle::selftest(size_t* checked) const {
  size_t n = 0;
  for (const EntryData& e : data_->entries)
    for (const VariantData& v : e.variants)
      for (const GoldenData& g : v.golden) {
        if (Status s = check_pair(*data_, e, v, g); !s.ok()) return s;
        ++n;
      }
  if (checked) *checked = n;
  return Status::Ok();
}

}  // namespace aotrace::rt
