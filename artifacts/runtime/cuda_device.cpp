// The CUDA side of this machine, for a bundle with CUDA images (format 1.8): the driver
// (cuda_driver.h) is loaded with dlopen only when asked (a CPU-only device never needs CUDA
// installed); probe_cuda_device describes GPU 0, choose_cuda_image picks the image it loads.
// Test: runtime_tests CudaDevice.* (no driver here: the probe's error; choose_cuda_image);
// e2e_tests Cuda.* through the fake driver.
#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

#include "cuda_driver.h"

namespace aotrace::rt {
namespace {

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

CudaDriver::~CudaDriver() {
  if (library != nullptr) ::dlclose(library);
}

Result<std::unique_ptr<CudaDriver>> CudaDriver::load() {
  auto d = std::make_unique<CudaDriver>();
  const char* override_path = std::getenv("AOTRACE_CUDA_DRIVER");
  d->path = override_path != nullptr && override_path[0] != '\0' ? override_path : "libcuda.so.1";
  d->library = ::dlopen(d->path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (d->library == nullptr) {
    const char* why = ::dlerror();
    return Status(StatusCode::unsupported, why != nullptr ? why : d->path + " cannot be loaded");
  }
  std::string missing;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(d->library, name));
    if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  bind(d->cuInit, "cuInit");
  bind(d->cuDriverGetVersion, "cuDriverGetVersion");
  bind(d->cuDeviceGetCount, "cuDeviceGetCount");
  bind(d->cuDeviceGet, "cuDeviceGet");
  bind(d->cuDeviceGetAttribute, "cuDeviceGetAttribute");
  bind(d->cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  bind(d->cuGetErrorName, "cuGetErrorName");
  bind(d->cuGetErrorString, "cuGetErrorString");
  bind(d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(d->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  bind(d->cuCtxPushCurrent, "cuCtxPushCurrent_v2");
  bind(d->cuCtxPopCurrent, "cuCtxPopCurrent_v2");
  bind(d->cuEventCreate, "cuEventCreate");
  bind(d->cuEventRecord, "cuEventRecord");
  bind(d->cuEventDestroy, "cuEventDestroy_v2");
  bind(d->cuStreamWaitEvent, "cuStreamWaitEvent");
  bind(d->cuModuleLoadDataEx, "cuModuleLoadDataEx");
  bind(d->cuModuleGetFunction, "cuModuleGetFunction");
  bind(d->cuModuleUnload, "cuModuleUnload");
  bind(d->cuMemAlloc, "cuMemAlloc_v2");
  bind(d->cuMemFree, "cuMemFree_v2");
  bind(d->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  bind(d->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  bind(d->cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  bind(d->cuStreamCreate, "cuStreamCreate");
  bind(d->cuStreamDestroy, "cuStreamDestroy_v2");
  bind(d->cuStreamSynchronize, "cuStreamSynchronize");
  bind(d->cuLaunchKernel, "cuLaunchKernel");
  bind(d->cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  bind(d->cuStreamEndCapture, "cuStreamEndCapture");
  bind(d->cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  bind(d->cuGraphLaunch, "cuGraphLaunch");
  bind(d->cuGraphExecDestroy, "cuGraphExecDestroy");
  bind(d->cuGraphDestroy, "cuGraphDestroy");
  if (!missing.empty())
    return Status(StatusCode::unsupported, d->path + " is a CUDA driver too old for aotrace, it lacks " + missing +
                                               ": install an NVIDIA driver for CUDA 12 or newer");
  return d;
}

std::string CudaDriver::failure(const char* call, CuResult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  std::string out = std::string(call) + " failed: ";
  if (cuGetErrorName != nullptr && cuGetErrorName(r, &name) == 0 && name != nullptr) out += name;
  else out += "CUresult " + std::to_string(r);
  if (cuGetErrorString != nullptr && cuGetErrorString(r, &text) == 0 && text != nullptr) out += std::string(" (") + text + ")";
  return out;
}

CudaDeviceInfo probe_cuda_device() {
  CudaDeviceInfo info;
  Result<std::unique_ptr<CudaDriver>> loaded = CudaDriver::load();
  if (!loaded.ok()) {
    info.error = loaded.status().message();
    return info;
  }
  const CudaDriver& d = **loaded;
  auto failed = [&](const char* call, CuResult r) {
    info.error = d.failure(call, r);
    return info;
  };
  if (CuResult r = d.cuInit(0); r != 0) return failed("cuInit", r);
  info.driver = true;
  if (CuResult r = d.cuDriverGetVersion(&info.driver_version); r != 0) return failed("cuDriverGetVersion", r);
  if (CuResult r = d.cuDeviceGetCount(&info.devices); r != 0) return failed("cuDeviceGetCount", r);
  if (info.devices > 0) {
    int device = 0, major = 0, minor = 0;
    size_t bytes = 0;
    if (CuResult r = d.cuDeviceGet(&device, 0); r != 0) return failed("cuDeviceGet", r);
    if (CuResult r = d.cuDeviceGetAttribute(&major, kCuComputeCapabilityMajor, device); r != 0)
      return failed("cuDeviceGetAttribute", r);
    if (CuResult r = d.cuDeviceGetAttribute(&minor, kCuComputeCapabilityMinor, device); r != 0)
      return failed("cuDeviceGetAttribute", r);
    if (CuResult r = d.cuDeviceTotalMem(&bytes, device); r != 0) return failed("cuDeviceTotalMem", r);
    info.arch = "sm_" + std::to_string(major * 10 + minor);
    info.memory_bytes = bytes;
  }
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
