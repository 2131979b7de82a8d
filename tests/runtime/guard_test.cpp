// Guard misses: the message names the input, its shape and dtype, and for every variant the
// guard that rejected it with its origin (DESIGN §5).
#include <gtest/gtest.h>

#include "artifacts/runtime/aotrace_runtime.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
using rt::DType;
using rt::TensorRef;

class GuardMiss : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = fresh_temp_dir("guards") / "tiny.aot";
    artifacts::write_bundle(tiny_bundle_spec(), dir);
    auto b = rt::Bundle::open(dir.string());
    ASSERT_TRUE(b.ok()) << b.status().message();
    bundle_ = new rt::Bundle(std::move(*b));
  }
  static void TearDownTestSuite() { delete bundle_; }

  std::string miss(DType dtype, std::vector<int64_t> shape) {
    auto entry = bundle_->entry("forward");
    EXPECT_TRUE(entry.ok());
    data_.assign(64, 0);
    auto r = entry->run({TensorRef{dtype, std::move(shape), data_.data()}});
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), rt::StatusCode::invalid_argument);
    return r.status().message();
  }

  static rt::Bundle* bundle_;
  std::vector<double> data_;
};
rt::Bundle* GuardMiss::bundle_ = nullptr;

TEST_F(GuardMiss, WrongBatchNamesInputDimValueAndEveryVariant) {
  EXPECT_EQ(miss(DType::f32, {5, 4}),
            "no variant of entry 'forward' accepts these inputs: input 'x' has shape [5, 4] "
            "(dtype float32)\n"
            "  variant v0 (profile batch=1): guard L['x'].size()[0] == 1 failed (got 5), from "
            "model.py:12\n"
            "  variant v1 (profile batch=2): guard L['x'].size()[0] == 2 failed (got 5), from "
            "model.py:12");
}

TEST_F(GuardMiss, WrongDtype) {
  std::string m = miss(DType::f64, {1, 4});
  EXPECT_NE(m.find("input 'x' has shape [1, 4] (dtype float64)"), std::string::npos) << m;
  EXPECT_NE(m.find("variant v0 (profile batch=1): guard L['x'].dtype == torch.float32 failed "
                   "(got float64)"),
            std::string::npos) << m;
  EXPECT_NE(m.find("variant v1 (profile batch=2): guard L['x'].dtype"), std::string::npos) << m;
}

TEST_F(GuardMiss, WrongRank) {
  std::string m = miss(DType::f32, {4});
  EXPECT_NE(m.find("guard L['x'].dim() == 2 failed (got rank 1), from model.py:3"),
            std::string::npos) << m;
}

TEST_F(GuardMiss, WrongInnerDimPointsAtItsOwnGuard) {
  std::string m = miss(DType::f32, {2, 3});
  EXPECT_NE(m.find("variant v0 (profile batch=1): guard L['x'].size()[0] == 1 failed (got 2)"),
            std::string::npos) << m;
  EXPECT_NE(m.find("variant v1 (profile batch=2): guard L['x'].size()[1] == 4 failed (got 3), "
                   "from model.py:7"),
            std::string::npos) << m;
}

TEST_F(GuardMiss, WrongInputCount) {
  auto entry = bundle_->entry("forward");
  ASSERT_TRUE(entry.ok());
  auto r = entry->select({});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "entry 'forward' takes 1 inputs, got 0");
}

TEST_F(GuardMiss, StridedInputIsRefusedEvenWithoutAContiguityGuard) {
  auto entry = bundle_->entry("forward");
  ASSERT_TRUE(entry.ok());
  std::vector<float> x(8);
  auto r = entry->run({TensorRef{DType::f32, {1, 4}, x.data(), {8, 2}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("contiguous cpu float32 tensor"), std::string::npos);
}

TEST(Guards, ContiguityDeviceRangeMultipleAndDimsEqual) {
  artifacts::BundleSpec spec = tiny_bundle_spec();
  spec.entries[0].variants.resize(1);
  auto& guards = spec.entries[0].variants[0].guards;
  ir::Guard g;
  g.source = "L['x']";
  g.kind = ir::Guard::Kind::Device;
  guards.push_back(g);
  g.kind = ir::Guard::Kind::Contiguous;
  guards.push_back(g);
  g.kind = ir::Guard::Kind::DimRange, g.dim = 1, g.value = 2, g.value2 = 4;
  guards.push_back(g);
  g.kind = ir::Guard::Kind::DimMultiple, g.value = 2;
  guards.push_back(g);
  g.kind = ir::Guard::Kind::DimsEqual, g.dim = 1, g.other_input = 0, g.other_dim = 1;
  g.other_source = "L['x']";
  guards.push_back(g);
  guards.erase(guards.begin() + 2, guards.begin() + 4);  // the DimEq guards: dims via the others
  auto dir = fresh_temp_dir("more_guards") / "m.aot";
  artifacts::write_bundle(spec, dir);
  auto b = rt::Bundle::open(dir.string());
  ASSERT_TRUE(b.ok()) << b.status().message();
  auto entry = b->entry("forward");
  ASSERT_TRUE(entry.ok());
  std::vector<float> x(8);
  auto cuda = TensorRef{DType::f32, {1, 4}, x.data(), {}, rt::DeviceKind::cuda};
  auto r = entry->select({cuda});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("guard L['x'].device == torch.device('cpu') failed (got cuda)"),
            std::string::npos) << r.status().message();
  r = entry->select({TensorRef{DType::f32, {1, 4}, x.data(), {8, 2}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("L['x'].is_contiguous() failed (got strides [8, 2])"),
            std::string::npos) << r.status().message();
  r = entry->select({TensorRef{DType::f32, {1, 6}, x.data()}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("2 <= L['x'].size()[1] <= 4 failed (got 6)"),
            std::string::npos) << r.status().message();
  r = entry->select({TensorRef{DType::f32, {1, 3}, x.data()}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("L['x'].size()[1] % 2 == 0 failed (got 3)"),
            std::string::npos) << r.status().message();
  r = entry->select({TensorRef{DType::f32, {1, 4}, x.data()}});
  EXPECT_TRUE(r.ok()) << r.status().message();
}

}  // namespace
}  // namespace aotrace::testing
