// Guard evaluation (semantics of ir::Guard::Kind) and the message of a miss (DESIGN §5): the
// inputs as given, then for every variant the guard that rejected them and its Python origin.
#include "bundle_data.h"

namespace aotrace::rt {
namespace {

const char* device_name(DeviceKind d) { return d == DeviceKind::cpu ? "cpu" : "cuda"; }

// The size of dim `dim` of `t`, or nullopt (and `got` says why) when the rank is too small.
std::optional<int64_t> dim_size(const TensorRef& t, int dim, std::string* got) {
  if (static_cast<size_t>(dim) < t.shape.size()) return t.shape[static_cast<size_t>(dim)];
  if (got) *got = "rank " + std::to_string(t.shape.size()) + ", no dim " + std::to_string(dim);
  return std::nullopt;
}

bool dim_guard_holds(const GuardData& g, const TensorRef& t, const std::vector<TensorRef>& inputs,
                     std::string* got) {
  std::optional<int64_t> size = dim_size(t, g.dim, got);
  if (!size) return false;
  bool holds = false;
  switch (g.kind) {
    case GuardKind::DimEq: holds = *size == g.value; break;
    case GuardKind::DimRange: holds = g.value <= *size && *size <= g.value2; break;
    case GuardKind::DimMultiple: holds = *size % g.value == 0; break;
    case GuardKind::DimsEqual: {
      std::optional<int64_t> other =
          dim_size(inputs[static_cast<size_t>(g.other_input)], g.other_dim, got);
      if (!other) return false;
      holds = *size == *other;
      if (!holds && got) *got = std::to_string(*size) + " and " + std::to_string(*other);
      return holds;
    }
    default: break;
  }
  if (!holds && got) *got = std::to_string(*size);
  return holds;
}

// guard_holds without the message: the hit path of every call, no strings, no calls.
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
  }
  return false;
}

}  // namespace

size_t first_failed_guard(const std::vector<GuardData>& guards, const std::vector<TensorRef>& inputs) {
  size_t g = 0;
  while (g < guards.size() && guard_passes(guards[g], inputs)) ++g;
  return g;
}

// `got` (may be null) receives what the input had when the guard fails.
bool guard_holds(const GuardData& g, const std::vector<TensorRef>& inputs, std::string* got) {
  const TensorRef& t = inputs[static_cast<size_t>(g.input)];
  switch (g.kind) {
    case GuardKind::Rank:
      if (t.shape.size() == static_cast<size_t>(g.value)) return true;
      if (got) *got = "rank " + std::to_string(t.shape.size());
      return false;
    case GuardKind::DType:
      if (t.dtype == g.dtype) return true;
      if (got) *got = dtype_name(t.dtype);
      return false;
    case GuardKind::Device:
      if (t.device == g.device) return true;
      if (got) *got = device_name(t.device);
      return false;
    case GuardKind::Contiguous:
      if (t.is_contiguous()) return true;
      if (got) *got = "strides " + shape_str(t.strides);
      return false;
    default:
      return dim_guard_holds(g, t, inputs, got);
  }
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
    msg += ": guard " + g.text + " failed (got " + got + ")";
    if (!g.origin.empty()) msg += ", from " + g.origin;
  }
  return Status(StatusCode::invalid_argument, msg);
}

}  // namespace aotrace::rt
