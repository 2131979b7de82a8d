// The generator of OpKind::Random (ir::philox4x32, ir::philox_sample): Random123's published
// known answers, the moments of both distributions, and independence of seeds, offsets and
// streams.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

TEST(Philox, KnownAnswersOfRandom123) {
  uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
  philox4x32(c0, k0);
  EXPECT_EQ(c0[0], 0x6627e8d5u);
  EXPECT_EQ(c0[1], 0xe169c58du);
  EXPECT_EQ(c0[2], 0xbc57ac4cu);
  EXPECT_EQ(c0[3], 0x9b00dbd8u);
  uint32_t c1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, k1[2] = {0xffffffffu, 0xffffffffu};
  philox4x32(c1, k1);
  EXPECT_EQ(c1[0], 0x408f276du);
  EXPECT_EQ(c1[1], 0x41c83b0eu);
  EXPECT_EQ(c1[2], 0xa20bc7c6u);
  EXPECT_EQ(c1[3], 0x6d5451fdu);
}

TEST(Philox, UniformAndNormalHaveTheirMoments) {
  constexpr int kN = 200000;
  double su = 0, su2 = 0, sn = 0, sn2 = 0, lo = 1, hi = 0;
  for (int i = 0; i < kN; ++i) {
    const double u = philox_sample(42, 3, 1, i, false);
    const double z = philox_sample(42, 3, 2, i, true);
    su += u, su2 += u * u, sn += z, sn2 += z * z;
    lo = std::min(lo, u), hi = std::max(hi, u);
  }
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(su / kN, 0.5, 0.005);
  EXPECT_NEAR(su2 / kN - (su / kN) * (su / kN), 1.0 / 12, 0.002);
  EXPECT_NEAR(sn / kN, 0.0, 0.01);
  EXPECT_NEAR(sn2 / kN - (sn / kN) * (sn / kN), 1.0, 0.02);
}

TEST(Philox, SeedsOffsetsStreamsAndIndicesDrawDifferentNumbers) {
  std::set<double> seen;
  for (int64_t seed : {int64_t{0}, int64_t{1}, int64_t{1} << 40})
    for (int64_t offset : {0, 1})
      for (int64_t stream : {0, 5})
        for (int64_t index : {int64_t{0}, int64_t{1}, int64_t{1} << 33}) seen.insert(philox_sample(seed, offset, stream, index, false));
  EXPECT_EQ(seen.size(), 3u * 2 * 2 * 3);
  EXPECT_EQ(philox_sample(7, 2, 3, 11, true), philox_sample(7, 2, 3, 11, true));  // a pure function
}

}  // namespace
}  // namespace aotrace::ir
