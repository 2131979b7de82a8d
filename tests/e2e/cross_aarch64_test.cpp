// `--triple aarch64-linux-gnu` end to end (issue 5): compile examples/mlp for aarch64 and for this
// x86-64 machine; cross-build the aarch64 bundle's own runtime/ folder (its CMakeLists.txt, with
// aarch64-linux-gnu-g++); run its aotrace_run under qemu-aarch64 on the same .npy inputs as
// `aotrace run` of the x86-64 bundle, and compare (atol 1e-5, rtol 1e-4); `--selftest` under qemu,
// also of a bundle of Winograd convs (F(4×4) fused and apart, F(2×2)).
// Needs Debian's qemu-user and g++-aarch64-linux-gnu, which `make deps` installs and CMake checks
// when it configures (-DAOTRACE_CROSS_TESTS=OFF leaves this test out); removed after that, the
// tests fail, saying so, rather than skip.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/npy.h"
#include "tests/support/subprocess.h"

namespace {
namespace fs = std::filesystem;
using aotrace::test::quote;
using aotrace::test::run_command;
namespace rt = aotrace::rt;

constexpr double kAtol = 1e-5, kRtol = 1e-4;
constexpr const char* kCrossCompiler = AOT_CROSS_CXX;  // found when CMake configured
constexpr const char* kQemu = AOT_QEMU_AARCH64;
constexpr const char* kSysroot = "/usr/aarch64-linux-gnu";  // libc, libstdc++, libm for aarch64

std::string cli() { return quote(AOTRACE_CLI); }
std::string mlp_yaml() { return quote(std::string(AOTRACE_SOURCE_DIR) + "/examples/mlp/mlp.yaml"); }

// "" when `tool` is on PATH, else a message saying how to get it.
std::string missing_tool(const std::string& tool, const std::string& package) {
  if (run_command("command -v " + tool + " >/dev/null").exit_code == 0) return "";
  return tool + " is not installed (Debian package " + package + "; `make deps` installs it)\n";
}

class CrossAarch64 : public ::testing::Test {
 protected:
  // One set-up for the suite: the two compiles and the cross build, which dominate the time.
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("aotrace_cross_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    missing_ = missing_tool(kCrossCompiler, "g++-aarch64-linux-gnu") + missing_tool(kQemu, "qemu-user") +
               (fs::exists(fs::path(kSysroot) / "lib/libstdc++.so.6")
                    ? ""
                    : std::string(kSysroot) + "/lib/libstdc++.so.6 is missing (g++-aarch64-linux-gnu)\n");
    if (!missing_.empty()) return;
    auto arm = run_command(cli() + " compile " + mlp_yaml() + " --triple aarch64-linux-gnu -o " +
                           quote(arm_bundle().string()));
    if (arm.exit_code != 0) {
      setup_error_ = "compile --triple aarch64-linux-gnu failed:\n" + arm.output;
      return;
    }
    // The x86-64 compile runs while the aarch64 runtime builds.
    aotrace::test::CommandResult x86;
    std::thread compile_x86([&] {
      x86 = run_command(cli() + " compile " + mlp_yaml() + " -o " + quote(x86_bundle().string()));
    });
    auto build = cross_build_runtime();
    compile_x86.join();
    if (x86.exit_code != 0) setup_error_ += "compile for x86-64 failed:\n" + x86.output;
    if (build.exit_code != 0) setup_error_ += "cross-building the bundle's runtime/ failed:\n" + build.output;
  }

  // The bundle's runtime/ folder with its own CMakeLists.txt, for aarch64: only aotrace_run
  // (and the static runtime it links), at -O1 to keep the test quick.
  static aotrace::test::CommandResult cross_build_runtime() {
    const std::string build = quote((root_ / "rt-aarch64").string());
    auto configure = run_command(
        std::string(RT_CMAKE) + " -S " + quote((arm_bundle() / "runtime").string()) + " -B " + build +
        " -G Ninja -DCMAKE_MAKE_PROGRAM=" + RT_NINJA +
        " -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_CXX_COMPILER=" + kCrossCompiler +
        " -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1");
    if (configure.exit_code != 0) return configure;
    return run_command(std::string(RT_CMAKE) + " --build " + build + " --target aotrace_run -j 2");
  }

  void SetUp() override {
    ASSERT_TRUE(missing_.empty()) << "cannot run aarch64 bundles here:\n" << missing_;
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  static fs::path arm_bundle() { return root_ / "arm" / "mlp.aot"; }
  static fs::path x86_bundle() { return root_ / "x86" / "mlp.aot"; }
  // aotrace_run for aarch64 under qemu, with the aarch64 libc/libstdc++/libm of the sysroot.
  static std::string qemu_run() {
    return std::string(kQemu) + " -L " + kSysroot + " " + quote((root_ / "rt-aarch64" / "aotrace_run").string());
  }

  static inline fs::path root_;
  static inline std::string missing_, setup_error_;
};

// The kernels really are aarch64 code: ELF e_machine 183 (EM_AARCH64).
TEST_F(CrossAarch64, BundleHoldsAarch64Kernels) {
  fs::path so = arm_bundle() / "cpu" / "aarch64-unknown-linux-gnu.so";
  ASSERT_TRUE(fs::exists(so)) << so;
  std::ifstream in(so, std::ios::binary);
  char header[20] = {};
  in.read(header, sizeof header);
  EXPECT_EQ(std::string(header + 1, 3), "ELF");
  EXPECT_EQ(static_cast<unsigned char>(header[18]), 183);
  auto v = run_command(cli() + " verify " + quote(arm_bundle().string()));
  EXPECT_EQ(v.exit_code, 1) << v.output;  // not loadable on this x86-64 machine, and it says so
  EXPECT_NE(v.output.find("CPU kernels for aarch64-unknown-linux-gnu, which this machine cannot run"),
            std::string::npos)
      << v.output;
}

TEST_F(CrossAarch64, SelftestPassesUnderQemu) {
  auto r = run_command(qemu_run() + " " + quote(arm_bundle().string()) + " --selftest");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 golden pair(s) match (kernels cpu/aarch64-unknown-linux-gnu.so)"), std::string::npos)
      << r.output;
}

// Every variant (batch 1, 8, 32) on the same random input through both bundles.
TEST_F(CrossAarch64, OutputsMatchTheX86BundleOnTheSameInputs) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (int64_t batch : {1, 8, 32}) {
    const fs::path dir = root_ / ("batch" + std::to_string(batch));
    fs::create_directories(dir / "arm");
    fs::create_directories(dir / "x86");
    rt::Tensor x(rt::DType::f32, {batch, 784});
    for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = normal(rng);
    const std::string x_npy = (dir / "x.npy").string();
    ASSERT_TRUE(rt::npy_write(x_npy, x.ref()).ok());

    auto arm = run_command(qemu_run() + " " + quote(arm_bundle().string()) + " --input x=" + quote(x_npy) +
                           " --output-dir " + quote((dir / "arm").string()));
    ASSERT_EQ(arm.exit_code, 0) << arm.output;
    auto x86 = run_command(cli() + " run " + quote(x86_bundle().string()) + " --input x=" + quote(x_npy) +
                           " --output-dir " + quote((dir / "x86").string()));
    ASSERT_EQ(x86.exit_code, 0) << x86.output;

    auto got = rt::npy_read((dir / "arm/out0.npy").string());
    auto want = rt::npy_read((dir / "x86/out0.npy").string());
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_EQ(got->shape(), (std::vector<int64_t>{batch, 10}));
    ASSERT_EQ(got->shape(), want->shape());
    double worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < got->numel(); ++i) {
      const double g = got->data_as<float>()[i], w = want->data_as<float>()[i];
      worst = std::max(worst, std::fabs(g - w));
      bad += !(std::fabs(g - w) <= kAtol + kRtol * std::fabs(w));
    }
    EXPECT_EQ(bad, 0) << "batch " << batch << ": " << bad << " elements differ; max abs error " << worst;
  }
}

// Winograd convs on NEON (4 lanes): F(4×4) fused (64 channels at 16×16) and apart (256 channels,
// beyond the fused kernel's 128), F(2×2) (64 channels at 8×8: 4 tiles of 4×4, too few for
// F(4×4)), each with batch norm and ReLU, pass their golden vectors (eager's outputs) under qemu.
TEST_F(CrossAarch64, WinogradConvsPassTheirGoldenVectorsUnderQemu) {
  const fs::path dir = root_ / "winograd";
  fs::create_directories(dir);
  {
    std::ofstream(dir / "convs.py")
        << "import torch\ntorch.manual_seed(0)\n"
           "def block(c):\n"
           "    return torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c),\n"
           "                               torch.nn.ReLU()).eval()\n"
           "c64, c256 = block(64), block(256)\n";
    std::ofstream(dir / "convs.yaml") << "version: 1\nname: convs\nscript: convs.py\nentries:\n"
                                         "  c64:\n    call: c64\n    inputs:\n      x: {dtype: float32, shape: [1, 64, 16, 16]}\n"
                                         "  c256:\n    call: c256\n    inputs:\n      x: {dtype: float32, shape: [1, 256, 16, 16]}\n"
                                         "  small:\n    call: c64\n    inputs:\n      x: {dtype: float32, shape: [1, 64, 8, 8]}\n";
  }
  const fs::path bundle = dir / "convs.aot";
  auto compiled = run_command(cli() + " compile " + quote((dir / "convs.yaml").string()) +
                              " --triple aarch64-linux-gnu --no-cache --dump cpu-plan -o " + quote(bundle.string()));
  ASSERT_EQ(compiled.exit_code, 0) << compiled.output;
  for (const char* plan : {"winograd fused 4x4", "winograd input 4x4", "winograd output 4x4", "winograd fused 2x2"})
    EXPECT_NE(compiled.output.find(plan), std::string::npos) << plan << " in\n" << compiled.output;
  auto r = run_command(qemu_run() + " " + quote(bundle.string()) + " --selftest");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 golden pair(s) match (kernels cpu/aarch64-unknown-linux-gnu.so)"), std::string::npos)
      << r.output;
}

// A guard miss is reported by the aarch64 runtime as by the x86-64 one.
TEST_F(CrossAarch64, GuardMissUnderQemuNamesTheInput) {
  rt::Tensor x(rt::DType::f32, {5, 784});
  const std::string x_npy = (root_ / "x5.npy").string();
  ASSERT_TRUE(rt::npy_write(x_npy, x.ref()).ok());
  auto r = run_command(qemu_run() + " " + quote(arm_bundle().string()) + " --input x=" + quote(x_npy) +
                       " --output-dir " + quote(root_.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("guard L['x'].size()[0] == 1 failed (got 5)"), std::string::npos) << r.output;
}

}  // namespace
