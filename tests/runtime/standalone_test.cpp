// The runtime/ folder of a written bundle builds alone with CMake and its aotrace_run runs the
// bundle (DESIGN §5: the runtime is shipped with the bundle, without the compiler).
#include <gtest/gtest.h>

#include <cstdlib>

#include "artifacts/runtime/npy.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;

int run(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Standalone, RuntimeFolderBuildsAndRunsTheBundle) {
  fs::path root = fresh_temp_dir("standalone");
  fs::path bundle = root / "tiny.aot", build = root / "build";
  artifacts::write_bundle(tiny_bundle_spec(), bundle);
  std::string log = (root / "build.log").string();
  std::string configure = std::string(RT_CMAKE) + " -S " + (bundle / "runtime").string() + " -B " +
                          build.string() + " -G Ninja -DCMAKE_MAKE_PROGRAM=" + RT_NINJA + " > " +
                          log + " 2>&1";
  ASSERT_EQ(run(configure), 0) << read_bytes(log);
  ASSERT_EQ(run(std::string(RT_CMAKE) + " --build " + build.string() + " -j 2 > " + log + " 2>&1"), 0)
      << read_bytes(log);

  rt::Tensor x(rt::DType::f32, {2, 4});
  for (int i = 0; i < 8; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  ASSERT_TRUE(rt::npy_write((root / "x.npy").string(), x.ref()).ok());
  fs::create_directories(root / "out");
  std::string runner = (build / "aotrace_run").string() + " " + bundle.string();
  ASSERT_EQ(run(runner + " --input x=" + (root / "x.npy").string() + " --output-dir " +
                (root / "out").string() + " 2> " + log),
            0)
      << read_bytes(log);
  auto out0 = rt::npy_read((root / "out/out0.npy").string());
  ASSERT_TRUE(out0.ok()) << out0.status().message();
  EXPECT_EQ(out0->shape(), (std::vector<int64_t>{2, 4}));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out0->data_as<float>()[i], 2.0f * (i + (i % 4 + 1))) << i;
  EXPECT_TRUE(fs::exists(root / "out/out1.npy"));

  rt::Tensor wrong(rt::DType::f32, {3, 4});
  ASSERT_TRUE(rt::npy_write((root / "wrong.npy").string(), wrong.ref()).ok());
  EXPECT_EQ(run(runner + " --input x=" + (root / "wrong.npy").string() + " --output-dir " +
                (root / "out").string() + " 2> " + log),
            1);
  EXPECT_NE(read_bytes(log).find("guard L['x'].size()[0] == 2 failed (got 3), from model.py:12"),
            std::string::npos)
      << read_bytes(log);
}

}  // namespace
}  // namespace aotrace::testing
