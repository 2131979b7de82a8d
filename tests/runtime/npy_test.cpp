// .npy round trips for every supported dtype (bfloat16 as 2-byte voids), numpy interop, and refused files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "artifacts/runtime/npy.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
using rt::DType;

class NpyRoundTrip : public ::testing::TestWithParam<DType> {};

TEST_P(NpyRoundTrip, WriteThenReadGivesTheSameTensor) {
  auto dir = fresh_temp_dir(std::string("npy_") + rt::dtype_name(GetParam()));
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3}, {5}, {}, {0, 4}, {1, 2, 3}}) {
    rt::Tensor t(GetParam(), shape);
    auto* bytes = static_cast<uint8_t*>(t.data());
    for (size_t i = 0; i < t.nbytes(); ++i)
      bytes[i] = GetParam() == DType::b8 ? static_cast<uint8_t>(i % 2) : static_cast<uint8_t>(i * 37 + 1);
    std::string path = (dir / "t.npy").string();
    ASSERT_TRUE(rt::npy_write(path, t.ref()).ok());
    auto back = rt::npy_read(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->dtype(), GetParam());
    EXPECT_EQ(back->shape(), shape);
    ASSERT_EQ(back->nbytes(), t.nbytes());
    EXPECT_EQ(std::memcmp(back->data(), t.data(), t.nbytes()), 0);
    EXPECT_EQ(std::filesystem::file_size(path) % 64, t.nbytes() % 64);  // header padded to 64
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, NpyRoundTrip,
                         ::testing::Values(DType::f32, DType::f64, DType::i64, DType::i32,
                                           DType::b8, DType::f16, DType::u8, DType::i8, DType::bf16),
                         [](const auto& info) { return std::string(rt::dtype_name(info.param)); });

TEST(Npy, NumpyReadsOursAndWeReadNumpyVersion2) {
  auto dir = fresh_temp_dir("npy_numpy");
  rt::Tensor t(DType::f32, {2, 3});
  for (int i = 0; i < 6; ++i) t.data_as<float>()[i] = static_cast<float>(i) + 0.5f;
  ASSERT_TRUE(rt::npy_write((dir / "a.npy").string(), t.ref()).ok());
  std::string cmd = std::string(AOTRACE_PYTHON) + " -c \"import numpy as np; a = np.load('" +
                    (dir / "a.npy").string() +
                    "'); assert a.shape == (2, 3) and a.dtype == np.float32 and a[1, 2] == 5.5; "
                    "f = open('" + (dir / "b.npy").string() +
                    "', 'wb'); np.lib.format.write_array(f, (a * 2).astype(np.int64), "
                    "version=(2, 0)); f.close()\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto b = rt::npy_read((dir / "b.npy").string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->dtype(), DType::i64);
  EXPECT_EQ(b->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b->data_as<int64_t>()[5], 11);
}

std::string npy_with_header(const std::string& dict, size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\0';
  s += static_cast<char>(header.size() & 0xff);
  s += static_cast<char>(header.size() >> 8);
  return s + header + std::string(data_bytes, '\0');
}

TEST(Npy, RefusesWhatItCannotRead) {
  auto parse = [](const std::string& bytes) {
    auto r = rt::npy_parse(bytes.data(), bytes.size(), "in.npy");
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(parse("not numpy").find("no NUMPY magic"), std::string::npos);
  EXPECT_NE(parse(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8))
                .find("dtype '>f4'"),
            std::string::npos);
  EXPECT_NE(parse(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16))
                .find("Fortran order"),
            std::string::npos);
  EXPECT_NE(parse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 16))
                .find("data has 16 bytes, shape [3, 2] needs 24"),
            std::string::npos);
  EXPECT_NE(parse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                  "(100000000000, 100000000000), }", 16))
                .find("is too large"),
            std::string::npos);
  auto ok = rt::npy_parse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16).data(),
                          npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16).size(), "x");
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

// bfloat16, which NumPy lacks, as NumPy saves an ml_dtypes.bfloat16 array: 2-byte voids holding
// its bits ('<V2'; '|V2' read too); numpy loads them and their uint16 view is the bits.
TEST(Npy, Bfloat16IsStoredAsItsBitsInTwoByteVoids) {
  auto dir = fresh_temp_dir("npy_bf16");
  rt::Tensor t(DType::bf16, {3});
  const uint16_t bits[3] = {0x3f80, 0xc0a0, 0x7fc0};  // 1, -5, NaN
  std::memcpy(t.data(), bits, sizeof bits);
  ASSERT_TRUE(rt::npy_write((dir / "a.npy").string(), t.ref()).ok());
  std::string cmd = std::string(AOTRACE_PYTHON) + " -c \"import numpy as np; a = np.load('" +
                    (dir / "a.npy").string() +
                    "'); assert a.dtype.itemsize == 2 and a.dtype.kind == 'V', a.dtype; "
                    "assert a.view('<u2').tolist() == [0x3f80, 0xc0a0, 0x7fc0], a.view('<u2')\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* descr : {"<V2", "|V2"}) {
    std::string bytes = npy_with_header(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }", 4);
    auto r = rt::npy_parse(bytes.data(), bytes.size(), "in.npy");
    ASSERT_TRUE(r.ok()) << descr << ": " << r.status().message();
    EXPECT_EQ(r->dtype(), DType::bf16);
  }
  std::string four = npy_with_header("{'descr': '|V4', 'fortran_order': False, 'shape': (2,), }", 8);
  auto r = rt::npy_parse(four.data(), four.size(), "in.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dtype '|V4'"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace aotrace::testing
