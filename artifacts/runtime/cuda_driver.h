// Private to the runtime: the CUDA driver API functions it calls, loaded with dlopen (the runtime
// includes no CUDA header and links no CUDA library, so a CPU-only device never needs CUDA).
// The library is AOTRACE_CUDA_DRIVER when set (tests load a fake driver through it), else
// libcuda.so.1. Types are the driver API's, by their sizes: CUdevice int, CUdeviceptr uint64_t,
// every handle a pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "aotrace_runtime.h"

namespace aotrace::rt {

using CuResult = int;  // CUresult: 0 is CUDA_SUCCESS
using CuDevicePtr = uint64_t;

// CUdevice_attribute, CUjit_option, CUstream_flags, CUstreamCaptureMode values used here.
constexpr int kCuComputeCapabilityMajor = 75, kCuComputeCapabilityMinor = 76;
constexpr int kCuJitErrorLogBuffer = 5, kCuJitErrorLogBufferSizeBytes = 6;
constexpr unsigned kCuStreamNonBlocking = 1, kCuEventDisableTiming = 2;
constexpr CuResult kCuErrorUnsupportedPtxVersion = 222, kCuErrorInvalidPtx = 218;
// Errors after which the context is unusable (CUDA_ERROR_ILLEGAL_ADDRESS .. CUDA_ERROR_LAUNCH_FAILED
// and the other sticky launch errors): the process must restart to use the GPU again.
inline bool context_lost(CuResult r) { return r >= 700 && r <= 720; }
constexpr int kCuStreamCaptureModeThreadLocal = 1;

struct CudaDriver {
  void* library = nullptr;
  std::string path;  // what was loaded: "libcuda.so.1", or AOTRACE_CUDA_DRIVER
  CuResult (*cuInit)(unsigned) = nullptr;
  CuResult (*cuDriverGetVersion)(int*) = nullptr;
  CuResult (*cuDeviceGetCount)(int*) = nullptr;
  CuResult (*cuDeviceGet)(int*, int) = nullptr;
  CuResult (*cuDeviceGetAttribute)(int*, int, int) = nullptr;
  CuResult (*cuDeviceTotalMem)(size_t*, int) = nullptr;
  CuResult (*cuGetErrorName)(CuResult, const char**) = nullptr;
  CuResult (*cuGetErrorString)(CuResult, const char**) = nullptr;
  CuResult (*cuDevicePrimaryCtxRetain)(void**, int) = nullptr;
  CuResult (*cuDevicePrimaryCtxRelease)(int) = nullptr;
  CuResult (*cuCtxPushCurrent)(void*) = nullptr;
  CuResult (*cuCtxPopCurrent)(void**) = nullptr;
  CuResult (*cuEventCreate)(void**, unsigned) = nullptr;
  CuResult (*cuEventRecord)(void*, void*) = nullptr;
  CuResult (*cuEventDestroy)(void*) = nullptr;
  CuResult (*cuStreamWaitEvent)(void*, void*, unsigned) = nullptr;
  CuResult (*cuModuleLoadDataEx)(void**, const void*, unsigned, int*, void**) = nullptr;
  CuResult (*cuModuleGetFunction)(void**, void*, const char*) = nullptr;
  CuResult (*cuModuleUnload)(void*) = nullptr;
  CuResult (*cuMemAlloc)(CuDevicePtr*, size_t) = nullptr;
  CuResult (*cuMemFree)(CuDevicePtr) = nullptr;
  CuResult (*cuMemcpyHtoDAsync)(CuDevicePtr, const void*, size_t, void*) = nullptr;
  CuResult (*cuMemcpyDtoHAsync)(void*, CuDevicePtr, size_t, void*) = nullptr;
  CuResult (*cuMemcpyDtoDAsync)(CuDevicePtr, CuDevicePtr, size_t, void*) = nullptr;
  CuResult (*cuStreamCreate)(void**, unsigned) = nullptr;
  CuResult (*cuStreamDestroy)(void*) = nullptr;
  CuResult (*cuStreamSynchronize)(void*) = nullptr;
  CuResult (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                             void**, void**) = nullptr;
  CuResult (*cuStreamBeginCapture)(void*, int) = nullptr;
  CuResult (*cuStreamEndCapture)(void*, void**) = nullptr;
  CuResult (*cuGraphInstantiateWithFlags)(void**, void*, unsigned long long) = nullptr;
  CuResult (*cuGraphLaunch)(void*, void*) = nullptr;
  CuResult (*cuGraphExecDestroy)(void*) = nullptr;
  CuResult (*cuGraphDestroy)(void*) = nullptr;

  CudaDriver() = default;
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;
  ~CudaDriver();

  // Loads the driver library (never unloaded: libcuda keeps threads) and every function above;
  // the error says which is missing. Does not call cuInit.
  static Result<std::unique_ptr<CudaDriver>> load();
  // "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string failure(const char* call, CuResult r) const;
};

}  // namespace aotrace::rt
