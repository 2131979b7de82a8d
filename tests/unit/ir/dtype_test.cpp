#include <gtest/gtest.h>

#include <cmath>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32,
                  DType::i8, DType::u8, DType::b8}) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    EXPECT_EQ(parse_dtype(dtype_torch_name(t)), t);
    EXPECT_EQ(parse_dtype("torch." + std::string(dtype_torch_name(t))), t);
  }
  EXPECT_EQ(dtype_name(DType::b8), "bool");
  EXPECT_EQ(dtype_torch_name(DType::bf16), "bfloat16");
}

TEST(DType, Aliases) {
  EXPECT_EQ(parse_dtype("float"), DType::f32);
  EXPECT_EQ(parse_dtype("double"), DType::f64);
  EXPECT_EQ(parse_dtype("long"), DType::i64);
  EXPECT_EQ(parse_dtype("int"), DType::i32);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("torch.long"), DType::i64);
  EXPECT_EQ(parse_dtype("float128"), std::nullopt);
}

TEST(DType, SizesAndCategories) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_size(DType::b8), 1u);
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_FALSE(is_floating(DType::u8));
  EXPECT_TRUE(is_integral(DType::b8));
  EXPECT_FALSE(is_integral(DType::f64));
}

TEST(DType, PromotionFollowsTorch) {
  EXPECT_EQ(promote(DType::f32, DType::f32), DType::f32);
  EXPECT_EQ(promote(DType::f32, DType::f64), DType::f64);
  EXPECT_EQ(promote(DType::f16, DType::f32), DType::f32);
  EXPECT_EQ(promote(DType::f16, DType::bf16), DType::f32);
  EXPECT_EQ(promote(DType::i64, DType::f16), DType::f16);
  EXPECT_EQ(promote(DType::b8, DType::i32), DType::i32);
  EXPECT_EQ(promote(DType::b8, DType::f32), DType::f32);
  EXPECT_EQ(promote(DType::i32, DType::i64), DType::i64);
  EXPECT_EQ(promote(DType::u8, DType::i32), DType::i32);
  EXPECT_EQ(promote(DType::u8, DType::i8), DType::i32);  // torch: i16, which aotrace lacks
  EXPECT_EQ(promote(DType::i8, DType::b8), DType::i8);
}

TEST(Device, Str) {
  EXPECT_EQ(Device{}.str(), "cpu");
  EXPECT_EQ((Device{Device::Kind::cuda, 1}.str()), "cuda:1");
}

TEST(HalfFloats, ConvertExactValues) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f /* smallest normal */,
                  5.9604645e-08f /* smallest subnormal */}) {
    EXPECT_EQ(f16_to_f32(f32_to_f16(v)), v) << v;
  }
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(70000.0f))));
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even gives 1.
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 0.00048828125f)), 1.0f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 3 * 0.00048828125f)), 1.0f + 4 * 0.00048828125f);
}

TEST(HalfFloats, BFloat16) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(3.0f)), 3.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.00390625f)), 1.0f);  // tie (2^-8) rounds to even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.01171875f)), 1.015625f);  // tie rounds up to even
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(HostTensor, GetSetConvert) {
  HostTensor t = HostTensor::zeros(DType::i32, {2, 2});
  EXPECT_EQ(t.numel(), 4);
  EXPECT_EQ(t.data.size(), 16u);
  t.set(1, 3.7);
  EXPECT_EQ(t.get(1), 3.0);
  t.set(2, -3.7);
  EXPECT_EQ(t.get(2), -3.0);
  HostTensor u = HostTensor::zeros(DType::u8, {1});
  u.set(0, -1);
  EXPECT_EQ(u.get(0), 255.0);  // wraps like torch's cast
  HostTensor b = HostTensor::zeros(DType::b8, {1});
  b.set(0, 0.5);
  EXPECT_EQ(b.get(0), 1.0);
  HostTensor h = HostTensor::zeros(DType::f16, {1});
  h.set(0, 0.1);
  EXPECT_NEAR(h.get(0), 0.1, 1e-4);
  EXPECT_NE(h.get(0), 0.1);
  HostTensor f = HostTensor::from_f32({3}, {1, 2, 3});
  EXPECT_EQ(f.get(2), 3.0);
  EXPECT_THROW(f.get(3), InternalError);
  EXPECT_THROW(HostTensor::from_f32({2}, {1, 2, 3}), InternalError);
}

}  // namespace
}  // namespace aotrace::ir
