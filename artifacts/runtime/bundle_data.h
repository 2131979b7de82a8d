// Private to the runtime: a bundle as plain C++ values, read once from bundle.fb at open so
// that running never touches the FlatBuffer again.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "aotrace_kernel_abi.h"
#include "aotrace_runtime.h"
#include "thread_pool.h"

namespace aotrace::rt {

enum class GuardKind : uint8_t {
  Rank, DType, Device, DimEq, DimRange, DimMultiple, DimsEqual, Contiguous, ValueEq, PaddingMask
};

struct GuardData {
  GuardKind kind = GuardKind::Rank;
  int input = 0;
  int dim = 0;
  int64_t value = 0;
  int64_t value2 = 0;
  int other_input = 0;
  int other_dim = 0;
  DType dtype = DType::f32;
  DeviceKind device = DeviceKind::cpu;
  double scalar = 0;   // ValueEq
  std::string text;    // "L['x'].size()[0] == 8"
  std::string origin;  // "model.py:12"
  std::string symbol;  // a dynamic dim's guards: its name ("seq")
  // Device: any device passes (set at open where the declared device is not the one the bundle
  // was opened for: Bundle::open).
  bool any_device = false;
};

// A shape symbol of a variant (bundle.fbs Symbol): the size of dim `dim` of input `input`.
using SymbolData = DynamicDimInfo;

// The most values a size program (bundle.fbs SymProgram) may stack; the reader refuses deeper.
constexpr size_t kMaxSymStack = 16;
// Whether `code` is a well-formed size program over `num_symbols` symbols (bundle_reader.cpp).
bool valid_sym_program(const std::vector<int64_t>& code, size_t num_symbols);

enum class BufferKind : uint8_t { Input, Output, Weight, Arena };

struct BufferData {
  BufferKind kind = BufferKind::Arena;
  int64_t index = 0;
  int64_t offset = 0;
  int64_t size_bytes = 0;
};

struct CallData {
  std::string symbol;
  std::string what;                // format 1.6: what it computes (empty before)
  aotrace_kernel_fn fn = nullptr;  // resolved at open
  std::vector<int32_t> buffers;
};

// A CUDA launch (format 1.8, bundle.fbs KernelCall.threads/block): `threads` threads, a size
// program over the variant's symbols, in blocks of `block`.
struct CudaCallData {
  std::string symbol;
  std::string what;
  std::vector<int32_t> buffers;
  std::vector<int64_t> threads;
  int32_t block = 0;
  void* fn = nullptr;  // CUfunction, resolved when the bundle is opened for cuda
};

// A variant's plan for a CUDA GPU: buffers as the CPU plan's, its arena in device memory.
struct CudaPlanData {
  std::vector<BufferData> buffers;
  std::vector<CudaCallData> calls;
  int64_t arena_bytes = 0;
  size_t pool = 0;  // its run slots: CudaState::pools[pool] (cuda_run.cpp)
};

// The GPU side of a bundle opened for cuda (cuda_run.cpp): driver, context, module, weights,
// run slots. Destroyed before anything else of the bundle.
struct CudaState;
struct CudaStateDeleter {
  void operator()(CudaState* s) const;
};

// Scratch memory of one run: the arena and the pointer tables, reused across runs.
struct RunSlot {
  std::unique_ptr<uint8_t, void (*)(uint8_t*)> arena{nullptr, nullptr};
  std::vector<int64_t> symbols; // the call's symbol values (VariantData::symbols)
  std::vector<void*> pointers;  // one per plan buffer
  std::vector<void*> args;      // the current call's arguments
};

// Run slots of one variant: a run takes a slot (a new one only when more runs are in flight
// than ever before) and returns it, so concurrent runs never share scratch memory and a
// steady state allocates nothing.
class RunSlotPool {
 public:
  RunSlotPool(int64_t arena_bytes, size_t num_buffers, size_t max_call_args)
      : arena_bytes_(arena_bytes), num_buffers_(num_buffers), max_call_args_(max_call_args) {}
  std::unique_ptr<RunSlot> take();  // null when the arena cannot be allocated
  void give_back(std::unique_ptr<RunSlot> slot);

 private:
  int64_t arena_bytes_;
  size_t num_buffers_, max_call_args_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<RunSlot>> free_;
};

struct GoldenData {
  std::vector<std::string> inputs;   // bundle-relative .npy paths
  std::vector<std::string> outputs;
};

struct VariantData {
  std::string name;
  std::vector<std::string> profiles;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  std::vector<GuardData> guards;
  std::vector<TextWithOrigin> assumptions;  // what capture assumed (never checked at run time)
  std::vector<BufferData> buffers;
  std::vector<CallData> calls;
  int64_t arena_bytes = 0;
  int64_t arena_bytes_at_min = 0;  // format 1.6 (arena_bytes before)
  std::vector<GoldenData> golden;
  // Inputs changed in place: Output buffer outputs.size() + k is the new value of input
  // updated_inputs[k], copied into the caller's tensor after the kernels ran.
  std::vector<int32_t> updated_inputs;
  // Draws random numbers: Input buffer inputs.size() is the generator state (seed, offset).
  bool draws_random = false;
  // Dynamic dims (format 1.5): the symbols, and the size programs that shape dims < 0 name
  // (inputs[i].shape[d] = -1 - k: dim_exprs[k]); raw_*_shapes keep those codes (TensorInfo
  // shows -1).
  std::vector<SymbolData> symbols;
  std::vector<std::vector<int64_t>> dim_exprs;
  std::vector<std::vector<int64_t>> raw_input_shapes, raw_output_shapes;
  std::optional<CudaPlanData> cuda;  // format 1.8: the bundle has CUDA kernels
  // Created at open with one slot allocated, sized by the memory plan (STYLE 10).
  std::unique_ptr<RunSlotPool> slots;
};

// An entry's random generator (Entry::manual_seed): each call takes the next offset.
struct RngState {
  std::atomic<uint64_t> seed{0};
  std::atomic<uint64_t> next_offset{0};
};

using BucketData = BucketInfo;  // bundle.fbs BucketedDim

struct EntryData {
  std::unique_ptr<RngState> rng = std::make_unique<RngState>();
  std::string name;
  std::vector<BucketData> buckets;
  std::string output_tree;
  std::vector<OutputNode> output_nodes;
  std::vector<VariantData> variants;
};

using WeightData = WeightInfo;

// An mmap'ed file; unmapped on destruction.
struct MappedFile {
  void* data = nullptr;
  size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
};

using FileData = FileInfo;

struct BundleData {
  std::string dir;
  std::vector<FileData> files;
  std::string name, tool_version, toolchain, triple;
  std::vector<std::string> required_features;
  uint32_t kernel_abi_version = 0;
  // The kernel libraries: [0] the baseline (bundle.fb's cpu_library, cpu, required_cpu_features;
  // its path empty when the bundle has no kernels), then the faster ones, fastest first.
  std::vector<CpuLibraryInfo> cpu_libraries;
  size_t cpu_library = 0;  // the one chosen and loaded at open
  std::vector<CudaImageInfo> cuda_images;  // format 1.8
  std::string cuda_math;  // format 1.9: "tf32", "f16", "bf16", or empty (f32)
  uint32_t format_major = 0, format_minor = 0;
  std::vector<WeightData> weights;
  std::vector<EntryData> entries;
  std::unique_ptr<MappedFile> weights_file;
  void* library = nullptr;  // dlopen handle
  // The kernels' threads (OpenOptions::num_threads) and the ctx every kernel call gets.
  std::unique_ptr<ThreadPool> pool;
  aotrace_kernel_ctx kernel_ctx{nullptr, nullptr};
  std::unique_ptr<CudaState, CudaStateDeleter> cuda;  // opened for cuda (last: destroyed first)
  ~BundleData();

  const uint8_t* weight_ptr(size_t index) const;
};

// Reads and validates bundle.fb (bundle_reader.cpp). Does not touch the other files.
Result<std::shared_ptr<BundleData>> read_bundle_fb(const std::string& dir,
                                                   const OpenOptions& options);

// Creates b.pool with `num_threads` threads (0: default_num_threads()) and b.kernel_ctx;
// invalid_argument when num_threads < 0 (entry.cpp).
Status start_thread_pool(BundleData& b, int num_threads);

// Runs variant `v` of `e` (inputs and outputs checked against it; entry.cpp). `rng`: the
// generator state (seed, offset) of a variant that draws random numbers. `kernel_seconds`
// (profile: one per call of the plan) accumulates each kernel call's wall time.
Status run_variant(const BundleData& b, const EntryData& e, const VariantData& v,
                   const std::vector<TensorRef>& inputs, const std::vector<TensorRef>& outputs,
                   const int64_t* rng = nullptr, double* kernel_seconds = nullptr);

// The bundle's CUDA side for OpenOptions::device = cuda: driver, GPU 0, image, weights, slots
// (cuda_run.cpp). Device guards then pass tensors on either device.
Status open_cuda(BundleData& b, const OpenOptions& options);
// run_variant on the GPU, after run_variant's checks: `symbols` the call's values, `rng` the
// generator state of a variant that draws random numbers.
Status run_variant_cuda(const BundleData& b, const VariantData& v, const std::vector<TensorRef>& inputs,
                        const std::vector<TensorRef>& outputs, const int64_t* symbols, const int64_t* rng,
                        double* kernel_seconds);

// The same from the bytes of a bundle.fb (`dir` only names the bundle in messages; fuzzed).
Result<std::shared_ptr<BundleData>> parse_bundle_fb(const std::string& dir, std::vector<uint8_t> buf);

// Dynamic dims (entry.cpp): the symbols' values read from `inputs` (guards passed) into `out`
// (v.symbols.size() values); the size a shape code gives (>= 0: itself; < 0: its program).
void bind_symbols(const VariantData& v, const std::vector<TensorRef>& inputs, int64_t* out);
int64_t dim_size(const VariantData& v, int64_t code, const int64_t* symbols);
// The value of a size program (bundle.fbs SymProgram, checked by the reader) at these symbols.
int64_t eval_sym_program(const std::vector<int64_t>& program, const int64_t* symbols);
// The concrete shape of raw shape codes.
std::vector<int64_t> concrete_shape(const VariantData& v, const std::vector<int64_t>& codes, const int64_t* symbols);

// Guard evaluation (guards.cpp).
bool guard_holds(const GuardData&, const std::vector<TensorRef>& inputs, std::string* got);
// The index of the first of `guards` that fails, guards.size() when all hold (the hit path).
size_t first_failed_guard(const std::vector<GuardData>& guards, const std::vector<TensorRef>& inputs);
Status no_variant_status(const EntryData&, const std::vector<TensorRef>& inputs,
                         const std::vector<size_t>& failed_guard);

// Padding buckets (buckets.cpp, format 1.7). A call of an entry with bucketed dims runs on
// `inputs`: the caller's tensors, or copies padded up to each dim's bucket (kept in `padded`).
struct BucketedCall {
  std::vector<Tensor> padded;
  std::vector<TensorRef> inputs;
  std::vector<int64_t> sizes;    // per EntryData::buckets: the call's size
  std::vector<int64_t> buckets;  // per EntryData::buckets: the bucket it runs at
  bool any_padded = false;
};
// invalid_argument when a size is above the last bucket or the inputs disagree on a dim.
Status bucket_call(const EntryData& e, const std::vector<TensorRef>& inputs, BucketedCall& call);
// The outputs of the bucket's variant cut back to the call's sizes (nothing when unpadded).
Status unbucket_outputs(const EntryData& e, const BucketedCall& call, std::vector<Tensor>& outputs);

}  // namespace aotrace::rt
