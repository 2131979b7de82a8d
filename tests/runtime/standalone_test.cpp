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

// The runtime/ folder installs a CMake package: find_package(aotrace_runtime) and the C API.
// Called by the test above with its built runtime folder (one build for both checks).
void check_installed_package(const fs::path& root, const fs::path& bundle, const fs::path& build) {
  fs::path prefix = root / "prefix";
  std::string log = (root / "build.log").string();
  std::string gen = " -G Ninja -DCMAKE_MAKE_PROGRAM=" + std::string(RT_NINJA) + " > " + log + " 2>&1";
  ASSERT_EQ(run(std::string(RT_CMAKE) + " --install " + build.string() + " --prefix " + prefix.string() +
                " > " + log + " 2>&1"),
            0)
      << read_bytes(log);

  fs::path app = root / "app";
  fs::create_directories(app);
  write_bytes(app / "CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.16)\nproject(app CXX)\n"
              "find_package(aotrace_runtime REQUIRED)\nadd_executable(app main.cpp)\n"
              "target_link_libraries(app PRIVATE aotrace::runtime)\n");
  write_bytes(app / "main.cpp", R"(#include <aotrace/aotrace_c.h>
#include <cstdio>
int main(int argc, char** argv) {
  aotrace_bundle* b = nullptr;
  if (aotrace_bundle_open("/nonexistent.aot", &b) == 0 || aotrace_last_error()[0] == 0) return 10;
  if (aotrace_bundle_open(argv[1], &b) != 0) { std::printf("%s\n", aotrace_last_error()); return 11; }
  float x[8], y0[8], y1[8];
  for (int i = 0; i < 8; ++i) x[i] = float(i);
  int64_t shape[2] = {2, 4};
  aotrace_tensor in = {0, 2, shape, x}, out[2] = {{0, 2, shape, y0}, {0, 2, shape, y1}};
  if (aotrace_entry_run(b, "forward", &in, 1, out, 2) != 0) { std::printf("%s\n", aotrace_last_error()); return 12; }
  for (int i = 0; i < 8; ++i) if (y0[i] != 2.0f * (i + (i % 4 + 1))) return 13;
  aotrace_bundle_close(b);
  std::printf("app ok\n");
  return 0;
}
)");
  fs::path app_build = root / "app_build";
  ASSERT_EQ(run(std::string(RT_CMAKE) + " -S " + app.string() + " -B " + app_build.string() +
                " -DCMAKE_PREFIX_PATH=" + prefix.string() + gen),
            0)
      << read_bytes(log);
  ASSERT_EQ(run(std::string(RT_CMAKE) + " --build " + app_build.string() + " > " + log + " 2>&1"), 0)
      << read_bytes(log);
  EXPECT_EQ(run((app_build / "app").string() + " " + bundle.string() + " > " + log + " 2>&1"), 0)
      << read_bytes(log);
  EXPECT_NE(read_bytes(log).find("app ok"), std::string::npos) << read_bytes(log);
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
  check_installed_package(root, bundle, build);
}

}  // namespace
}  // namespace aotrace::testing
