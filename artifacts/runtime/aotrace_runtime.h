// aotrace runtime: loads a bundle (DESIGN §5), checks guards, runs the precompiled kernels.
// Shipped alone with every bundle: C++17, libc + libdl + pthread, FlatBuffers and xxHash headers.
// Nothing of the compiler is included here.
//
//   auto bundle = aotrace::rt::Bundle::open("m.aot");
//   if (!bundle.ok()) { fprintf(stderr, "%s\n", bundle.status().message().c_str()); ... }
//   auto entry = bundle->entry("forward");
//   auto outs = entry->run({aotrace::rt::TensorRef{DType::f32, {8, 784}, x_data}});
//
// Errors are values (Status / Result<T>), never exceptions (STYLE 10).
// Threads: a Bundle and its Entries may be used from any number of threads at once; concurrent
// runs take separate scratch arenas from a per-variant pool (grown only when more runs are in
// flight than before), so a steady state allocates nothing per call beyond `run`'s outputs
// (`run_into` allocates nothing).
// The kernels' parallel loops run on the Bundle's thread pool (OpenOptions::num_threads; the
// calling thread takes part); a loop that finds the pool busy with another run's loop runs on
// its own thread instead of waiting (thread_pool.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace aotrace::rt {

// ---------------------------------------------------------------------------------------------
// Status and Result<T>
enum class StatusCode : int {
  ok = 0,
  invalid_argument = 1,  // the caller's inputs are wrong (guard miss, wrong count, bad buffer)
  not_found = 2,         // no such entry / file
  data_loss = 3,         // the bundle is corrupt, truncated or inconsistent
  unsupported = 4,       // newer format major, unknown required feature, other device
  io_error = 5,          // the OS refused (open, mmap, dlopen)
  internal = 6,          // a bug in the runtime
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit, so `return value;` works
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: must not be ok

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_ = Status(StatusCode::internal, "empty Result");
};

// ---------------------------------------------------------------------------------------------
// Tensors
enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i8, u8, b8 };  // schema order

size_t dtype_size(DType);
const char* dtype_name(DType);  // torch spelling: "float32", "float16", …, "bool"

enum class DeviceKind : uint8_t { cpu, cuda };

// A view of caller memory. `strides` (in elements) empty means row-major contiguous.
struct TensorRef {
  TensorRef() = default;
  TensorRef(DType dtype_, std::vector<int64_t> shape_, void* data_,
            std::vector<int64_t> strides_ = {}, DeviceKind device_ = DeviceKind::cpu)
      : dtype(dtype_), shape(std::move(shape_)), data(data_), strides(std::move(strides_)),
        device(device_) {}

  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  void* data = nullptr;
  std::vector<int64_t> strides;
  DeviceKind device = DeviceKind::cpu;

  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  bool is_contiguous() const;
};

// An owning, 64-byte aligned, contiguous host tensor.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape);  // zero-filled

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  size_t nbytes() const { return nbytes_; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T>
  T* data_as() { return static_cast<T*>(data()); }
  template <class T>
  const T* data_as() const { return static_cast<const T*>(data()); }
  TensorRef ref() const { return TensorRef{dtype_, shape_, data_.get(), {}, DeviceKind::cpu}; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  size_t nbytes_ = 0;
  std::unique_ptr<void, Free> data_;
};

std::string shape_str(const std::vector<int64_t>& shape);  // "[5, 784]"

// A 0-d tensor holding `value`: how a Python int (int64), float (float64) or bool input is
// passed (Entry::scalar_input); also float32 and the other integer dtypes (the value converted,
// as a cast would). f16 and bf16: invalid_argument.
Result<Tensor> scalar_tensor(DType dtype, double value);

// ---------------------------------------------------------------------------------------------
// What a bundle declares (read from bundle.fb at open).
struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // -1 for a dynamic dim (format 1.5): see dims
  std::string source;
  // Per dim: "" when static, else the size as an expression of the variant's dynamic dims
  // ("seq", "seq*2"), computed per call from the inputs (Entry::output_shapes).
  std::vector<std::string> dims{};
};

// The Python output structure, flattened in preorder (node 0 is the root).
struct OutputNode {
  // Constant: a Python value the entry returns beside its tensors (None, a number, a bool, a
  // string), not an output tensor.
  enum class Kind : uint8_t { Leaf, Tuple, List, Dict, Constant };
  Kind kind = Kind::Leaf;
  int leaf = 0;                   // Leaf: index into the outputs
  std::vector<int> children;      // indices into the node list, each after this node
  std::vector<std::string> keys;  // Dict: one per child
  std::string value;              // Constant: its Python repr ("None", "3", "'ok'")
};

struct OpenOptions {
  bool verify_hashes = true;  // sizes are always checked; XXH3 of every file unless false
  // Threads the kernels' parallel loops use, the calling thread included (the Bundle owns a pool
  // of num_threads - 1 workers). 0: AOTRACE_NUM_THREADS if set, else the CPUs this process may
  // use. 1: every kernel runs on the calling thread.
  int num_threads = 0;
  // CPU features (LLVM names: "avx2", "avx512f") to treat as absent when choosing the kernel
  // library, so that open() falls back to a slower one (the baseline when every faster library
  // needs one of them): for tests, and to compare a faster library's results with the
  // baseline's. The environment variable AOTRACE_DISABLE_CPU_FEATURES ("avx2,fma") adds to it.
  std::vector<std::string> disabled_cpu_features{};
  // Where the kernels run. cpu: the bundle's CPU kernels. cuda: its CUDA kernels (format 1.8,
  // `targets: [cpu, cuda]` or `[cuda]`) on GPU 0, through its NVIDIA driver (libcuda.so.1,
  // loaded with dlopen by open() only then; AOTRACE_CUDA_DRIVER names another library). Runs
  // then take tensors in host memory (copied in and out per call) or in GPU memory
  // (TensorRef::device cuda, a device pointer: Bundle::allocate, or the caller's own CUDA
  // allocations in GPU 0's primary context); a run returns once its outputs are written.
  DeviceKind device = DeviceKind::cpu;
  // cuda: each variant's launches are captured as a CUDA Graph once per set of dynamic-dim sizes
  // and replayed (false, or AOTRACE_CUDA_GRAPHS=0: launched one by one, for debugging and
  // comparison).
  bool cuda_graphs = true;
};

// One kernel library of a bundle: the portable baseline, or the same kernels built for a faster
// CPU (format 1.2), which open() prefers when this CPU has every feature it needs.
struct CpuLibraryInfo {
  std::string path;                   // in the bundle: "cpu/x86_64-unknown-linux-gnu.x86-64-v4.so"
  std::string cpu;                    // "x86-64-v4"; empty before format 1.1
  std::vector<std::string> features;  // CPU features it needs ("avx512f")
};

// A CUDA image (format 1.8): the bundle's CUDA kernels as a cubin for one GPU architecture, or
// as PTX that the drivers of newer GPUs compile.
struct CudaImageInfo {
  std::string path;  // in the bundle: "cuda/sm_90.cubin"
  std::string arch;  // "sm_90"
  bool ptx = false;
};

struct EntryData;
struct BundleData;

// GPU memory of a bundle opened for cuda (Bundle::allocate), freed with the last copy of it.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t nbytes() const { return nbytes_; }
  void* data() const { return memory_.get(); }  // a CUDA device pointer
  TensorRef ref() const { return TensorRef{dtype_, shape_, memory_.get(), {}, DeviceKind::cuda}; }

 private:
  friend class Bundle;
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  size_t nbytes_ = 0;
  std::shared_ptr<void> memory_;
};

class Entry {
 public:
  const std::string& name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  size_t num_variants() const;
  const std::string& variant_name(size_t variant) const;
  // The spec's profiles the variant was compiled for ("online"; several when their graphs and
  // guards came out the same).
  const std::vector<std::string>& variant_profiles(size_t variant) const;
  const std::vector<TensorInfo>& inputs(size_t variant = 0) const;
  const std::vector<TensorInfo>& outputs(size_t variant = 0) const;
  const std::string& output_tree() const;             // "(0, [1, 2])"
  const std::vector<OutputNode>& output_nodes() const;
  std::vector<std::string> guard_texts(size_t variant) const;
  // The inputs the variant changes in place (x.add_(1), x[0] = 0 on an input), by index into
  // inputs(): run and run_into write their new values into the caller's tensors after the
  // kernels ran, as torch eager would have left them (the new values are computed into
  // scratch memory allocated per call, so that no kernel reads an input it already wrote).
  const std::vector<int32_t>& updated_inputs(size_t variant = 0) const;
  // Random numbers (torch.randn, dropout in training mode, ...): a variant that draws them uses
  // a counter-based generator (Philox4x32-10) whose state is the entry's seed (0 until set)
  // and an offset that each call advances, so that successive calls draw new numbers and the
  // same seed repeats the same sequence of calls. manual_seed sets the seed and restarts the
  // offsets. The numbers are not torch's: their distribution is.
  void manual_seed(uint64_t seed) const;
  bool draws_random(size_t variant = 0) const;
  // Where the variant's input `input` must be when the bundle runs on a GPU: cuda for an input
  // declared `device: cuda` in the spec (a device guard: GPU memory only there), else cpu (host
  // or GPU memory there). On the CPU every input is host memory.
  DeviceKind input_device(size_t variant, size_t input) const;
  // Whether input `input` is a Python scalar in some variant: on a GPU too it is passed in host
  // memory (its guard reads the value).
  bool stays_on_host(size_t input) const;
  // Whether input `input` is a Python int, float or bool the variant was compiled for (passed as
  // a 0-d int64, float64 or bool tensor and guarded to hold `*value`).
  bool scalar_input(size_t variant, size_t input, double* value = nullptr) const;

  // The dynamic dims of a variant (format 1.5): name, range, and the input dim they are read
  // from; empty when every dim is static.
  struct DynamicDim {
    std::string name;
    int64_t min = 0, max = 0, multiple_of = 1;
    size_t input = 0, dim = 0;
  };
  std::vector<DynamicDim> dynamic_dims(size_t variant) const;
  // The shapes of the variant's outputs (then of its updated inputs' new values) for these
  // inputs: dynamic dims computed from theirs. invalid_argument when the inputs do not fit.
  Result<std::vector<std::vector<int64_t>>> output_shapes(size_t variant, const std::vector<TensorRef>& inputs) const;

  // Evaluates every variant's guards in one pass; the first variant whose guards all hold.
  // On a miss: invalid_argument naming the inputs and, per variant, the guard that rejected
  // them with its Python origin.
  Result<size_t> select(const std::vector<TensorRef>& inputs) const;

  // Selects a variant, allocates the outputs and runs the kernels.
  Result<std::vector<Tensor>> run(const std::vector<TensorRef>& inputs) const;
  // Same, and the variant that ran in *out_variant (the index variant_name, outputs and
  // variant_profiles take), set once the guards chose it.
  Result<std::vector<Tensor>> run(const std::vector<TensorRef>& inputs, size_t* out_variant) const;
  // Same, writing into caller buffers (contiguous, of the selected variant's output shapes).
  Status run_into(const std::vector<TensorRef>& inputs,
                  const std::vector<TensorRef>& outputs) const;
  Status run_into(const std::vector<TensorRef>& inputs, const std::vector<TensorRef>& outputs,
                  size_t* out_variant) const;

  // Where a call's time goes: runs the variant the inputs select once to warm up, then `calls`
  // times timing each kernel call (wall time; a kernel's threads included). In plan order.
  struct KernelTime {
    std::string symbol;
    std::string what;  // what it computes: "conv f32[…] <- … + relu (model.py:12)"; "" before format 1.6
    double mean_ms = 0;
  };
  Result<std::vector<KernelTime>> profile(const std::vector<TensorRef>& inputs, int calls) const;

 private:
  friend class Bundle;
  Entry(std::shared_ptr<const BundleData> bundle, const EntryData* data)
      : bundle_(std::move(bundle)), data_(data) {}
  std::shared_ptr<const BundleData> bundle_;
  const EntryData* data_;
};

class Bundle {
 public:
  // Reads DIR/bundle.fb (verified before any field is read), checks the format version and
  // required features, verifies every file's size and hash, maps weights.bin and loads the CPU
  // kernels, resolving every symbol the plans call.
  static Result<Bundle> open(const std::string& dir, const OpenOptions& options = {});

  Result<Entry> entry(const std::string& name) const;
  std::vector<std::string> entry_names() const;

  const std::string& name() const;
  uint32_t format_major() const;
  uint32_t format_minor() const;
  const std::string& tool_version() const;
  const std::string& toolchain() const;
  const std::string& triple() const;
  // The kernel library open() chose and loaded: the first faster library whose features this
  // CPU has (less OpenOptions::disabled_cpu_features), else the portable baseline.
  const std::string& cpu() const;                         // its CPU: "x86-64-v4"
  const std::vector<std::string>& cpu_features() const;  // the features it needs ("avx2")
  const std::string& cpu_library() const;                 // its path: "cpu/<triple>.<cpu>.so"
  // Every kernel library of the bundle: the baseline first, then faster ones, fastest first.
  const std::vector<CpuLibraryInfo>& cpu_libraries() const;
  // The CUDA images (format 1.8; empty for a CPU-only bundle), hashed at open; one is loaded
  // when the bundle is opened for cuda (choose_cuda_image).
  const std::vector<CudaImageInfo>& cuda_images() const;
  int num_threads() const;  // of the kernels' thread pool, caller included (OpenOptions)
  // Where its kernels run (OpenOptions::device); for cuda, GPU 0's arch ("sm_90") and the image
  // loaded for it ("cuda/sm_90.cubin", or the PTX its driver compiled); empty for cpu.
  DeviceKind device() const;
  const std::string& cuda_arch() const;
  const std::string& cuda_image() const;
  // Opened for cuda: GPU memory for a tensor (contents undefined), and a copy between any two
  // contiguous tensors of one dtype and size, each in host or GPU memory (returns when done).
  Result<DeviceTensor> allocate(DType dtype, std::vector<int64_t> shape) const;
  Status copy(const TensorRef& dst, const TensorRef& src) const;
  // allocate, then copy `src` in: a GPU copy of a tensor.
  Result<DeviceTensor> to_device(const TensorRef& src) const;

  // Runs every variant on its golden inputs (golden/ in the bundle) and compares the outputs
  // with the golden outputs (torch eager's): f32/f64 within 1e-3 of each element plus 1e-4 of
  // the tensor's largest magnitude (at least 1); f16 1e-2 and 1e-3, bf16 5e-2 and 1e-2; others
  // exactly.
  // ok with `checked` pairs counted; data_loss naming the first mismatch.
  Status selftest(size_t* checked = nullptr) const;

 private:
  explicit Bundle(std::shared_ptr<const BundleData> data) : data_(std::move(data)) {}
  std::shared_ptr<const BundleData> data_;
};

// The bundle format this runtime reads: every minor of its major (COMPATIBILITY.md).
constexpr uint32_t kFormatMajor = 1;
constexpr uint32_t kFormatMinor = 9;
// Required features this runtime knows (a bundle naming any other is refused).
std::vector<std::string> known_features();

// Hardware preflight: whether this runtime can check CPU feature `name` (LLVM spelling, "avx2"),
// and those of `required` this CPU lacks (unknown names count as missing).
bool cpu_feature_known(const std::string& name);
std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required);
// The library of `libraries` (a bundle's: baseline first, then faster ones, fastest first) that
// open() loads on this CPU: the first faster one needing no feature that is missing here or in
// `disabled` (or AOTRACE_DISABLE_CPU_FEATURES), else 0, the baseline. -1 when libraries is
// empty or this CPU lacks a feature of the baseline.
int choose_cpu_library(const std::vector<CpuLibraryInfo>& libraries,
                       const std::vector<std::string>& disabled = {});
// Whether kernels built for `triple` run on this machine's architecture (open() refuses others).
bool triple_matches_host(const std::string& triple);

// ---------------------------------------------------------------------------------------------
// A bundle's metadata, read and validated as open() reads it but without loading its kernels or
// weights, so that bundles for other machines can be described too (`aotrace inspect`).
struct TextWithOrigin {
  std::string text;    // "L['x'].size()[0] == 8"
  std::string origin;  // "model.py:12", or empty
};
struct DynamicDimInfo {  // format 1.5: the size of dim `dim` of input `input`
  std::string name;
  size_t input = 0, dim = 0;
  int64_t min = 0, max = 0, multiple_of = 1;
};
struct VariantInfo {
  std::string name;
  std::vector<std::string> profiles;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<int32_t> updated_inputs;  // inputs changed in place (format 1.4)
  std::vector<TextWithOrigin> guards, assumptions;
  std::vector<std::string> kernels;     // the memory plan's calls, in order
  int64_t arena_bytes = 0;              // at the dynamic dims' maxima
  int64_t arena_bytes_at_min = 0;       // at their minima (format 1.6; arena_bytes before)
  size_t golden_pairs = 0;
  std::vector<DynamicDimInfo> dynamic_dims;
  // The plan for a CUDA GPU (format 1.8): its kernels (empty when the bundle has none) and
  // its device arena at the dynamic dims' maxima.
  std::vector<std::string> cuda_kernels;
  int64_t cuda_arena_bytes = 0;
};
// A bucketed dim (format 1.7): calls are padded up to one of `sizes`.
struct BucketInfo {
  struct Axis {
    size_t index = 0, axis = 0;  // an input (padded, with `pad`) or an output (cut back)
    double pad = 0;
  };
  std::string name;
  std::vector<int64_t> sizes;
  std::vector<Axis> inputs, outputs;
};
struct EntryInfo {
  std::string name;
  std::string output_tree;  // "(0, [1, 2])"
  std::vector<VariantInfo> variants;
  std::vector<BucketInfo> buckets;
};
struct WeightInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // in weights.bin
  uint64_t size = 0;
};
struct FileInfo {
  std::string path;  // relative to the bundle directory
  uint64_t size = 0;
  uint64_t xxh3 = 0;
};
struct BundleInfo {
  std::string dir, name, tool_version, toolchain, triple;
  uint32_t format_major = 0, format_minor = 0, kernel_abi_version = 0;
  std::vector<std::string> required_features;
  // The kernel libraries: [0] the baseline (its path empty when the bundle has no kernels), then
  // the faster ones, fastest first (choose_cpu_library picks among them).
  std::vector<CpuLibraryInfo> cpu_libraries;
  std::vector<EntryInfo> entries;
  std::vector<WeightInfo> weights;
  std::vector<FileInfo> files;
  std::vector<CudaImageInfo> cuda_images;  // format 1.8; empty: CPU kernels only
  std::string cuda_math;  // format 1.9: "tf32", "f16", "bf16" (their matmuls on tensor cores), empty: f32
};
// not_found when `dir` holds no bundle.fb; open()'s errors for one it cannot read.
Result<BundleInfo> read_bundle_info(const std::string& dir);

// The CUDA side of this machine (a bundle's CUDA images, format 1.8): libcuda.so.1 is loaded
// with dlopen only by this call (and by Bundle::open for cuda), and GPU 0 described.
struct CudaDeviceInfo {
  bool driver = false;      // libcuda.so.1 loaded and cuInit succeeded
  std::string error;        // why not, or which driver call failed
  int driver_version = 0;   // cuDriverGetVersion: 13000 is CUDA 13.0
  int devices = 0;
  std::string arch;         // GPU 0: "sm_90"
  uint64_t memory_bytes = 0;
};
CudaDeviceInfo probe_cuda_device();
// The image of `images` a GPU of `arch` ("sm_90") loads: its own cubin, else the newest PTX made
// for an arch not newer than it (which its driver compiles); -1 when none fits.
int choose_cuda_image(const std::vector<CudaImageInfo>& images, const std::string& arch);

}  // namespace aotrace::rt
