// Guard::str — a guard as the Python expression it checks, e.g. "L['x'].size()[0] == 8".
#include <charconv>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

std::string dim_text(const std::string& source, int dim) {
  return source + ".size()[" + std::to_string(dim) + "]";
}

}  // namespace

std::string python_scalar_repr(double value, DType dtype) {
  if (dtype == DType::b8) return value != 0 ? "True" : "False";
  if (!is_floating(dtype)) return std::to_string(static_cast<int64_t>(value));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest round trip, as repr
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";  // 3 -> 3.0, as Python writes it
  return s;
}

std::string Guard::str() const {
  const std::string size = dim_text(source, dim);
  switch (kind) {
    case Kind::Rank: return source + ".dim() == " + std::to_string(value);
    case Kind::DType: return source + ".dtype == torch." + std::string(dtype_torch_name(dtype));
    case Kind::Device: return source + ".device == torch.device('" + device.str() + "')";
    case Kind::DimEq: return size + " == " + std::to_string(value);
    case Kind::DimRange:
      return std::to_string(value) + " <= " + size + " <= " + std::to_string(value2);
    case Kind::DimMultiple: return size + " % " + std::to_string(value) + " == 0";
    case Kind::DimsEqual: return size + " == " + dim_text(other_source, other_dim);
    case Kind::Contiguous: return source + ".is_contiguous()";
    case Kind::ValueEq: return source + " == " + python_scalar_repr(scalar, dtype);
    case Kind::PaddingMask:
      return "torch._nested_tensor_from_mask_left_aligned(" + source + ", " + source + ".logical_not()) and not " +
             source + "[:, -1].all()";
  }
  internal_error("Guard::str: bad kind");
}

}  // namespace aotrace::ir
