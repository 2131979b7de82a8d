// Tensors and dtypes of the runtime API.
#include <cstdlib>
#include <cstring>

#include "aotrace_runtime.h"

namespace aotrace::rt {

size_t dtype_size(DType d) {
  switch (d) {
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::f64: case DType::i64: return 8;
    case DType::i8: case DType::u8: case DType::b8: return 1;
  }
  return 0;
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::f64: return "float64";
    case DType::i64: return "int64";
    case DType::i32: return "int32";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::b8: return "bool";
  }
  return "unknown";
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool TensorRef::is_contiguous() const {
  if (strides.empty()) return true;
  if (strides.size() != shape.size()) return false;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

void Tensor::Free::operator()(void* p) const { std::free(p); }

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  nbytes_ = static_cast<size_t>(numel()) * dtype_size(dtype_);
  size_t alloc = (nbytes_ + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  if (p) std::memset(p, 0, alloc);
  data_.reset(p);
}

Result<Tensor> scalar_tensor(DType dtype, double value) {
  Tensor t(dtype, {});
  if (!t.data()) return Status(StatusCode::io_error, "cannot allocate a scalar tensor");
  switch (dtype) {
    case DType::f32: *t.data_as<float>() = static_cast<float>(value); break;
    case DType::f64: *t.data_as<double>() = value; break;
    case DType::i64: *t.data_as<int64_t>() = static_cast<int64_t>(value); break;
    case DType::i32: *t.data_as<int32_t>() = static_cast<int32_t>(value); break;
    case DType::i8: *t.data_as<int8_t>() = static_cast<int8_t>(value); break;
    case DType::u8: *t.data_as<uint8_t>() = static_cast<uint8_t>(value); break;
    case DType::b8: *t.data_as<uint8_t>() = value != 0; break;
    case DType::f16:
    case DType::bf16:
      return Status(StatusCode::invalid_argument,
                    std::string("scalar_tensor: no ") + dtype_name(dtype) + " scalars (Python scalars are int64, float64 or bool)");
  }
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

}  // namespace aotrace::rt
