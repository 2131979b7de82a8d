// Private to lowering/: the CUDA backend (DESIGN §4). The kernels are the CPU backend's bodies
// (cpu::emit_kernel_body: one emitter) under a GPU mapping of their tasks:
//   sort_wide_topks.cpp, split_reductions.cpp, weight_layout.cpp: the GPU's graph passes
//   plan.cpp     cuda-plan: matmuls and convs as tiled GEMMs (a thread block per tile), warp
//                matmuls and reductions (a warp per output; a block for few long reductions),
//                every other kernel as independent
//                tasks, one per output element where the loop nest has an innermost dim
//                (CpuPlan::row_chunk 1), else the emitter's tasks
//   codegen.cpp  per kernel a grid function (closure, tasks, block, block_dim, thread) that runs
//                task block·block_dim + thread of the body, and the entry that calls it: a PTX
//                kernel reading the ids from the special registers, or (cuda_grid_emulation) a
//                CPU-ABI function looping over blocks and threads
//   link.cpp     link_cuda_kernels: the variants' bitcode in one module, libdevice's math, PTX
//                per arch through LLVM's NVPTX backend, cubins through the toolkit's ptxas
// Kernel parameters of a PTX kernel: (closure, tasks): closure is a device array of the
// kernel's buffer pointers followed by a pointer to the symbols when it reads them
// (cpu::KernelBody), tasks the launch's thread count (KernelCall::threads).
#pragma once

#include <optional>
#include <vector>

#include "lowering/cpu/plan.h"

namespace aotrace::lowering::cuda {

// Threads per block of every launch.
constexpr int32_t kBlock = 256;
// Static shared memory a kernel may declare (every arch: more needs the dynamic opt-in).
constexpr int64_t kStaticSharedBytes = 48 * 1024;
// The oldest arch whose tensor cores take mma.sync on TF32, f16 and bf16 (cuda_math, and f16 and
// bf16 GEMMs).
constexpr int kMmaMinArch = 80;

constexpr const char* kNvptxTriple = "nvptx64-nvidia-cuda";
// LLVM's data layout of nvptx64 (what the NVPTX target machine gives), so that codegen writes
// bitcode without a target machine that links into link_cuda_kernels' module as it is.
constexpr const char* kNvptxDataLayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64";

// A warp (kWarpLanes threads) per output element of a matmul with a long K and too few outputs
// to fill the GPU with a thread each, and too few rows or columns for a tiled GEMM (f32, K >=
// 256, at most 2^17 outputs, fewer than kTiledMinSize rows or columns, at the dims' maxima: a
// matrix-vector product):
// the lanes stride K (coalesced loads of A's row and of B's column kept [N, K], as Linear's
// weight is) and a shuffle butterfly sums their partials. Else a thread per output, B read
// [K, N] (weight_layout.cpp) by a tiled GEMM or a thread per output.
constexpr int64_t kWarpLanes = 32;
// Reductions of at least this many positions into at most kBlockReduceMaxOutputs outputs (both
// at the sizes' maxima) take a thread block per output (plan.cpp block_reduction).
constexpr int64_t kBlockReduceMinPositions = 16384;
constexpr int64_t kBlockReduceMaxOutputs = 64;
// A reduction of many positions into few outputs is split in two (split_reductions.cpp): the
// first into at most kSplitTargetWarps outputs (warps: 16 per multiprocessor of a 132-SM H100 is
// 2112; twice that hides the stragglers), at least kSplitMinParts partials per output.
constexpr int64_t kSplitTargetWarps = 4096;
constexpr int64_t kSplitMinParts = 32;
// A thread block per row (Options::cuda_block_row_min; plan.cpp block_rows) takes kRowTile
// positions of its row at a time in shared memory (sorts: 16 KiB of slots; cumsums: 8 sums a
// thread).
constexpr int64_t kRowTile = 2048;
// The most slots (rows × n) of the sorted indices that a topk sorting its rows whole may take
// (cuda_sort_wide_topks): 32 MiB.
constexpr int64_t kSortedTopkMaxSlots = int64_t{1} << 22;
// Rows and columns (at the sizes' maxima) from which a matmul or conv is a tiled GEMM.
constexpr int64_t kTiledMinSize = 16;
bool warp_matmul(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max);
// The positions each output of an f32 sum, max, min, argmax or argmin reduces (symbolic extents
// at their maxima; plan.cpp), or none: the reductions a warp, a block or a split can take.
std::optional<int64_t> reduced_positions(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max);

// A matmul or conv kernel that is not a warp matmul, as a block-tiled GEMM (TiledGemmPlan,
// emit_tiled_gemm.cpp) where it has at least 16 rows and columns and 8 terms per output (at
// the sizes' maxima); its arithmetic f32 FMAs or tensor-core mma on TF32, f16 or bf16 operands
// (Options::cuda_math), its shared tiles in Options::cuda_gemm_stages stages.
std::optional<cpu::TiledGemmPlan> tiled_gemm(const cpu::KernelGraph& kg, const Options& options);

// Topks over static axes of at least `min_positions` (Options::cuda_block_row_min) by chunks of
// their rows, or as their rows sorted whole, sliced and gathered (sort_wide_topks.cpp).
ir::Graph cuda_sort_wide_topks(ir::Graph g, int64_t min_positions);

// Matmuls read views of weights (permute(W), slices of it) as new [K, N] weights (weight_layout.cpp),
// except warp matmuls.
ir::Graph cuda_weight_layout(ir::Graph g);

// f32 sums, maxima and minima of many positions into few outputs as two reductions, the first
// over chunks of at least `chunk` positions (Options::cuda_split_reduce_chunk).
ir::Graph cuda_split_reductions(ir::Graph g, int64_t chunk);

std::vector<cpu::CpuPlan> plan_cuda_kernels(const Schedule& s, const Options& options);

// The kernels of `s` as LLVM bitcode for NVPTX, or, with options.cuda_grid_emulation, as an ELF
// object for the host CPU. `threads` gets each kernel's thread count (its tasks × its plan's
// lanes).
ir::Bytes codegen_cuda(const Schedule& s, const std::vector<cpu::CpuPlan>& plans, const Options& options,
                       std::vector<ir::SymExpr>& threads, std::vector<PassTiming>* phases = nullptr);

}  // namespace aotrace::lowering::cuda
