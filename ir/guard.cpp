// Guard::str — a guard as the Python expression it checks, e.g. "L['x'].size()[0] == 8".
#include "ir/ir.h"

namespace aotrace::ir {
namespace {

std::string dim_text(const std::string& source, int dim) {
  return source + ".size()[" + std::to_string(dim) + "]";
}

}  // namespace

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
  }
  internal_error("Guard::str: bad kind");
}

}  // namespace aotrace::ir
