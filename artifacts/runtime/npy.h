// NumPy .npy files (format versions 1.0, 2.0 and 3.0 read; 1.0 written, 2.0 when the header
// needs it): little-endian, C order, dtypes f4 f8 f2 i8 i4 i1 u1 b1, and bfloat16 as V2 (its bits,
// as NumPy saves an ml_dtypes.bfloat16 array). Used by `aotrace run` and the
// standalone `aotrace_run`.
#pragma once

#include <string>

#include "aotrace_runtime.h"

namespace aotrace::rt {

Result<Tensor> npy_read(const std::string& path);
Result<Tensor> npy_parse(const void* bytes, size_t size, const std::string& what);
Status npy_write(const std::string& path, const TensorRef& tensor);
Result<std::string> npy_serialize(const TensorRef& tensor);

}  // namespace aotrace::rt
