// Bundle::selftest: every variant run on its golden inputs, outputs compared with the golden
// outputs the compiler computed with the reference interpreter (DESIGN §5).
#include <cmath>
#include <cstring>

#include "bundle_data.h"
#include "npy.h"

namespace aotrace::rt {
namespace {

double element(const Tensor& t, int64_t i) {
  const void* p = t.data();
  switch (t.dtype()) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f64: return static_cast<const double*>(p)[i];
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::u8: case DType::b8: return static_cast<const uint8_t*>(p)[i];
    case DType::f16: case DType::bf16: break;
  }
  return 0;
}

bool is_float(DType d) { return d == DType::f32 || d == DType::f64 || d == DType::f16 || d == DType::bf16; }

// "" when `got` matches `want`, else where and how it differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return std::string("expected ") + dtype_name(want.dtype()) + " " + shape_str(want.shape()) +
           ", got " + dtype_name(got.dtype()) + " " + shape_str(got.shape());
  if (got.dtype() == DType::f16 || got.dtype() == DType::bf16)  // 16-bit floats: bit-exact
    return std::memcmp(got.data(), want.data(), got.nbytes()) == 0 ? "" : "16-bit floats differ";
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = element(got, i), w = element(want, i);
    bool same = is_float(got.dtype())
                    ? (std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= 1e-5 + 1e-4 * std::fabs(w))
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
    got.emplace_back(v.outputs[i].dtype, v.outputs[i].shape);
    out_refs.push_back(got.back().ref());
  }
  if (Status s = run_variant(b, e, v, in_refs, out_refs); !s.ok())
    return Status(StatusCode::data_loss, "selftest of entry '" + e.name + "' variant " + v.name +
                                             ": " + s.message());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::string why = compare(got[i], want[i]); !why.empty())
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
