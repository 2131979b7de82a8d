// NumPy .npy reader and writer (see npy.h). The header is a Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (5, 784), }
#include "npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace aotrace::rt {
namespace {

const char kMagic[] = "\x93NUMPY";

struct DescrName {
  DType dtype;
  const char* descr;
};
// bfloat16, which NumPy lacks, is stored as its bits in 2-byte void elements, as NumPy saves an
// ml_dtypes.bfloat16 array (np.load gives void; `.view(ml_dtypes.bfloat16)` gets the values).
const DescrName kDescrs[] = {{DType::f32, "<f4"}, {DType::f64, "<f8"}, {DType::f16, "<f2"},
                             {DType::i64, "<i8"}, {DType::i32, "<i4"}, {DType::i8, "|i1"},
                             {DType::u8, "|u1"},  {DType::b8, "|b1"},  {DType::bf16, "<V2"}};

Status bad(const std::string& what, const std::string& why) {
  return Status(StatusCode::invalid_argument, what + " is not a supported .npy file: " + why);
}

// The text after `'key':` in the header dict, whitespace skipped; npos when absent.
size_t value_pos(const std::string& header, const std::string& key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return k;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) return colon;
  return header.find_first_not_of(" ", colon + 1);
}

std::optional<DType> parse_descr(const std::string& d) {
  if (d.size() != 3) return std::nullopt;
  char order = d[0];
  std::string kind = d.substr(1);
  bool one_byte = kind == "i1" || kind == "u1" || kind == "b1" || kind == "V2";  // void: no order
  if (!(order == '<' || order == '=' || (one_byte && order == '|'))) return std::nullopt;
  for (const DescrName& n : kDescrs)
    if (kind == std::string(n.descr + 1)) return n.dtype;
  return std::nullopt;
}

Result<std::vector<int64_t>> parse_shape(const std::string& header, size_t pos) {
  if (pos == std::string::npos || header[pos] != '(') return Status(StatusCode::invalid_argument, "no shape");
  size_t end = header.find(')', pos);
  if (end == std::string::npos) return Status(StatusCode::invalid_argument, "unterminated shape");
  std::vector<int64_t> shape;
  size_t i = pos + 1;
  while (i < end) {
    size_t start = header.find_first_of("0123456789", i);
    if (start == std::string::npos || start >= end) break;
    size_t stop = header.find_first_not_of("0123456789", start);
    if (stop - start > 15) return Status(StatusCode::invalid_argument, "dimension too large");
    shape.push_back(std::stoll(header.substr(start, stop - start)));
    i = stop;
  }
  return shape;
}

}  // namespace

Result<Tensor> npy_parse(const void* bytes, size_t size, const std::string& what) {
  const auto* p = static_cast<const uint8_t*>(bytes);
  if (size < 10 || std::memcmp(p, kMagic, 6) != 0) return bad(what, "no NUMPY magic");
  uint8_t major = p[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = p[8] | (size_t{p[9]} << 8);
    header_start = 10;
  } else if ((major == 2 || major == 3) && size >= 12) {
    header_len = p[8] | (size_t{p[9]} << 8) | (size_t{p[10]} << 16) | (size_t{p[11]} << 24);
    header_start = 12;
  } else {
    return bad(what, "format version " + std::to_string(major));
  }
  if (header_len > size - header_start) return bad(what, "truncated header");
  std::string header(reinterpret_cast<const char*>(p + header_start), header_len);
  size_t d = value_pos(header, "descr");
  size_t d_end = d == std::string::npos ? d : header.find('\'', d + 1);
  if (d == std::string::npos || header[d] != '\'' || d_end == std::string::npos)
    return bad(what, "no descr");
  std::string descr = header.substr(d + 1, d_end - d - 1);
  std::optional<DType> dtype = parse_descr(descr);
  if (!dtype) return bad(what, "dtype '" + descr + "' (supported: <f4 <f8 <f2 <i8 <i4 |i1 |u1 |b1, and <V2 for bfloat16)");
  size_t f = value_pos(header, "fortran_order");
  if (f == std::string::npos || header.compare(f, 5, "False") != 0)
    return bad(what, "Fortran order (save a C-contiguous array)");
  auto shape = parse_shape(header, value_pos(header, "shape"));
  if (!shape.ok()) return bad(what, shape.status().message());
  size_t data_start = header_start + header_len;
  size_t needed = dtype_size(*dtype);
  for (int64_t dim : *shape) {
    if (dim != 0 && needed > (size_t{1} << 62) / static_cast<size_t>(dim))
      return bad(what, "shape " + shape_str(*shape) + " is too large");
    needed *= static_cast<size_t>(dim);
  }
  if (size - data_start != needed)
    return bad(what, "data has " + std::to_string(size - data_start) + " bytes, shape " +
                         shape_str(*shape) + " needs " + std::to_string(needed));
  Tensor t(*dtype, *shape);
  if (t.nbytes() > 0) std::memcpy(t.data(), p + data_start, t.nbytes());
  return t;
}

// With stdio rather than a stream: libstdc++'s filebuf throws when a read fails (a directory
// opens, then its read fails with EISDIR), and nothing in the runtime throws.
Result<Tensor> npy_read(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Status(errno == ENOENT ? StatusCode::not_found : StatusCode::io_error,
                  "'" + path + "' " + (errno == ENOENT ? std::string("does not exist")
                                                        : "cannot be read: " + std::string(std::strerror(errno))));
  if (S_ISDIR(st.st_mode))
    return Status(StatusCode::invalid_argument, "'" + path + "' is a directory, not a .npy file");
  if (!S_ISREG(st.st_mode))
    return Status(StatusCode::invalid_argument, "'" + path + "' is not a regular file, not a .npy file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status(StatusCode::io_error, "cannot open '" + path + "': " + std::strerror(errno));
  std::string bytes;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  const int error = errno;
  std::fclose(f);
  if (failed) return Status(StatusCode::io_error, "cannot read '" + path + "': " + std::strerror(error));
  return npy_parse(bytes.data(), bytes.size(), "'" + path + "'");
}

Result<std::string> npy_serialize(const TensorRef& t) {
  const char* descr = nullptr;
  for (const DescrName& n : kDescrs)
    if (n.dtype == t.dtype) descr = n.descr;
  if (!descr)
    return Status(StatusCode::unsupported, std::string(".npy has no dtype for ") + dtype_name(t.dtype));
  if (!t.is_contiguous())
    return Status(StatusCode::invalid_argument, "npy_serialize needs a contiguous tensor");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  shape += t.shape.size() == 1 ? ",)" : ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  bool v2 = header.size() + 11 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  size_t len = header.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  out.append(static_cast<const char*>(t.data), t.nbytes());
  return out;
}

Status npy_write(const std::string& path, const TensorRef& t) {
  auto bytes = npy_serialize(t);
  if (!bytes.ok()) return bytes.status();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (!out) return Status(StatusCode::io_error, "cannot write " + path);
  return Status::Ok();
}

}  // namespace aotrace::rt
