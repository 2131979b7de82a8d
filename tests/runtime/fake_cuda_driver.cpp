// A fake CUDA driver (libcuda.so.1's API, the functions the runtime's cuda_driver.h loads) for
// testing the runtime's CUDA path on a machine without a GPU: the runtime loads it through
// AOTRACE_CUDA_DRIVER. "Device" memory is host memory (filled with 0xff bytes, NaN for floats, so
// that a read of something never written shows), streams run everything at once, and a kernel
// launch runs the kernel's grid function from the host-code library that
// `aotrace compile --cuda-emulation-library` wrote (AOTRACE_FAKE_CUDA_KERNELS), for every
// block and thread of the launch, last block first. Stream capture records launches (their
// parameters copied at capture, as the real driver does) into graphs that cuGraphLaunch replays.
//
// It checks what a real driver would reject or fault on: device pointers outside live
// allocations (copies, closures), a launch of more than 1024 threads per block, copies during a
// capture, frees of unknown pointers. Counters for the tests: fake_cuda_stats().
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidImage = 200, kInvalidHandle = 400,
                   kNotFound = 500, kIllegalAddress = 700, kLaunchOutOfResources = 701, kCaptureUnsupported = 900;

using GridFn = void (*)(void* closure, int64_t threads, int64_t block, int64_t block_dim, int64_t thread);

struct Launch {
  GridFn fn;
  unsigned grid, block;
  uint64_t closure;
  int64_t threads;
};

struct Stream {
  bool capturing = false;
  std::vector<Launch> captured;
};

struct Graph {
  std::vector<Launch> launches;
};

std::mutex mutex;
std::map<uint64_t, size_t> allocations;  // address → bytes
struct Stats {
  long launches = 0, graphs_instantiated = 0, graph_launches = 0, modules_loaded = 0;
} stats;

// Whether [p, p + n) lies in one live allocation.
bool live(uint64_t p, size_t n) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return false;
  --it;
  return p >= it->first && p + n <= it->first + it->second;
}

CUresult run(const Launch& l) {
  if (!live(l.closure, 8)) return kIllegalAddress;
  for (int64_t b = static_cast<int64_t>(l.grid) - 1; b >= 0; --b)
    for (int64_t t = static_cast<int64_t>(l.block) - 1; t >= 0; --t)
      l.fn(reinterpret_cast<void*>(l.closure), l.threads, b, l.block, t);
  std::lock_guard<std::mutex> lock(mutex);
  ++stats.launches;
  return kSuccess;
}

}  // namespace

extern "C" {

struct FakeCudaStats {
  long launches, graphs_instantiated, graph_launches, modules_loaded, live_allocations, context_depth;
};
extern thread_local int context_depth;
FakeCudaStats fake_cuda_stats() {
  std::lock_guard<std::mutex> lock(mutex);
  return {stats.launches, stats.graphs_instantiated, stats.graph_launches, stats.modules_loaded,
          static_cast<long>(allocations.size()), context_depth};
}

CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return kSuccess; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return kSuccess; }
CUresult cuDeviceGet(int* d, int ordinal) { *d = ordinal; return ordinal == 0 ? kSuccess : kInvalidValue; }
// Compute capability 9.0 unless AOTRACE_FAKE_CUDA_ARCH says another ("sm_89").
CUresult cuDeviceGetAttribute(int* value, int attribute, int) {
  const char* arch = std::getenv("AOTRACE_FAKE_CUDA_ARCH");
  const int cc = arch != nullptr && std::strlen(arch) > 3 ? std::atoi(arch + 3) : 90;
  if (attribute == 75) *value = cc / 10;
  else if (attribute == 76) *value = cc % 10;
  else return kInvalidValue;
  return kSuccess;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int) { *bytes = size_t{16} << 30; return kSuccess; }
CUresult cuGetErrorName(CUresult r, const char** name) {
  switch (r) {
    case kSuccess: *name = "CUDA_SUCCESS"; break;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case kInvalidHandle: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
    case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case kIllegalAddress: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case kLaunchOutOfResources: *name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; break;
    case kCaptureUnsupported: *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
    default: return kInvalidValue;
  }
  return kSuccess;
}
CUresult cuGetErrorString(CUresult r, const char** text) {
  *text = r == kIllegalAddress ? "an illegal memory access was encountered" : "fake driver error";
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(void** ctx, int) {
  static int context;
  *ctx = &context;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
// The calling thread's context stack (its depth is in fake_cuda_stats: 0 when every push of the
// runtime was popped, the caller's context current again).
thread_local int context_depth = 0;
CUresult cuCtxPushCurrent_v2(void* ctx) {
  if (ctx == nullptr) return kInvalidValue;
  ++context_depth;
  return kSuccess;
}
CUresult cuCtxPopCurrent_v2(void** ctx) {
  if (context_depth == 0) return kInvalidValue;
  --context_depth;
  if (ctx != nullptr) *ctx = nullptr;
  return kSuccess;
}

CUresult cuEventCreate(void** event, unsigned) {
  static int events;
  *event = &events;
  return kSuccess;
}
CUresult cuEventRecord(void* event, void* stream) {
  if (event == nullptr) return kInvalidHandle;
  if (stream != nullptr && static_cast<Stream*>(stream)->capturing) return kCaptureUnsupported;
  return kSuccess;
}
CUresult cuEventDestroy_v2(void*) { return kSuccess; }
CUresult cuStreamWaitEvent(void* stream, void* event, unsigned) {
  if (event == nullptr) return kInvalidHandle;
  if (stream != nullptr && static_cast<Stream*>(stream)->capturing) return kCaptureUnsupported;
  return kSuccess;
}

// The image must be a cubin (ELF) or PTX; the kernels come from AOTRACE_FAKE_CUDA_KERNELS.
CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned, int*, void**) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  const bool elf = std::memcmp(bytes, "\x7f" "ELF", 4) == 0;
  const bool ptx = std::strstr(static_cast<const char*>(image), ".entry") != nullptr;
  const char* path = std::getenv("AOTRACE_FAKE_CUDA_KERNELS");
  if ((!elf && !ptx) || path == nullptr) return kInvalidImage;
  *module = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (*module == nullptr) {  // a relative path is searched for as a library name: say so
    std::fprintf(stderr, "fake CUDA driver: cannot load AOTRACE_FAKE_CUDA_KERNELS=%s (give a path with a '/'): %s\n", path,
                 ::dlerror());
    return kInvalidImage;
  }
  std::lock_guard<std::mutex> lock(mutex);
  ++stats.modules_loaded;
  return kSuccess;
}
CUresult cuModuleGetFunction(void** fn, void* module, const char* name) {
  *fn = ::dlsym(module, (std::string(name) + ".grid").c_str());
  return *fn != nullptr ? kSuccess : kNotFound;
}
CUresult cuModuleUnload(void* module) { return ::dlclose(module) == 0 ? kSuccess : kInvalidHandle; }

CUresult cuMemAlloc_v2(uint64_t* p, size_t bytes) {
  if (bytes == 0) return kInvalidValue;
  void* q = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (q == nullptr) return kOutOfMemory;
  std::memset(q, 0xff, bytes);
  *p = reinterpret_cast<uint64_t>(q);
  std::lock_guard<std::mutex> lock(mutex);
  allocations[*p] = bytes;
  return kSuccess;
}
CUresult cuMemFree_v2(uint64_t p) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = allocations.find(p);
  if (it == allocations.end()) return kInvalidValue;
  allocations.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return kSuccess;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void* src, size_t n, void* stream) {
  if (stream != nullptr && static_cast<Stream*>(stream)->capturing) return kCaptureUnsupported;
  if (!live(dst, n)) return kInvalidValue;
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  return kSuccess;
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, uint64_t src, size_t n, void* stream) {
  if (stream != nullptr && static_cast<Stream*>(stream)->capturing) return kCaptureUnsupported;
  if (!live(src, n)) return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return kSuccess;
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void* stream) {
  if (stream != nullptr && static_cast<Stream*>(stream)->capturing) return kCaptureUnsupported;
  if (!live(dst, n) || !live(src, n)) return kInvalidValue;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return kSuccess;
}

CUresult cuStreamCreate(void** stream, unsigned) { *stream = new Stream; return kSuccess; }
CUresult cuStreamDestroy_v2(void* stream) { delete static_cast<Stream*>(stream); return kSuccess; }
CUresult cuStreamSynchronize(void*) { return kSuccess; }

CUresult cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void* stream, void** params, void** extra) {
  if (fn == nullptr || params == nullptr || extra != nullptr || gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 ||
      gx == 0 || bx == 0)
    return kInvalidValue;
  if (bx > 1024) return kLaunchOutOfResources;
  Launch l{reinterpret_cast<GridFn>(fn), gx, bx, *static_cast<uint64_t*>(params[0]), *static_cast<int64_t*>(params[1])};
  if (stream != nullptr && static_cast<Stream*>(stream)->capturing) {
    static_cast<Stream*>(stream)->captured.push_back(l);
    return kSuccess;
  }
  return run(l);
}

CUresult cuStreamBeginCapture_v2(void* stream, int) {
  if (stream == nullptr) return kCaptureUnsupported;  // the legacy stream cannot be captured
  auto* s = static_cast<Stream*>(stream);
  s->capturing = true;
  s->captured.clear();
  return kSuccess;
}
CUresult cuStreamEndCapture(void* stream, void** graph) {
  auto* s = static_cast<Stream*>(stream);
  if (!s->capturing) return kInvalidValue;
  s->capturing = false;
  *graph = new Graph{std::move(s->captured)};
  s->captured.clear();
  return kSuccess;
}
CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long) {
  *exec = new Graph(*static_cast<Graph*>(graph));
  std::lock_guard<std::mutex> lock(mutex);
  ++stats.graphs_instantiated;
  return kSuccess;
}
CUresult cuGraphLaunch(void* exec, void*) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++stats.graph_launches;
  }
  for (const Launch& l : static_cast<Graph*>(exec)->launches)
    if (CUresult r = run(l); r != kSuccess) return r;
  return kSuccess;
}
CUresult cuGraphExecDestroy(void* exec) { delete static_cast<Graph*>(exec); return kSuccess; }
CUresult cuGraphDestroy(void* graph) { delete static_cast<Graph*>(graph); return kSuccess; }

}  // extern "C"
