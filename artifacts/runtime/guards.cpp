// Guard evaluation (semantics of ir::Guard::Kind) and the message of a miss (DESIGN §5): the
// inputs as given, then for every variant the guard that rejected them and its Python origin.
#include <cstdio>

#include "bundle_data.h"

namespace aotrace::rt {
namespace {

const char* device_name(DeviceKind d) { return d == DeviceKind::cpu ? "cpu" : "cuda"; }

// The value of a 0-d tensor of `dtype` (int64, float64 or bool: a Python scalar argument).
inline bool scalar_value(const TensorRef& t, DType dtype, double* v) {
  if (!t.shape.empty() || t.dtype != dtype || !t.data) return false;
  switch (dtype) {
    case DType::i64: *v = static_cast<double>(*static_cast<const int64_t*>(t.data)); return true;
    case DType::f64: *v = *static_cast<const double*>(t.data); return true;
    case DType::b8: *v = *static_cast<const uint8_t*>(t.data) != 0; return true;
    default: return false;
  }
}

// Whether guard `g` holds: the rules, once (ir::Guard::Kind). The hit path of every call: no
// strings, no calls.
inline bool guard_passes(const GuardData& g, const std::vector<TensorRef>& inputs) {
  const TensorRef& t = inputs[static_cast<size_t>(g.input)];
  const size_t dim = static_cast<size_t>(g.dim);
  switch (g.kind) {
    case GuardKind::Rank: return t.shape.size() == static_cast<size_t>(g.value);
    case GuardKind::DType: return t.dtype == g.dtype;
    case GuardKind::Device: return t.device == g.device;
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
      if (!scalar_value(t, g.dtype, &v))
        return "a " + std::string(dtype_name(t.dtype)) + " tensor of shape " + shape_str(t.shape);
      char buf[32];
      snprintf(buf, sizeof buf, "%.17g", v);
      return std::string("the value ") + buf;
    }
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
