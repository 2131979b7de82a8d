// The runtime's CUDA device probe and image choice (artifacts/runtime/cuda_device.cpp). Where
// this machine has no CUDA driver (the usual test machine), the probe says why.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "artifacts/runtime/aotrace_runtime.h"

namespace aotrace::rt {
namespace {

const std::vector<CudaImageInfo> kImages = {{"cuda/sm_80.cubin", "sm_80", false},
                                            {"cuda/sm_90.cubin", "sm_90", false},
                                            {"cuda/sm_80.ptx", "sm_80", true}};

TEST(CudaDevice, AGpuLoadsItsOwnCubinElseThePtxOfAnOlderArch) {
  EXPECT_EQ(choose_cuda_image(kImages, "sm_80"), 0);
  EXPECT_EQ(choose_cuda_image(kImages, "sm_90"), 1);
  EXPECT_EQ(choose_cuda_image(kImages, "sm_89"), 2);   // no cubin: the PTX, JIT-compiled by the driver
  EXPECT_EQ(choose_cuda_image(kImages, "sm_120"), 2);
  EXPECT_EQ(choose_cuda_image(kImages, "sm_75"), -1);  // older than every image
  EXPECT_EQ(choose_cuda_image(kImages, "compute_90"), -1);
  EXPECT_EQ(choose_cuda_image({}, "sm_90"), -1);
  // The newest PTX that the GPU can take.
  const std::vector<CudaImageInfo> two_ptx = {{"cuda/sm_75.ptx", "sm_75", true}, {"cuda/sm_86.ptx", "sm_86", true}};
  EXPECT_EQ(choose_cuda_image(two_ptx, "sm_89"), 1);
  EXPECT_EQ(choose_cuda_image(two_ptx, "sm_80"), 0);
}

TEST(CudaDevice, ProbeWithoutADriverSaysWhy) {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const CudaDeviceInfo info = probe_cuda_device();
  if (driver != nullptr) {  // a machine with the NVIDIA driver
    ::dlclose(driver);
    if (info.driver && info.devices > 0) EXPECT_EQ(info.arch.rfind("sm_", 0), 0u) << info.arch;
    return;
  }
  EXPECT_FALSE(info.driver);
  EXPECT_NE(info.error.find("libcuda.so.1"), std::string::npos) << info.error;
  EXPECT_EQ(info.devices, 0);
}

}  // namespace
}  // namespace aotrace::rt
