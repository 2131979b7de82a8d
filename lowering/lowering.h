// lowering/ — from a captured graph to native code and a plan (DESIGN §4).
//
//   lower_graph(): decompose → fold constants → CSE → DCE → pad conv inputs → pack weights →
//   fuse → schedule → codegen → memory plan, listed in lowering/pipeline.cpp. Produces one object file per variant
//   and CPU, and the variant's plan (the same for every CPU: only codegen differs between them).
//   link_cpu_library(): links the variants' objects with ld.lld-16 into one shared library.
//   kernel_cpus(): the CPUs a compile builds kernels for (portable baseline + the host's level).
//
// Numerics of the generated CPU kernels: torch's, per dtype (f16/bf16 are stored as such and
// computed in f32, rounded to nearest even when stored or cast; integer sums accumulate in i64).
// Where torch raises on bad *values* (kernels cannot raise), the kernels instead:
//   - gather / index_select with an index still out of range after wrapping negatives once:
//     clamp it to the nearest valid position (never read out of bounds);
//   - integer floor_div / remainder by zero: give 0 (INT_MIN // -1 wraps, as torch);
//   - argmax/argmin/reduce_max of an empty dim: give 0 / the reduction's identity.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace aotrace::lowering {

// Compiled objects by what they were compiled from (the driver keeps them in its compile cache):
// codegen asks before running LLVM's pipeline on a module and stores what it compiled, so that
// an unchanged kernel module is never compiled twice. Thread-safe: the CPUs' codegens run at once.
class ObjectCache {
 public:
  virtual ~ObjectCache() = default;
  // `material`: everything the object is a function of (LLVM and the pipeline's version, the
  // target, the module's IR).
  virtual std::optional<ir::Bytes> lookup(const std::string& material) const = 0;
  virtual void store(const std::string& material, const ir::Bytes& object) const = 0;
};

struct Options {
  std::string triple;    // empty: the host's ("x86_64-unknown-linux-gnu")
  std::string cpu;       // empty: "x86-64-v2" portable baseline
  std::string features;  // extra LLVM features ("+avx2,+fma"); empty: those of `cpu`
  int opt_level = 2;
  // More CPUs to emit the same kernels for ("x86-64-v4"): codegen runs once more per name, on
  // the same schedule (concurrently, each in its own LLVMContext), so symbols and plan are
  // shared and a runtime may load any of the libraries (LoweredVariant::extra_objects).
  std::vector<std::string> extra_cpus;
  // Where codegen finds and keeps compiled objects; none: every module goes through LLVM.
  const ObjectCache* object_cache = nullptr;
  // 3×3 stride-1 convs as Winograd F(m×m, 3×3) (lowering/winograd.cpp): where it pays
  // (automatic), for every conv it applies to (always: tests), or never (every conv direct).
  enum class Winograd { automatic, always, never };
  Winograd winograd = Winograd::automatic;
  // Its output tile m: 0 chooses per conv (F(4×4) where it pays), 2 or 4 for every conv.
  int64_t winograd_tile = 0;
  // The device the kernels run on: the CPU (an ELF object per variant, linked by
  // link_cpu_library), or CUDA (LLVM bitcode per variant, linked by link_cuda_kernels into PTX and
  // a cubin per arch; the CPU-only graph passes are skipped: lowering/cuda/).
  enum class Device { cpu, cuda };
  Device device = Device::cpu;
  // CUDA without a GPU (tests): each kernel's grid function, the very IR the GPU entry calls,
  // compiled for this CPU instead and exported with the CPU kernel ABI, running the whole grid
  // with block and thread ids as loop variables. The object links and runs like a CPU variant's.
  bool cuda_grid_emulation = false;
  // The GPUs link_cuda_kernels builds cubins for; PTX is made for the first (the oldest), which
  // newer GPUs' drivers compile.
  std::vector<std::string> cuda_archs = {"sm_80", "sm_90"};
  // The arithmetic of f32 matmuls and convs on the GPU (the spec's `options: {cuda_math: ...}`):
  // f32 FMAs, or tensor cores with the operands rounded to TF32 (10-bit mantissa: torch's
  // allow_tf32), f16 (10-bit mantissa, range ±65504) or bf16 (7-bit mantissa), sums in f32;
  // tensor cores need sm_80 or newer.
  enum class CudaMath { f32, tf32, f16, bf16 };
  CudaMath cuda_math = CudaMath::f32;
  // A warp per output for f32 sums, maxima and minima over at least this many positions
  // (lowering/cuda/plan.cpp; hidden `compile --cuda-warp-reduce-min N` for measuring on a GPU).
  int64_t cuda_warp_reduce_min = 256;
  // Innermost elements per thread of an elementwise GPU kernel whose innermost extent they divide,
  // read and written as one vector (lowering/cuda/plan.cpp): 4 (16 bytes of f32), or 1 or 2
  // (hidden `compile --cuda-vector-elements N` for measuring on a GPU).
  int64_t cuda_vector_elements = 4;
  // Stages of a tiled GEMM's shared tiles (emit_tiled_gemm.cpp): 1, or 2 (double-buffered, the
  // next step's loads in flight during this one's products; hidden `compile --cuda-gemm-stages N`
  // for measuring on a GPU).
  int64_t cuda_gemm_stages = 1;
  // An f32 sum, maximum or minimum of many positions into few outputs is two reductions on the
  // GPU (lowering/cuda/split_reductions.cpp), the first over chunks of at least this many
  // positions (hidden `compile --cuda-split-reduce-chunk N` for measuring on a GPU: a huge N
  // never splits).
  int64_t cuda_split_reduce_chunk = 2048;
  // Rows of at least this many positions take a thread block each on the GPU, not a thread: sorts
  // (and topks over a static axis, by chunks or sorted whole: lowering/cuda/sort_wide_topks.cpp), and cumsums
  // and scatters along an innermost axis (lowering/cuda/plan.cpp block_rows; hidden `compile
  // --cuda-block-row-min N` for measuring on a GPU: a huge N keeps a thread per row).
  int64_t cuda_block_row_min = 256;
  // Passes whose result is printed to stderr (`compile --dump`): names of pass_names(), or
  // "all". The environment variable AOTRACE_DUMP (after-<pass>,... or all) adds to it.
  std::vector<std::string> dump;
};

// "f32", "tf32", "f16", "bf16" (the spec's and the bundle's names), and back (none: unknown).
const char* cuda_math_name(Options::CudaMath math);
std::optional<Options::CudaMath> cuda_math_named(std::string_view name);

// The lowering passes in pipeline order, as --dump and --timings name them.
const std::vector<std::string>& pass_names();

struct PassTiming {
  std::string pass;
  double seconds = 0;
};

struct LoweredVariant {
  ir::Graph graph;                   // what the plan runs (after the graph passes): the plan's
                                     // Weight buffers index graph.weights (pre-packed ones too)
  ir::ExecutionPlan plan;
  ir::Bytes object;                  // ELF relocatable object with the plan's kernels; for
                                     // Device::cuda, LLVM bitcode (link_cuda_kernels), or with
                                     // cuda_grid_emulation an ELF object again
  std::vector<ir::Bytes> extra_objects;  // the same kernels, one object per Options::extra_cpus
  std::vector<PassTiming> timings;
  int num_kernels() const { return static_cast<int>(plan.calls.size()); }
};

// `symbol_prefix` makes kernel symbols unique across variants in one library ("forward_v0_").
LoweredVariant lower_graph(const ir::Graph& graph, const std::string& symbol_prefix,
                           const Options& options);

// Links objects into a shared library (bytes of the .so) with ld.lld-16.
ir::Bytes link_cpu_library(const std::vector<ir::Bytes>& objects, const Options& options);

// The CUDA kernels of every variant of a bundle (lowering/cuda/link.cpp): one LLVM module with
// libdevice's math, as PTX for the oldest of Options::cuda_archs (which newer GPUs' drivers
// compile) and a cubin per arch assembled from it by the toolkit's ptxas (CUDA_HOME, else
// /usr/local/cuda).
struct CudaLibrary {
  std::string ptx_arch;  // "sm_80": the oldest arch
  std::string ptx;
  std::vector<std::pair<std::string, ir::Bytes>> cubins;  // ("sm_90", cubin), in cuda_archs order
};
// `bitcode`: LoweredVariant::object of variants lowered for Device::cuda. A missing toolkit or a
// bad arch name is a UserError naming what to install or pass.
CudaLibrary link_cuda_kernels(const std::vector<ir::Bytes>& bitcode, const Options& options);
// The CUDA toolkit's folder: $CUDA_HOME, else /usr/local/cuda; user_error when it has no ptxas
// or libdevice (before any capture), or when an arch is not sm_<digits> of 75 or more.
std::string check_cuda_toolkit(const Options& options);

// The triple lower_graph uses for `options` (host default resolved).
std::string resolved_triple(const Options& options);
// user_error unless the CPU backend builds for `options`' triple (ELF on Linux: x86_64,
// aarch64) and its CPU is one LLVM knows for that triple, listing the valid choices
// (target_check.cpp). Before any capture or lowering: LLVM aborts on an unknown CPU.
void check_target(const Options& options);
// The CPU the kernels are compiled for ("x86-64-v2" by default on x86-64; "native": the host's).
std::string resolved_cpu(const Options& options);
// Every feature that CPU enables (sorted; empty off x86-64), for the bundle's hardware preflight.
std::vector<std::string> target_cpu_features(const Options& options);
// The CPUs to build kernels for: the portable baseline first, then faster ones from slowest to
// fastest (today at most one). With `options.cpu` set, or off x86-64: resolved_cpu alone.
// Otherwise (DESIGN §4) "x86-64-v2", then the fastest x86-64 level this host runs, when there
// is one: "x86-64-v4" with AVX-512 (F, BW, CD, DQ, VL), else "x86-64-v3" with AVX2 + FMA
// (LLVM's host feature detection against LLVM's tables for the levels).
std::vector<std::string> kernel_cpus(const Options& options);

}  // namespace aotrace::lowering
