// DType names, sizes and torch's type promotion; Device printing.
#include <array>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

struct DTypeFacts {
  DType dtype;
  std::string_view name;
  std::string_view torch_name;
  size_t size;
};

// In the order of the DType enum.
constexpr std::array<DTypeFacts, 9> kDTypes = {{
    {DType::f32, "f32", "float32", 4},
    {DType::f16, "f16", "float16", 2},
    {DType::bf16, "bf16", "bfloat16", 2},
    {DType::f64, "f64", "float64", 8},
    {DType::i64, "i64", "int64", 8},
    {DType::i32, "i32", "int32", 4},
    {DType::i8, "i8", "int8", 1},
    {DType::u8, "u8", "uint8", 1},
    {DType::b8, "bool", "bool", 1},
}};

const DTypeFacts& facts(DType t) {
  auto i = static_cast<size_t>(t);
  AOT_CHECK(i < kDTypes.size(), "bad dtype " + std::to_string(i));
  return kDTypes[i];
}

// Rank of a dtype inside its category, used by promote(): a higher rank wins.
int int_rank(DType t) {
  switch (t) {
    case DType::b8: return 0;
    case DType::u8: return 1;
    case DType::i8: return 1;
    case DType::i32: return 3;
    case DType::i64: return 4;
    default: internal_error("int_rank of a floating dtype");
  }
}

int float_rank(DType t) {
  switch (t) {
    case DType::f16: return 1;
    case DType::bf16: return 1;
    case DType::f32: return 2;
    case DType::f64: return 3;
    default: internal_error("float_rank of an integral dtype");
  }
}

}  // namespace

std::string_view dtype_name(DType t) { return facts(t).name; }
std::string_view dtype_torch_name(DType t) { return facts(t).torch_name; }
size_t dtype_size(DType t) { return facts(t).size; }

std::optional<DType> parse_dtype(std::string_view text) {
  if (text.starts_with("torch.")) text.remove_prefix(6);
  for (const auto& f : kDTypes)
    if (text == f.name || text == f.torch_name) return f.dtype;
  // torch's aliases.
  if (text == "float") return DType::f32;
  if (text == "double") return DType::f64;
  if (text == "half") return DType::f16;
  if (text == "long") return DType::i64;
  if (text == "int") return DType::i32;
  if (text == "b8") return DType::b8;
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}

bool is_integral(DType t) { return !is_floating(t); }

// torch.result_type for two tensors of the same dimension category:
//   bool < integers < floating point; the operand of the higher category decides.
//   Floats: f64 > f32 > {f16, bf16}; f16 with bf16 gives f32 (as torch does).
//   Integers: i64 > i32 > {i8, u8}; u8 with i8 gives i16 in torch, which aotrace has not,
//   so it gives i32 (the smallest aotrace type holding both ranges).
DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_floating(a) != is_floating(b)) return is_floating(a) ? a : b;
  if (is_floating(a)) {
    int ra = float_rank(a), rb = float_rank(b);
    if (ra == rb) return DType::f32;  // f16 with bf16
    return ra > rb ? a : b;
  }
  int ra = int_rank(a), rb = int_rank(b);
  if (ra == rb) return DType::i32;  // u8 with i8
  return ra > rb ? a : b;
}

std::string Device::str() const {
  if (kind == Kind::cpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

}  // namespace aotrace::ir
