// Guard evaluation (semantics of ir::Guard::Kind) and the message of a miss (DESIGN §5): the
// inputs as given, then for every variant the guard that rejected them and its Python origin.
#include <cstdio>
#include <cstring>

#include "bundle_data.h"

namespace aotrace::rt {
namespace {

const char* device_name(DeviceKind d) { return d == DeviceKind::cpu ? "cpu" : "cuda"; }

// The value of a 0-d tensor of `dtype` (int64, float64 or bool: a Python scalar argument).
inline bool scalar_value(const TensorRef& t, DType dtype, double* v) {
  if (!t.shape.empty() || t.dtype != dtype || !t.data || t.device != DeviceKind::cpu) return false;
  switch (dtype) {
    case DType::i64: *v = static_cast<double>(*static_cast<const int64_t*>(t.data)); return true;
    case DType::f64: *v = *static_cast<const double*>(t.data); return true;
    case DType::b8: *v = *static_cast<const uint8_t*>(t.data) != 0; return true;
    default: return false;
  }
}

// Whether element `i` (in elements) of `data` is nonzero: a padded position of a key-padding
// mask (torch reads masks with logical_not; a float's sign bit alone is zero, NaN is nonzero).
inline bool mask_set(const uint8_t* data, size_t elem_size, int64_t i) {
  const uint8_t* p = data + static_cast<size_t>(i) * elem_size;
  switch (elem_size) {
    case 1: return *p != 0;
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return (v & 0x7fffu) != 0; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return (v & 0x7fffffffu) != 0; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return (v & 0x7fffffffffffffffull) != 0; }
  }
}

// PaddingMask: "" when `t` is a [B, T] mask whose rows hold their padding at their end and some
// row has none; else what breaks it ("row 1 has padding at 3 and a token at 5").
std::string padding_mask_problem(const TensorRef& t) {
  const bool maskable = t.dtype == DType::b8 || t.dtype == DType::u8 || t.dtype == DType::f32 ||
                        t.dtype == DType::f64 || t.dtype == DType::f16 || t.dtype == DType::bf16;
  if (t.shape.size() != 2 || !maskable) return "not a [B, T] bool or float mask";
  if (t.device != DeviceKind::cpu) return "in GPU memory: the runtime checks a padding mask on the host, pass it in host memory";
  const int64_t rows = t.shape[0], cols = t.shape[1];
  if (rows * cols > 0 && !t.data) return "no data";
  const int64_t row_stride = t.strides.size() == 2 ? t.strides[0] : cols;
  const int64_t col_stride = t.strides.size() == 2 ? t.strides[1] : 1;
  const auto* data = static_cast<const uint8_t*>(t.data);
  const size_t size = dtype_size(t.dtype);
  bool full_row = cols == 0 && rows > 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t first_pad = -1;
    for (int64_t c = 0; c < cols; ++c) {
      const bool pad = mask_set(data, size, r * row_stride + c * col_stride);
      if (pad && first_pad < 0) first_pad = c;
      if (!pad && first_pad >= 0)
        return "row " + std::to_string(r) + " has padding at " + std::to_string(first_pad) + " and a token at " +
               std::to_string(c) + ": it is not left-aligned";
    }
    if (first_pad < 0) full_row = true;
  }
  if (!full_row) return "every row ends in padding: torch's nested-tensor path would return a shorter sequence";
  return "";
}

// Whether guard `g` holds: the rules, once (ir::Guard::Kind). The hit path of every call: no
// strings, no calls.
inline bool guard_passes(const GuardData& g, const std::vector<TensorRef>& inputs) {
  const TensorRef& t = inputs[static_cast<size_t>(g.input)];
  const size_t dim = static_cast<size_t>(g.dim);
  switch (g.kind) {
    case GuardKind::Rank: return t.shape.size() == static_cast<size_t>(g.value);
    case GuardKind::DType: return t.dtype == g.dtype;
    case GuardKind::Device: return t.device == g.device || g.any_device;
    case GuardKind::Contiguous: return t.is_contiguous();
    case GuardKind::DimEq: return dim < t.shape.size() && t.shape[dim] == g.value;
    case GuardKind::DimRange:
      return dim < t.shape.size() && g.value <= t.shape[dim] && t.shape[dim] <= g.value2;
    case GuardKind::DimMultiple: return dim < t.shape.size() && t.shape[dim] % g.value == 0;
    case GuardKind::DimsEqual: {
      const TensorRef& o = inputs[static_cast<size_t>(g.other_input)];
      const size_t other_dim = static_cast<size_t>(g.other_dim);
      return dim < t.shape.size() && other_dim < o.shape.size() && t.shape[dim] == o.shape[other_dim];
    }
    case GuardKind::ValueEq: {
      double v = 0;
      return scalar_value(t, g.dtype, &v) && v == g.scalar;
    }
    case GuardKind::PaddingMask: return padding_mask_problem(t).empty();
  }
  return false;
}

// Dim `dim` of `t` as the message shows it: its size, or why there is none.
std::string dim_text(const TensorRef& t, int dim) {
  if (static_cast<size_t>(dim) < t.shape.size()) return std::to_string(t.shape[static_cast<size_t>(dim)]);
  return "rank " + std::to_string(t.shape.size()) + ", no dim " + std::to_string(dim);
}

// What the input had that guard `g` looks at, for the message of a miss.
std::string what_it_had(const GuardData& g, const std::vector<TensorRef>& inputs) {
  const TensorRef& t = inputs[static_cast<size_t>(g.input)];
  switch (g.kind) {
    case GuardKind::Rank: return "rank " + std::to_string(t.shape.size());
    case GuardKind::DType: return dtype_name(t.dtype);
    case GuardKind::Device: return device_name(t.device);
    case GuardKind::Contiguous: return "strides " + shape_str(t.strides);
    case GuardKind::DimsEqual: {
      const TensorRef& o = inputs[static_cast<size_t>(g.other_input)];
      if (static_cast<size_t>(g.dim) >= t.shape.size()) return dim_text(t, g.dim);
      if (static_cast<size_t>(g.other_dim) >= o.shape.size()) return dim_text(o, g.other_dim);
      return dim_text(t, g.dim) + " and " + dim_text(o, g.other_dim);
    }
    case GuardKind::ValueEq: {
      double v = 0;
      if (t.device != DeviceKind::cpu) return "a tensor in GPU memory (pass a scalar input in host memory)";
      if (!scalar_value(t, g.dtype, &v))
        return "a " + std::string(dtype_name(t.dtype)) + " tensor of shape " + shape_str(t.shape);
      char buf[32];
      snprintf(buf, sizeof buf, "%.17g", v);
      return std::string("the value ") + buf;
    }
    case GuardKind::PaddingMask: return padding_mask_problem(t);
    default: return dim_text(t, g.dim);
  }
}

}  // namespace

size_t first_failed_guard(const std::vector<GuardData>& guards, const std::vector<TensorRef>& inputs) {
  size_t g = 0;
  while (g < guards.size() && guard_passes(guards[g], inputs)) ++g;
  return g;
}

// `got` (may be null) receives what the input had when the guard fails.
bool guard_holds(const GuardData& g, const std::vector<TensorRef>& inputs, std::string* got) {
  if (guard_passes(g, inputs)) return true;
  if (got) *got = what_it_had(g, inputs);
  return false;
}

Status no_variant_status(const EntryData& e, const std::vector<TensorRef>& inputs,
                         const std::vector<size_t>& failed_guard) {
  std::string msg = "no variant of entry '" + e.name + "' accepts these inputs: ";
  const std::vector<TensorInfo>& infos = e.variants.front().inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = i < infos.size() ? infos[i].name : std::to_string(i);
    msg += (i ? ", " : "") + std::string("input '") + name + "' has shape " +
           shape_str(inputs[i].shape) + " (dtype " + dtype_name(inputs[i].dtype) + ")";
  }
  for (size_t v = 0; v < e.variants.size(); ++v) {
    const VariantData& variant = e.variants[v];
    const GuardData& g = variant.guards[failed_guard[v]];
    std::string got;
    (void)guard_holds(g, inputs, &got);
    msg += "\n  variant " + variant.name;
    if (!variant.profiles.empty()) {
      msg += variant.profiles.size() == 1 ? " (profile " : " (profiles ";
      for (size_t p = 0; p < variant.profiles.size(); ++p)
        msg += (p ? ", " : "") + variant.profiles[p];
      msg += ")";
    }
    if (!g.symbol.empty() && g.kind == GuardKind::DimRange) {
      // A dynamic dim out of its range: "seq = 200 is outside [32, 128] declared at enc.yaml:9:10".
      msg += ": " + g.symbol + " = " + got + " is outside [" + std::to_string(g.value) + ", " +
             std::to_string(g.value2) + "]";
      if (!g.origin.empty()) msg += " declared at " + g.origin;
      msg += " (guard " + g.text + ")";
      continue;
    }
    if (!g.symbol.empty() && g.kind == GuardKind::DimMultiple) {
      msg += ": " + g.symbol + " = " + got + " is not a multiple of " + std::to_string(g.value);
      if (!g.origin.empty()) msg += " declared at " + g.origin;
      msg += " (guard " + g.text + ")";
      continue;
    }
    msg += ": guard " + g.text + " failed (got " + got + ")";
    if (!g.origin.empty()) msg += ", from " + g.origin;
  }
  return Status(StatusCode::invalid_argument, msg);
}

}  // namespace aotrace::rt
