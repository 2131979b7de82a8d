// Private to lowering/cpu/: the CPU backend's per-kernel plans, decided after schedule and
// before codegen (pipeline pass "cpu-plan", printed by `--dump cpu-plan`), as data that tests
// check without LLVM (DESIGN §4: schedule is a stage). The LLVM emitter (kernel_emitter.h)
// carries them out. Today: each kernel's work estimate, how each GEMM kernel is blocked
// (GemmPlan), the depthwise and Winograd kernels' plans, and the generic loop's split. A plan
// depends on the
// graph and the kernel only, never on the CPU it is emitted for, so one plan serves every
// CPU variant's codegen (the vector width of a depthwise or Winograd plan is narrowed per CPU
// by for_target).
//   plan.cpp   strided views, reshape groups, GEMM, depthwise and Winograd plans, work estimates,
//              plan_cpu_kernels and describe
// Test: lowering_tests CpuPlan.*, and every GEMM test through codegen.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/winograd.h"
#include "lowering/passes.h"

namespace aotrace::lowering::cpu {

// An int-list attribute (also given as a constant Shape).
std::vector<int64_t> int_list(const ir::Attrs& attrs, const std::string& key);
ir::Shape to_shape(const std::vector<int64_t>& dims);

// Compile-time facts about a dim. A symbolic dim is never 1 (sizes 0 and 1 are static variants),
// so size-1 broadcasting stays a compile-time decision.
inline bool is_one(const ir::SymExpr& e) { return e.as_constant() == std::optional<int64_t>(1); }
inline bool is_zero(const ir::SymExpr& e) { return e.as_constant() == std::optional<int64_t>(0); }

// A value read straight from a materialised buffer through views only: element idx is at
// buffer[offset + Σ idx[d]·strides[d]] (strides in elements, 0 for broadcast dims). What a
// GEMM packs with plain loads instead of evaluating the view's index map per element.
struct StridedView {
  ir::ValueId buffer = -1;  // the materialised value read
  ir::SymExpr offset = 0;
  std::vector<ir::SymExpr> strides;  // symbolic where the buffer's dims are
};

// The dim groups of a reshape from `src` to `dst` with equal element counts: dst[i0, i1) holds
// the elements of src[j0, j1), and each dim outside a group maps to one of the same size.
// Groups close where their products are equal SymExprs (static dims: equal numbers), growing
// the side whose product is smaller at `at` (max_bindings); symbolic products that never meet
// end in one last group (linearised and split again: correct for every size). `empty`: a group
// met a static 0.
struct DimGroup {
  size_t i0, i1, j0, j1;
  bool empty = false;
};
std::vector<DimGroup> reshape_groups(const ir::Shape& dst, const ir::Shape& src,
                                     const ir::SymBindings& at);

// How a GEMM kernel is blocked (emit_gemm.cpp): C[M×N] += A[M×K]·B[K×N] per batch, in tasks of
// one MT×NC block of C; each task walks K in KC panels, packs its B panel once and A in MC-row
// blocks, both as MR-row / NR-column micro-panels.
struct GemmPlan {
  int node = -1;  // the matmul or conv: its index in the graph's nodes
  // The operands as A[M×K] and B[K×N]: matmul's first and second; conv's weight and input
  // (B is its im2col).
  ir::ValueId a = -1, b = -1;
  bool is_conv = false;
  // The sizes, symbolic where the shapes are: evaluated in the kernel (edges, task counts).
  ir::SymExpr batches = 1, m = 0, n = 0, k = 0;
  // A grouped conv (resnext's, regnet's: groups > 1, several channels per group) is one GEMM
  // per image and group: M and K are a group's (Cout/groups rows, Cin/groups·window), `batches`
  // counts images × groups, and a task's batch index is [image, group] (image 0 where merged).
  int64_t groups = 1;
  // The blocking is fixed at compile time (from the sizes at their maxima where symbolic).
  int64_t mr = 6, nr = 16, mc = 72, kc = 256;
  int64_t mt = 72;  // rows per task: a multiple of MC (fewer B packings, enough tasks)
  // Columns per task: 128 for a matmul; whole rows for a conv, so symbolic with its width.
  // `nc_bound` bounds it for every size (the B panel and the tile are sized by it).
  ir::SymExpr nc = 128;
  int64_t nc_bound = 128;
  // Conv: N walks output rows of `row` columns (NC is a multiple of it), of which the first
  // `out_w` are the output's. `wide`: a stride-1 conv of an unpadded, materialised input is
  // computed on the input's width (row = input width), so that B[k, n] = x_flat[offset(k) + n]:
  // im2col rows are contiguous slices, packed with vector loads; the extra columns are dropped.
  ir::SymExpr row = 0, out_w = 0;
  bool wide = false;
  // `gathered`: any other conv of a materialised, unpadded input: B[k, n] = x_flat[base(k) +
  // offset(n)], the offsets of a task's columns computed once per task into a table.
  bool gathered = false;
  // `merged`: a gathered conv whose batch is folded into N (columns b·Ho·Wo + o, rows of every
  // image in turn), so that small images (resnet's 7×7 and 14×14 at batch 4) make wide GEMMs:
  // `batches` is then 1 and `images` the batch.
  bool merged = false;
  ir::SymExpr images = 1;
  // Matmul operands that are strided views of a buffer (packed with plain loads; unit stride
  // along the panel: vector loads). `direct_a`: A's rows are contiguous along K, so the
  // microkernel reads A in place (row pointers) and A is never packed.
  std::optional<StridedView> a_view, b_view;
  bool direct_a = false;
  // `a_rows`: an f16/bf16 A whose rows are contiguous along K (never read in place: the
  // microkernel reads f32) is packed 16 steps of K at a time, each panel's rows loaded as
  // vectors, widened and transposed in registers (a bf16 conv's W: its rows as they are).
  bool a_rows = false;
  // `b_pairs`: B is bf16 in K pairs: a weight pre-packed so (pack_weights' packed_b_pairs), or
  // a bf16 conv's im2col (wide or gathered) or the B of a product of bf16 activations, packed
  // so as the kernel runs where the dot runs and as f32 panels elsewhere. KC is even, and the
  // microkernel takes two steps of K at a time, each B row pair one 32-bit word per column.
  bool b_pairs = false;
  // b_pairs with an A of bf16 rows (a_rows; the operands share their type): where the CPU has
  // AVX512-BF16, A is read in place, a pair at a time, and multiplied by vdpbf16ps (chosen at
  // run time where the library is built for a CPU that may lack it); elsewhere A is packed as
  // with a_rows and B's pairs are widened.
  bool bf16_dot() const { return b_pairs && a_rows; }
  // `b_f16`: B is a weight pre-packed as f16 panels (pack_weights: an f16 matmul's B), half the
  // bytes of f32 panels. With few rows (one call of two A panels per B panel: M <= 2·MR) the
  // microkernel widens them as it loads them, streaming them from memory at half the bytes;
  // with more (`widen_b`) each task widens its block once into f32 panels, as it packs a B:
  // the microkernel's conversions would repeat for every pair of A panels.
  bool b_f16 = false;
  bool widen_b = false;
  ir::SymExpr m_tasks() const { return floordiv(m + (mt - 1), mt); }
  ir::SymExpr n_blocks() const { return floordiv(n + nc - 1, nc); }
  ir::SymExpr tasks() const { return batches * m_tasks() * n_blocks(); }
};


// The GPU's block-tiled GEMM (emit_tiled_gemm.cpp; chosen by cuda-plan): a task is a thread
// block of `threads` threads computing a bm × bn tile of C for one batch index. Per bk-deep step
// of K the block stages A's bm × bk and B's bk × bn slices in shared memory (K-major, rows
// padded by `pad` floats), then the threads accumulate the tile from them in registers; the
// kernel's elementwise ops are the epilogue, as in the CPU's GEMM.
//   math f32:  each thread adds a tm × tn block of outputs with FMAs;
//   math tf32, f16, bf16: each warp adds a wm × wn block with tensor-core mma.sync (m16n8k8
//              for TF32, m16n8k16 for f16 and bf16; operands rounded to that type when staged,
//              f32 sums), the warps in rows of bn / wn (Options::cuda_math is the math).
// `a_m_fastest` / `b_k_fastest`: which dim consecutive threads walk when loading an operand
// (its unit-stride dim, so that the loads coalesce).
struct TiledGemmPlan {
  GemmPlan gemm;  // gemm_operands: operands and sizes (no CPU blocking)
  Options::CudaMath math = Options::CudaMath::f32;
  int64_t bm = 64, bn = 64, bk = 8, tm = 4, tn = 4, pad = 4;
  int64_t wm = 32, wn = 16;  // tensor cores: a warp's outputs
  // Shared tiles of A and B: one stage, or two (the next step loaded while this one computes).
  int64_t stages = 1;
  bool a_m_fastest = false, b_k_fastest = false;
  int64_t mma_k() const { return math == Options::CudaMath::tf32 ? 8 : 16; }  // K of one mma (tensor cores)
  int64_t threads() const { return math == Options::CudaMath::f32 ? (bm / tm) * (bn / tn) : (bm / wm) * (bn / wn) * 32; }
  // Accumulators per thread: tm × tn, or the warp's wm × wn over its 32 lanes.
  int64_t outputs() const { return math == Options::CudaMath::f32 ? tm * tn : wm * wn / 32; }
  // Shared memory: As and Bs per stage during the K loop, then the C tile (bm rows of bn + pad).
  int64_t stage_floats() const { return bk * (bm + bn + 2 * pad); }
  int64_t shared_floats() const { return std::max(stages * stage_floats(), bm * (bn + pad)); }
  ir::SymExpr m_tiles() const { return floordiv(gemm.m + (bm - 1), bm); }
  ir::SymExpr n_tiles() const { return floordiv(gemm.n + (bn - 1), bn); }
  ir::SymExpr tasks() const { return gemm.batches * m_tiles() * n_tiles(); }
};

// What a plan reads of one scheduled kernel: its graph, the producers of values, the values it
// reads from buffers (by argument position) and the symbols at their maxima.
struct KernelGraph {
  KernelGraph(const ir::Graph& graph, const ScheduledKernel& kernel);
  const ir::Graph& g;
  const ScheduledKernel& k;
  std::vector<int> producer_index;  // value → node index, or -1
  std::map<ir::ValueId, int> read_arg;  // value read from a buffer → its argument (1..)
  ir::SymBindings max;              // max_bindings(g): planning sizes
  const ir::Shape& dims(ir::ValueId v) const { return g.type(v).shape; }
  ir::DType dtype(ir::ValueId v) const { return g.type(v).dtype; }
  const ir::Node& producer(ir::ValueId v) const;
  // `e` at the symbols' maxima: for compile-time choices (exact for a static dim).
  int64_t planned(const ir::SymExpr& e) const { return planned_size(e, max); }
};

// `v` as a strided view of a buffer the kernel reads, if it is one (views of the same dtype
// down to a materialised value; reshapes only where they keep the layout affine).
std::optional<StridedView> strided_view(const KernelGraph& kg, ir::ValueId v);

// The kernel's matmul or conv as a GEMM, where its reduction is an f32 matmul with both
// operands of rank >= 2 or an f32 conv with groups == 1 and the root has its shape: the
// operands, the sizes, the strided views of a matmul's operands; no blocking and none of a
// CPU conv's layouts (wide, gathered, merged). What every backend's GEMM plan starts from.
std::optional<GemmPlan> gemm_operands(const KernelGraph& kg);

// The kernel as a packed GEMM (emit_gemm.cpp), where it takes that path: f32 matmul with both
// operands of rank >= 2, or f32 conv with groups == 1, big enough to pay for packing (M >= 4,
// N >= 8, K >= 8, at the sizes' maxima).
std::optional<GemmPlan> plan_gemm(const KernelGraph& kg);

// How a depthwise conv kernel is split (emit_depthwise.cpp): one task per `channels` output
// channels × `rows` output rows of one batch index. Each output row is computed in vectors of
// `lanes` outputs into a row tile of `tile` floats (the output width's bound in whole vectors),
// from which the root is evaluated and stored. Output channel c reads input channel
// c / multiplier. The input rows a task reads are first copied into a scratch of `in_rows`
// rows, each padded (0, or -inf for a pool) and split by the width stride into `stride_w`
// phase rows of `phase_w` floats, so that every tap of every output vector is one plain load.
struct DepthwisePlan {
  int node = -1;                   // the conv or pool: its index in the graph's nodes
  ir::ValueId x = -1, w = -1;      // its (materialised) input and its weight (-1: a max pool)
  bool max_pool = false;           // a 2-D max pool: taps combined by max, -inf outside the input
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_h = 0, pad_w = 0, multiplier = 1;
  // Planned for 16-lane vectors; for_target narrows them (and tile, phase_w) to a CPU's.
  int64_t lanes = 16, tile = 16;
  int64_t width_bound = 1;  // the output width at its maximum
  int64_t channels = 1, rows = 1;
  int64_t group = 1;  // output rows computed together (the tile holds one row each)
  int64_t in_rows = 1, phase_w = 1;  // the scratch: in_rows × stride_w × phase_w floats
  // The output's sizes, symbolic where the shapes are (out_c is static: the weight's).
  ir::SymExpr batches = 1, out_c = 1, out_h = 1, out_w = 1;
  ir::SymExpr c_blocks() const { return floordiv(out_c + (channels - 1), channels); }
  ir::SymExpr r_blocks() const { return floordiv(out_h + (rows - 1), rows); }
  ir::SymExpr tasks() const { return batches * c_blocks() * r_blocks(); }
};

// The depthwise kernel's plan, where the kernel's reduction is a conv or max pool it takes (the
// scratch checked at 16 lanes, the widest).
std::optional<DepthwisePlan> plan_depthwise(const KernelGraph& kg);
// `p` for a CPU of `f32_lanes`: the vector halved while a row would fill at most half of it.
DepthwisePlan for_target(DepthwisePlan p, int64_t f32_lanes);

// A Winograd transform kernel (emit_winograd.cpp): one task per (batch, channel) plane, its
// rows of m×m output tiles (m = `tile`, 2 or 4) in order, `vectors` vectors of `lanes` tiles
// along each row. Static sizes only (the pass rewrites static convs). `channels`: the input's C
// (input transform) or the output's O.
//
// `fused`: a whole Winograd conv, the output transform's kernel computing its GEMMs and input
// tiles too (fuse.cpp): one task per `mt` output channels × `block_rows` rows of tiles (of the
// N·tiles_h rows, images in turn; nc = block_rows·tiles_w tiles, the GEMMs' columns). Per
// `kc` input channels, the task transforms its tiles into P = (m + 2)² row-major K × NC
// matrices of `ldb` floats a row (B, one per point), runs the P GEMMs against U's pre-packed
// panels into P tiles of mt × ncp floats (ncp: nc in whole NR panels), and at the end takes the
// output transform of the tiles, with the kernel's epilogue.
struct WinogradPlan {
  int node = -1;  // the winograd_input or winograd_output: its index in the graph's nodes
  bool input = false;
  int64_t tile = 2;  // m: F(m×m, 3×3)
  int64_t batches = 1, channels = 1, in_h = 0, in_w = 0, pad_h = 0, pad_w = 0;
  int64_t out_h = 0, out_w = 0, tiles_h = 0, tiles_w = 0;
  // Planned for the widest vectors (16 floats); for_target narrows them to a CPU's.
  int64_t lanes = 4, vectors = 1;
  int64_t in_channels = 0;  // the input's C (for the input transform: `channels`)
  bool fused = false;
  ir::ValueId x = -1, u = -1;  // fused: the conv's input and U's packed view
  int64_t mt = 0, kc = 0, block_rows = 0, nc = 0, ncp = 0, ldb = 0;
  int64_t points() const { return ir::winograd::transform(tile).points(); }
  // Floats of one output row of a vector loop's tiles (the row buffer holds `tile` of them).
  int64_t row_floats() const { return tile * lanes * vectors; }
  int64_t m_tasks() const { return (channels + mt - 1) / mt; }
  int64_t column_blocks() const { return (batches * tiles_h + block_rows - 1) / block_rows; }
  int64_t tasks() const { return fused ? m_tasks() * column_blocks() : batches * channels; }
};

// The Winograd kernel's plan, where the kernel's reduction is a Winograd transform.
std::optional<WinogradPlan> plan_winograd(const KernelGraph& kg);
// `p` for a CPU of `f32_lanes`: vectors no wider than a row of tiles needs (at least 4 lanes).
// The plan's ldb, made for 16 lanes, holds a row's last vector at any narrower width.
WinogradPlan for_target(WinogradPlan p, int64_t f32_lanes);

// A kernel's CPU plan: what codegen does beyond the generic loop nest.
struct CpuPlan {
  std::string symbol;  // the scheduled kernel's
  // Arithmetic operations the kernel performs (per output element: its reduction's trip
  // count), at the symbols' maxima: whether waking other threads pays (kernel_emitter.cpp).
  double work = 0;
  std::optional<GemmPlan> gemm;
  std::optional<WinogradPlan> winograd;
  std::optional<DepthwisePlan> depthwise;
  // The generic loop nest (no plan above): one task per row of the outer dims, or, where the
  // innermost dim is cut too, chunks of this many of its elements per task (0: whole rows).
  int64_t row_chunk = 0;
  // A reduction that keeps the innermost axis accumulates runs of up to this many outputs per
  // task (emit_column_reduction: vectors along the row), and a scatter's task walks up to this
  // many neighbouring rows (emit_scatter_rows); 0: one output (one row) at a time, as any other
  // reduction (the GPU's mapping: a thread per output).
  int64_t column_chunk = 64;
  // The GPU's warp matmuls and reductions (cuda_backend.h): this many threads share each task,
  // each taking every lanes-th term, combined by a butterfly of warp shuffles (32 lanes), then,
  // for a block's 256, the warps' totals through shared memory; or (`tiled`) a tiled GEMM's
  // thread block. The body takes the thread's lane as a fourth argument. 1: a thread per task
  // (every CPU plan).
  int64_t lanes = 1;
  // The GPU's block-tiled GEMM (lanes = its threads: a task per thread block).
  std::optional<TiledGemmPlan> tiled;
  // The GPU's sort, scan or scatter of a row by a thread block (lanes = its threads;
  // emit_topk_block_sort, emit_scan_block, emit_scatter_block): the row's positions a sort or a
  // scan holds in shared memory at a time (a power of two, a multiple of the lanes; a scatter
  // takes the index's row a position per lane at a time); 0: none of them.
  int64_t row_tile = 0;
  // Whether the lanes are a warp summing each reduction together (not a tiled GEMM's block nor
  // a block's row).
  bool warp() const { return lanes > 1 && !tiled && row_tile == 0; }
};

// Below this many operations (CpuPlan::work), waking threads costs more than it gains: the
// kernel runs as one task, inline.
constexpr double kParallelWork = 32768;

int64_t row_chunk(const KernelGraph& kg, double work);

double work_estimate(const KernelGraph& kg);

// One plan per Schedule::kernels entry.
std::vector<CpuPlan> plan_cpu_kernels(const Schedule& s);
// For --dump: a line per kernel: its work, and its GEMM plan if it has one.
std::string describe(const std::vector<CpuPlan>& plans);

}  // namespace aotrace::lowering::cpu
