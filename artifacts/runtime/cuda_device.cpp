// The CUDA side of this machine, for a bundle with CUDA images (format 1.8): the driver is loaded
// with dlopen only when asked (a CPU-only device never needs CUDA installed), through the few
// driver API functions declared here (the runtime includes no CUDA header).
// Test: runtime_tests CudaDevice.* (no driver here: the probe's error; choose_cuda_image).
#include <dlfcn.h>

#include <cstdlib>

#include "aotrace_runtime.h"

namespace aotrace::rt {
namespace {

using CuResult = int;  // CUresult: 0 is CUDA_SUCCESS
constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;  // CUdevice_attribute

// "sm_90" → 90; -1 when `arch` is not sm_<digits>.
int arch_number(const std::string& arch) {
  if (arch.size() < 4 || arch.compare(0, 3, "sm_") != 0) return -1;
  int n = 0;
  for (size_t i = 3; i < arch.size(); ++i) {
    if (arch[i] < '0' || arch[i] > '9' || n > 10000) return -1;
    n = n * 10 + (arch[i] - '0');
  }
  return n;
}

}  // namespace

CudaDeviceInfo probe_cuda_device() {
  CudaDeviceInfo info;
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    info.error = why != nullptr ? why : "libcuda.so.1 cannot be loaded";
    return info;
  }
  auto fn = [&](const char* name) { return ::dlsym(lib, name); };
  auto cu_init = reinterpret_cast<CuResult (*)(unsigned)>(fn("cuInit"));
  auto driver_version = reinterpret_cast<CuResult (*)(int*)>(fn("cuDriverGetVersion"));
  auto device_count = reinterpret_cast<CuResult (*)(int*)>(fn("cuDeviceGetCount"));
  auto device_get = reinterpret_cast<CuResult (*)(int*, int)>(fn("cuDeviceGet"));
  auto attribute = reinterpret_cast<CuResult (*)(int*, int, int)>(fn("cuDeviceGetAttribute"));
  auto total_mem = reinterpret_cast<CuResult (*)(size_t*, int)>(fn("cuDeviceTotalMem_v2"));
  if (!cu_init || !driver_version || !device_count || !device_get || !attribute || !total_mem) {
    info.error = "libcuda.so.1 lacks a driver API function aotrace needs (cuInit, cuDeviceGetAttribute, ...)";
    ::dlclose(lib);
    return info;
  }
  auto failed = [&](const char* call, CuResult r) {
    info.error = std::string(call) + " failed (CUresult " + std::to_string(r) + ")";
    ::dlclose(lib);
    return info;
  };
  if (CuResult r = cu_init(0); r != 0) return failed("cuInit", r);
  info.driver = true;
  if (CuResult r = driver_version(&info.driver_version); r != 0) return failed("cuDriverGetVersion", r);
  if (CuResult r = device_count(&info.devices); r != 0) return failed("cuDeviceGetCount", r);
  if (info.devices > 0) {
    int device = 0, major = 0, minor = 0;
    size_t bytes = 0;
    if (CuResult r = device_get(&device, 0); r != 0) return failed("cuDeviceGet", r);
    if (CuResult r = attribute(&major, kComputeCapabilityMajor, device); r != 0) return failed("cuDeviceGetAttribute", r);
    if (CuResult r = attribute(&minor, kComputeCapabilityMinor, device); r != 0) return failed("cuDeviceGetAttribute", r);
    if (CuResult r = total_mem(&bytes, device); r != 0) return failed("cuDeviceTotalMem", r);
    info.arch = "sm_" + std::to_string(major * 10 + minor);
    info.memory_bytes = bytes;
  }
  ::dlclose(lib);
  return info;
}

int choose_cuda_image(const std::vector<CudaImageInfo>& images, const std::string& arch) {
  const int gpu = arch_number(arch);
  if (gpu < 0) return -1;
  for (size_t i = 0; i < images.size(); ++i)
    if (!images[i].ptx && images[i].arch == arch) return static_cast<int>(i);
  int best = -1, best_arch = -1;  // else the newest PTX the GPU's driver can compile
  for (size_t i = 0; i < images.size(); ++i) {
    const int a = arch_number(images[i].arch);
    if (images[i].ptx && a >= 0 && a <= gpu && a > best_arch) {
      best = static_cast<int>(i);
      best_arch = a;
    }
  }
  return best;
}

}  // namespace aotrace::rt
