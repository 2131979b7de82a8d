// Running a bundle's CUDA kernels (format 1.8, OpenOptions::device = cuda; DESIGN §5).
//
// At open: the driver (cuda_driver.h), GPU 0's primary context, the image choose_cuda_image picks
// for its arch (cubin, else PTX the driver compiles), every kernel of the CUDA plans resolved,
// weights.bin copied to the GPU once, one run slot per variant.
// Per call, on a run slot of the variant (concurrent runs take different slots):
//   - the slot owns a stream, the device arena (the CUDA plan's arena_bytes, at the dynamic dims'
//     maxima), a device block and staging memory for the caller's host tensors;
//   - the block holds the call's symbol values, the generator state and each launch's closure
//     (its buffer pointers, then a pointer to the symbols: cuda_backend.h's kernel ABI), written
//     with one host-to-device copy;
//   - the launches (KernelCall::threads threads in blocks of KernelCall::block, parameters
//     (closure, threads)) are captured once per set of symbol values as a CUDA Graph and
//     replayed: their parameters are the slot's block addresses and the thread counts, which the
//     symbols alone decide; the tensors' addresses change only the block's contents;
//   - host inputs are copied in and host outputs out on the slot's stream, which the call
//     synchronises before it returns (device tensors stay where they are).
//   - a call first waits (on the GPU) for the work queued before it on the legacy default stream,
//     so that device inputs written there (torch's default) are complete; every driver call runs
//     with the bundle's context pushed, and the caller's context is current again afterwards.
// Test: e2e_tests Cuda.* through a fake driver (tests/runtime/fake_cuda_driver.cpp) that runs the
// grid-emulated kernels on the CPU; on a GPU, tools/gpu/device_check.sh.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "bundle_data.h"
#include "cuda_driver.h"

namespace aotrace::rt {

// One run's device memory and its captured graphs.
struct CudaSlot {
  void* stream = nullptr;
  void* ready = nullptr;  // an event: the legacy stream's work before the call
  CuDevicePtr arena = 0;
  CuDevicePtr block = 0;  // symbols, generator state, closures (uint64 words)
  CuDevicePtr staging = 0;
  size_t staging_bytes = 0;
  std::vector<uint64_t> host_block;
  std::vector<CuDevicePtr> pointers;  // one per plan buffer
  std::vector<size_t> staged;         // per input, output, updated input: its offset in staging
  std::vector<int64_t> threads;       // per launch, this call's
  std::vector<int64_t> key;           // this call's symbol values (the graph cache's key)
  std::map<std::vector<int64_t>, void*> graphs;  // symbol values → CUgraphExec
};

struct CudaSlotPool {
  std::mutex mutex;
  std::vector<std::unique_ptr<CudaSlot>> free;
};

struct CudaState {
  std::unique_ptr<CudaDriver> driver;
  int device = 0;
  void* context = nullptr;
  void* module = nullptr;
  std::string arch, image;
  CuDevicePtr weights = 0;
  bool graphs = true;
  std::vector<std::unique_ptr<CudaSlotPool>> pools;  // CudaPlanData::pool

  ~CudaState();
  void free_slot(CudaSlot& s) const;
};

void CudaStateDeleter::operator()(CudaState* s) const { delete s; }

namespace {

constexpr size_t kAlign = 256;   // device allocations and staged tensors (cuMemAlloc's alignment)
constexpr size_t kMaxGraphs = 64;  // per slot; sizes beyond those launch without a graph
constexpr int64_t kMaxGridX = 2147483647;

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Words of a variant's device block: symbols, then the generator state, then each closure.
size_t block_words(const VariantData& v) {
  size_t words = v.symbols.size() + 2;
  for (const CudaCallData& c : v.cuda->calls) words += c.buffers.size() + 1;
  return words;
}

// The first failing driver call of a sequence: `check(call, r)` keeps the first failure.
struct Failure {
  const CudaDriver& d;
  std::string what;
  bool check(const char* call, CuResult r) {
    if (r != 0 && what.empty()) what = d.failure(call, r);
    return r == 0;
  }
};

Status gpu_error(const std::string& what, const std::string& during) {
  return Status(StatusCode::internal, "CUDA " + during + ": " + what);
}

// The bundle's context made current for the scope; the caller's is current again after it.
class ContextScope {
 public:
  explicit ContextScope(const CudaState& cs) : cs_(cs) { result_ = cs.driver->cuCtxPushCurrent(cs.context); }
  ~ContextScope() {
    void* popped = nullptr;
    if (result_ == 0) cs_.driver->cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  // Ok, or why the context could not be made current.
  Status status(const std::string& during) const {
    return result_ == 0 ? Status::Ok() : gpu_error(cs_.driver->failure("cuCtxPushCurrent", result_), during);
  }

 private:
  const CudaState& cs_;
  CuResult result_ = 0;
};

}  // namespace

CudaState::~CudaState() {
  if (!driver) return;
  void* popped = nullptr;
  const bool pushed = context != nullptr && driver->cuCtxPushCurrent(context) == 0;
  for (auto& pool : pools)
    for (auto& slot : pool->free) free_slot(*slot);
  if (weights != 0) driver->cuMemFree(weights);
  if (module != nullptr) driver->cuModuleUnload(module);
  if (pushed) driver->cuCtxPopCurrent(&popped);
  if (context != nullptr) driver->cuDevicePrimaryCtxRelease(device);
}

void CudaState::free_slot(CudaSlot& s) const {
  for (auto& [key, exec] : s.graphs) driver->cuGraphExecDestroy(exec);
  s.graphs.clear();
  for (CuDevicePtr p : {s.arena, s.block, s.staging})
    if (p != 0) driver->cuMemFree(p);
  s.arena = s.block = s.staging = 0;
  if (s.stream != nullptr) driver->cuStreamDestroy(s.stream);
  if (s.ready != nullptr) driver->cuEventDestroy(s.ready);
  s.stream = s.ready = nullptr;
}

namespace {

Result<std::unique_ptr<CudaSlot>> new_slot(const CudaState& cs, const VariantData& v) {
  auto slot = std::make_unique<CudaSlot>();
  Failure f{*cs.driver, ""};
  const size_t words = block_words(v);
  if (f.check("cuStreamCreate", cs.driver->cuStreamCreate(&slot->stream, kCuStreamNonBlocking)) &&
      f.check("cuEventCreate", cs.driver->cuEventCreate(&slot->ready, kCuEventDisableTiming)) &&
      f.check("cuMemAlloc", cs.driver->cuMemAlloc(&slot->block, words * 8)) && v.cuda->arena_bytes > 0)
    f.check("cuMemAlloc", cs.driver->cuMemAlloc(&slot->arena, aligned(static_cast<size_t>(v.cuda->arena_bytes))));
  if (!f.what.empty()) {
    cs.free_slot(*slot);
    return Status(StatusCode::io_error, "cannot set up a CUDA run of variant " + v.name + " (device arena " +
                                            std::to_string(v.cuda->arena_bytes) + " bytes): " + f.what);
  }
  slot->host_block.resize(words);
  slot->pointers.resize(v.cuda->buffers.size());
  return slot;
}

Result<std::unique_ptr<CudaSlot>> take_slot(const CudaState& cs, const VariantData& v) {
  CudaSlotPool& pool = *cs.pools[v.cuda->pool];
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.free.empty()) {
      std::unique_ptr<CudaSlot> slot = std::move(pool.free.back());
      pool.free.pop_back();
      return slot;
    }
  }
  return new_slot(cs, v);
}

void give_back_slot(const CudaState& cs, const VariantData& v, std::unique_ptr<CudaSlot> slot) {
  CudaSlotPool& pool = *cs.pools[v.cuda->pool];
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.push_back(std::move(slot));
}

// A slot taken for one run, given back however the run ends.
struct SlotLease {
  const CudaState& cs;
  const VariantData& v;
  std::unique_ptr<CudaSlot> slot;
  ~SlotLease() {
    if (slot) give_back_slot(cs, v, std::move(slot));
  }
};

// The image for GPU 0, loaded; every CUDA kernel of the plans resolved.
Status load_module(BundleData& b, CudaState& cs) {
  const int chosen = choose_cuda_image(b.cuda_images, cs.arch);
  if (chosen < 0) {
    std::string images;
    for (const CudaImageInfo& i : b.cuda_images) images += (images.empty() ? "" : ", ") + std::string(i.ptx ? "PTX " : "") + i.arch;
    return Status(StatusCode::unsupported, "bundle " + b.dir + " has CUDA kernels for " + images + ", none of which runs on this " +
                                               cs.arch + " GPU: recompile with --cuda-arch " + cs.arch);
  }
  cs.image = b.cuda_images[static_cast<size_t>(chosen)].path;
  const std::string path = b.dir + "/" + cs.image;
  std::string bytes;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[1 << 16];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    std::fclose(f);
  } else {
    return Status(StatusCode::io_error, "cannot read " + path);
  }
  bytes.push_back('\0');  // PTX is loaded as a NUL-terminated string
  char log[8192] = {0};
  int options[2] = {kCuJitErrorLogBuffer, kCuJitErrorLogBufferSizeBytes};
  void* values[2] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
  if (CuResult r = cs.driver->cuModuleLoadDataEx(&cs.module, bytes.data(), 2, options, values); r != 0)
    return Status(StatusCode::unsupported,
                  "cannot load " + cs.image + " of bundle " + b.dir + " on this " + cs.arch +
                      " GPU: " + cs.driver->failure("cuModuleLoadDataEx", r) +
                      (log[0] != '\0' ? std::string("; ") + log : std::string()) +
                      (r == kCuErrorUnsupportedPtxVersion || r == kCuErrorInvalidPtx
                           ? "; this driver is older than the CUDA 13 toolkit that wrote the PTX: update the NVIDIA driver"
                           : ""));
  for (EntryData& e : b.entries)
    for (VariantData& v : e.variants) {
      if (!v.cuda) continue;
      for (CudaCallData& c : v.cuda->calls)
        if (CuResult r = cs.driver->cuModuleGetFunction(&c.fn, cs.module, c.symbol.c_str()); r != 0)
          return Status(StatusCode::data_loss, "bundle " + b.dir + " is corrupt: kernel '" + c.symbol + "' is missing from " +
                                                   cs.image + " (" + cs.driver->failure("cuModuleGetFunction", r) + ")");
    }
  return Status::Ok();
}

// Where buffer `buf` of the plan is on the GPU for this call.
CuDevicePtr buffer_address(const BundleData& b, const CudaSlot& slot, const VariantData& v, const BufferData& buf,
                           const std::vector<TensorRef>& inputs, const std::vector<TensorRef>& outputs) {
  const size_t index = static_cast<size_t>(buf.index);
  const size_t n_in = inputs.size(), n_out = outputs.size();
  auto tensor = [&](const TensorRef& t, size_t staged) {
    return t.device == DeviceKind::cuda ? reinterpret_cast<CuDevicePtr>(t.data) : slot.staging + slot.staged[staged];
  };
  switch (buf.kind) {
    case BufferKind::Input:
      if (index == n_in) return slot.block + 8 * v.symbols.size();  // the generator state
      return tensor(inputs[index], index);
    case BufferKind::Output:
      if (index < n_out) return tensor(outputs[index], n_in + index);
      return slot.staging + slot.staged[n_in + index];  // an updated input's new value
    case BufferKind::Weight: return b.cuda->weights + b.weights[index].offset;
    case BufferKind::Arena: return slot.arena + static_cast<uint64_t>(buf.offset);
  }
  return 0;
}

// Launches the variant's kernels on the slot's stream (one by one, each timed when `seconds`).
bool launch_all(const CudaState& cs, const VariantData& v, CudaSlot& slot, const std::vector<int64_t>& threads,
                Failure& f, double* seconds) {
  size_t word = v.symbols.size() + 2;
  for (size_t c = 0; c < v.cuda->calls.size(); ++c) {
    const CudaCallData& call = v.cuda->calls[c];
    CuDevicePtr closure = slot.block + 8 * word;
    word += call.buffers.size() + 1;
    int64_t n = threads[c];
    if (n <= 0) continue;
    const int64_t blocks = (n + call.block - 1) / call.block;
    void* params[2] = {&closure, &n};
    const auto start = std::chrono::steady_clock::now();
    if (!f.check("cuLaunchKernel", cs.driver->cuLaunchKernel(call.fn, static_cast<unsigned>(blocks), 1, 1,
                                                              static_cast<unsigned>(call.block), 1, 1, 0, slot.stream,
                                                              params, nullptr)))
      return false;
    if (seconds != nullptr) {
      if (!f.check("cuStreamSynchronize", cs.driver->cuStreamSynchronize(slot.stream))) return false;
      seconds[c] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  return true;
}

// The launches as a graph for these symbol values: captured on first use, then replayed.
bool launch_graph(const CudaState& cs, const VariantData& v, CudaSlot& slot, const std::vector<int64_t>& symbols,
                  const std::vector<int64_t>& threads, Failure& f) {
  auto it = slot.graphs.find(symbols);
  if (it == slot.graphs.end()) {
    if (slot.graphs.size() >= kMaxGraphs) return launch_all(cs, v, slot, threads, f, nullptr);
    if (!f.check("cuStreamBeginCapture", cs.driver->cuStreamBeginCapture(slot.stream, kCuStreamCaptureModeThreadLocal)))
      return false;
    const bool launched = launch_all(cs, v, slot, threads, f, nullptr);
    void* graph = nullptr;
    const CuResult ended = cs.driver->cuStreamEndCapture(slot.stream, &graph);
    if (!launched || !f.check("cuStreamEndCapture", ended)) {
      if (graph != nullptr) cs.driver->cuGraphDestroy(graph);
      return false;
    }
    void* exec = nullptr;
    const CuResult made = cs.driver->cuGraphInstantiateWithFlags(&exec, graph, 0);
    cs.driver->cuGraphDestroy(graph);
    if (!f.check("cuGraphInstantiate", made)) return false;
    it = slot.graphs.emplace(symbols, exec).first;
  }
  return f.check("cuGraphLaunch", cs.driver->cuGraphLaunch(it->second, slot.stream));
}

}  // namespace

Status open_cuda(BundleData& b, const OpenOptions& options) {
  bool has_plans = false;
  for (const EntryData& e : b.entries)
    for (const VariantData& v : e.variants) has_plans |= v.cuda.has_value();
  if (b.cuda_images.empty() || !has_plans)
    return Status(StatusCode::unsupported, "bundle " + b.dir + " has no CUDA kernels: compile the model with "
                                           "`targets: [cpu, cuda]` to run it on a GPU, or open it for the CPU");
  Result<std::unique_ptr<CudaDriver>> driver = CudaDriver::load();
  if (!driver.ok())
    return Status(StatusCode::unsupported, "cannot run bundle " + b.dir + " on CUDA: this machine has no CUDA driver (" +
                                               driver.status().message() + "); run it with the CPU kernels (device cpu)");
  std::unique_ptr<CudaState, CudaStateDeleter> cs(new CudaState);
  cs->driver = std::move(*driver);
  const char* graphs = std::getenv("AOTRACE_CUDA_GRAPHS");  // "0": launches one by one, for debugging
  cs->graphs = options.cuda_graphs && !(graphs != nullptr && std::string(graphs) == "0");
  const CudaDriver& d = *cs->driver;
  auto failed = [&](const char* call, CuResult r) {
    return Status(StatusCode::unsupported, "cannot run bundle " + b.dir + " on CUDA: " + d.failure(call, r));
  };
  int count = 0, major = 0, minor = 0;
  if (CuResult r = d.cuInit(0); r != 0) return failed("cuInit", r);
  if (CuResult r = d.cuDeviceGetCount(&count); r != 0) return failed("cuDeviceGetCount", r);
  if (count == 0)
    return Status(StatusCode::unsupported, "cannot run bundle " + b.dir + " on CUDA: the driver sees no GPU");
  if (CuResult r = d.cuDeviceGet(&cs->device, 0); r != 0) return failed("cuDeviceGet", r);
  if (CuResult r = d.cuDeviceGetAttribute(&major, kCuComputeCapabilityMajor, cs->device); r != 0)
    return failed("cuDeviceGetAttribute", r);
  if (CuResult r = d.cuDeviceGetAttribute(&minor, kCuComputeCapabilityMinor, cs->device); r != 0)
    return failed("cuDeviceGetAttribute", r);
  cs->arch = "sm_" + std::to_string(major * 10 + minor);
  if (CuResult r = d.cuDevicePrimaryCtxRetain(&cs->context, cs->device); r != 0) return failed("cuDevicePrimaryCtxRetain", r);
  ContextScope scope(*cs);
  if (Status s = scope.status("open"); !s.ok()) return s;
  if (Status s = load_module(b, *cs); !s.ok()) return s;
  // Weights: weights.bin once, each weight at its offset (64-aligned, the reader checked).
  if (b.weights_file && b.weights_file->size > 0) {
    Failure f{d, ""};
    if (!f.check("cuMemAlloc", d.cuMemAlloc(&cs->weights, aligned(b.weights_file->size))) ||
        !f.check("cuMemcpyHtoD", d.cuMemcpyHtoDAsync(cs->weights, b.weights_file->data, b.weights_file->size, nullptr)) ||
        !f.check("cuStreamSynchronize", d.cuStreamSynchronize(nullptr)))
      return Status(StatusCode::io_error, "cannot copy the weights of bundle " + b.dir + " (" +
                                              std::to_string(b.weights_file->size) + " bytes) to the GPU: " + f.what);
  }
  for (EntryData& e : b.entries)
    for (VariantData& v : e.variants) {
      if (!v.cuda) continue;
      v.cuda->pool = cs->pools.size();
      cs->pools.push_back(std::make_unique<CudaSlotPool>());
    }
  b.cuda = std::move(cs);
  // One slot per variant up front (STYLE 10), so that a single-threaded caller allocates nothing.
  for (EntryData& e : b.entries)
    for (VariantData& v : e.variants) {
      if (!v.cuda) continue;
      Result<std::unique_ptr<CudaSlot>> slot = new_slot(*b.cuda, v);
      if (!slot.ok()) return slot.status();
      give_back_slot(*b.cuda, v, std::move(*slot));
    }
  return Status::Ok();
}

Status run_variant_cuda(const BundleData& b, const VariantData& v, const std::vector<TensorRef>& inputs,
                        const std::vector<TensorRef>& outputs, const int64_t* symbols, const int64_t* rng,
                        double* kernel_seconds) {
  const CudaState& cs = *b.cuda;
  const CudaDriver& d = *cs.driver;
  if (!v.cuda)
    return Status(StatusCode::unsupported, "variant " + v.name + " has no CUDA kernels");
  ContextScope scope(cs);
  if (Status s = scope.status("run"); !s.ok()) return s;
  Result<std::unique_ptr<CudaSlot>> taken = take_slot(cs, v);
  if (!taken.ok()) return taken.status();
  SlotLease lease{cs, v, std::move(*taken)};
  CudaSlot& slot = *lease.slot;
  Failure f{d, ""};
  // Staging: the host tensors, and every updated input's new value, at 256-byte offsets.
  const size_t n_in = inputs.size(), n_out = outputs.size(), n_upd = v.updated_inputs.size();
  slot.staged.assign(n_in + n_out + n_upd, 0);
  size_t bytes = 0;
  auto stage = [&](size_t k, const TensorRef* t, size_t nbytes) {
    if (t != nullptr && t->device == DeviceKind::cuda) return;
    slot.staged[k] = bytes;
    bytes += aligned(std::max<size_t>(nbytes, 1));
  };
  for (size_t i = 0; i < n_in; ++i) stage(i, &inputs[i], inputs[i].nbytes());
  for (size_t o = 0; o < n_out; ++o) stage(n_in + o, &outputs[o], outputs[o].nbytes());
  for (size_t k = 0; k < n_upd; ++k) stage(n_in + n_out + k, nullptr, inputs[static_cast<size_t>(v.updated_inputs[k])].nbytes());
  if (bytes > slot.staging_bytes) {
    // Grown to at least twice its size: cuMemFree waits for the whole GPU, so rarely.
    const size_t grown = std::max(bytes, 2 * slot.staging_bytes);
    if (slot.staging != 0) d.cuMemFree(slot.staging);
    slot.staging = 0;
    slot.staging_bytes = 0;
    if (!f.check("cuMemAlloc", d.cuMemAlloc(&slot.staging, grown)))
      return Status(StatusCode::io_error, "cannot allocate " + std::to_string(grown) +
                                              " bytes of GPU memory for the host tensors of a call: " + f.what);
    slot.staging_bytes = grown;
  }
  // The block: symbols, generator state, closures.
  std::vector<uint64_t>& block = slot.host_block;
  const size_t n_sym = v.symbols.size();
  for (size_t k = 0; k < n_sym; ++k) block[k] = static_cast<uint64_t>(symbols[k]);
  block[n_sym] = rng != nullptr ? static_cast<uint64_t>(rng[0]) : 0;
  block[n_sym + 1] = rng != nullptr ? static_cast<uint64_t>(rng[1]) : 0;
  for (size_t i = 0; i < v.cuda->buffers.size(); ++i)
    slot.pointers[i] = buffer_address(b, slot, v, v.cuda->buffers[i], inputs, outputs);
  std::vector<int64_t>& threads = slot.threads;
  threads.resize(v.cuda->calls.size());
  size_t word = n_sym + 2;
  for (size_t c = 0; c < v.cuda->calls.size(); ++c) {
    const CudaCallData& call = v.cuda->calls[c];
    for (int32_t buf : call.buffers) block[word++] = slot.pointers[static_cast<size_t>(buf)];
    block[word++] = slot.block;  // the symbols
    threads[c] = eval_sym_program(call.threads, symbols);
    if ((threads[c] + call.block - 1) / call.block > kMaxGridX)
      return Status(StatusCode::unsupported, "kernel '" + call.symbol + "' of variant " + v.name + " needs " +
                                                 std::to_string(threads[c]) + " threads, more than one CUDA launch takes");
  }
  // After the work queued before this call on the legacy default stream (device inputs written
  // there); then in, run, out.
  bool ok = f.check("cuEventRecord", d.cuEventRecord(slot.ready, nullptr)) &&
            f.check("cuStreamWaitEvent", d.cuStreamWaitEvent(slot.stream, slot.ready, 0));
  for (size_t i = 0; ok && i < n_in; ++i)
    if (inputs[i].device != DeviceKind::cuda && inputs[i].nbytes() > 0)
      ok = f.check("cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync(slot.staging + slot.staged[i], inputs[i].data,
                                                            inputs[i].nbytes(), slot.stream));
  ok = ok && f.check("cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync(slot.block, block.data(), block.size() * 8, slot.stream));
  if (ok) {
    slot.key.assign(symbols, symbols + n_sym);
    ok = cs.graphs && kernel_seconds == nullptr ? launch_graph(cs, v, slot, slot.key, threads, f)
                                                : launch_all(cs, v, slot, threads, f, kernel_seconds);
  }
  for (size_t o = 0; ok && o < n_out; ++o)
    if (outputs[o].device != DeviceKind::cuda && outputs[o].nbytes() > 0)
      ok = f.check("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(outputs[o].data, slot.staging + slot.staged[n_in + o],
                                                            outputs[o].nbytes(), slot.stream));
  for (size_t k = 0; ok && k < n_upd; ++k) {
    const TensorRef& t = inputs[static_cast<size_t>(v.updated_inputs[k])];
    const CuDevicePtr from = slot.staging + slot.staged[n_in + n_out + k];
    if (t.nbytes() == 0) continue;
    ok = t.device == DeviceKind::cuda
             ? f.check("cuMemcpyDtoDAsync", d.cuMemcpyDtoDAsync(reinterpret_cast<CuDevicePtr>(t.data), from, t.nbytes(), slot.stream))
             : f.check("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(t.data, from, t.nbytes(), slot.stream));
  }
  const CuResult synced = d.cuStreamSynchronize(slot.stream);
  ok = f.check("cuStreamSynchronize", synced) && ok;
  if (ok) return Status::Ok();
  if (context_lost(synced) || f.what.find("ILLEGAL_ADDRESS") != std::string::npos ||
      f.what.find("LAUNCH_FAILED") != std::string::npos)
    return gpu_error(f.what + " (variant " + v.name + "): the GPU context is lost, so this process cannot use the GPU "
                     "again; if every device pointer passed was valid GPU memory of the tensor's size, this is a bug "
                     "in aotrace, please report it with the bundle",
                     "run");
  return gpu_error(f.what + " (variant " + v.name + ")", "run");
}

// ---------------------------------------------------------------------------------------------
// Device memory for callers (Bundle::allocate, Bundle::copy).

Result<DeviceTensor> Bundle::allocate(DType dtype, std::vector<int64_t> shape) const {
  if (!data_->cuda)
    return Status(StatusCode::invalid_argument, "bundle " + data_->dir + " was opened for the CPU: device memory needs "
                                                "OpenOptions::device = cuda");
  const CudaState& cs = *data_->cuda;
  DeviceTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  for (int64_t dim : t.shape_)
    if (dim < 0 || dim > (int64_t{1} << 40))
      return Status(StatusCode::invalid_argument, "allocate: dims must be between 0 and 2^40, got " + shape_str(t.shape_));
  t.nbytes_ = static_cast<size_t>(TensorRef(dtype, t.shape_, nullptr).numel()) * dtype_size(dtype);
  ContextScope scope(cs);
  if (Status s = scope.status("allocate"); !s.ok()) return s;
  CuDevicePtr p = 0;
  if (CuResult r = cs.driver->cuMemAlloc(&p, aligned(std::max<size_t>(t.nbytes_, 1))); r != 0)
    return Status(StatusCode::io_error, "cannot allocate " + std::to_string(t.nbytes_) + " bytes on the GPU: " +
                                            cs.driver->failure("cuMemAlloc", r));
  std::shared_ptr<const BundleData> owner = data_;
  t.memory_ = std::shared_ptr<void>(reinterpret_cast<void*>(p), [owner](void* q) {
    ContextScope freeing(*owner->cuda);
    owner->cuda->driver->cuMemFree(reinterpret_cast<CuDevicePtr>(q));
  });
  return t;
}

Result<DeviceTensor> Bundle::to_device(const TensorRef& src) const {
  Result<DeviceTensor> d = allocate(src.dtype, src.shape);
  if (!d.ok()) return d;
  if (Status s = copy(d->ref(), src); !s.ok()) return s;
  return d;
}

Status Bundle::copy(const TensorRef& dst, const TensorRef& src) const {
  if (dst.nbytes() != src.nbytes() || dst.dtype != src.dtype || !dst.is_contiguous() || !src.is_contiguous())
    return Status(StatusCode::invalid_argument, "copy needs two contiguous tensors of one dtype and size, got " +
                                                    std::string(dtype_name(src.dtype)) + shape_str(src.shape) + " → " +
                                                    dtype_name(dst.dtype) + shape_str(dst.shape));
  if (src.nbytes() == 0) return Status::Ok();
  if (dst.device == DeviceKind::cpu && src.device == DeviceKind::cpu) {
    std::memmove(dst.data, src.data, src.nbytes());
    return Status::Ok();
  }
  if (!data_->cuda)
    return Status(StatusCode::invalid_argument, "bundle " + data_->dir + " was opened for the CPU: copies to or from "
                                                "the GPU need OpenOptions::device = cuda");
  const CudaState& cs = *data_->cuda;
  const CudaDriver& d = *cs.driver;
  Failure f{d, ""};
  ContextScope scope(cs);
  if (Status s = scope.status("copy"); !s.ok()) return s;
  {
    const auto to = reinterpret_cast<CuDevicePtr>(dst.data), from = reinterpret_cast<CuDevicePtr>(src.data);
    if (dst.device == DeviceKind::cuda && src.device == DeviceKind::cuda)
      f.check("cuMemcpyDtoDAsync", d.cuMemcpyDtoDAsync(to, from, src.nbytes(), nullptr));
    else if (dst.device == DeviceKind::cuda)
      f.check("cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync(to, src.data, src.nbytes(), nullptr));
    else
      f.check("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(dst.data, from, src.nbytes(), nullptr));
    f.check("cuStreamSynchronize", d.cuStreamSynchronize(nullptr));
  }
  if (!f.what.empty()) return gpu_error(f.what, "copy");
  return Status::Ok();
}

const std::string& Bundle::cuda_arch() const {
  static const std::string none;
  return data_->cuda ? data_->cuda->arch : none;
}

const std::string& Bundle::cuda_image() const {
  static const std::string none;
  return data_->cuda ? data_->cuda->image : none;
}

DeviceKind Bundle::device() const { return data_->cuda ? DeviceKind::cuda : DeviceKind::cpu; }

}  // namespace aotrace::rt
