// plan_cuda_kernels (pipeline pass "cuda-plan"): the CUDA mapping of each kernel's tasks, as
// data (`--dump cuda-plan`). No CPU GEMM, Winograd or depthwise blocking (those plans are for
// CPU caches and vectors). Matmul and conv kernels with at least 16 rows and columns are tiled
// GEMMs (CpuPlan::tiled: a thread block per 64×64 tile, emit_tiled_gemm.cpp); kernels whose
// reductions are warp matmuls or warp reductions (sums, maxima, minima; cuda_backend.h) take a
// warp per task, or a block for few long reductions (CpuPlan::lanes); every other kernel is the emitter's generic loop, cut into one task per
// output element where it has an innermost dim, so that a launch has a thread per element and
// neighbouring threads touch neighbouring addresses. Reductions keep one task per output (its
// reduction loop inside), those that keep the innermost axis too (CpuPlan::column_chunk 0).
// Sorts, cumsums and scatters of long rows take a thread block per row (block_rows).
// Test: lowering_tests Cuda.*.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>

#include "lowering/cuda/cuda_backend.h"

namespace aotrace::lowering::cuda {

bool warp_matmul(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max) {
  // f32, or f16/bf16 computed in f32 (batch-1 decoding's matrix-vector products of a half model)
  if (n.op != ir::OpKind::Matmul || n.results.size() != 1 || !computed_in_f32(g.type(n.results[0]).dtype)) return false;
  const ir::Shape& a = g.type(n.operands[0]).shape;
  std::optional<int64_t> k = a.empty() ? std::nullopt : a.back().as_constant();
  if (!k || *k < 256 || planned_size(g.type(n.results[0]).numel(), max) > (int64_t{1} << 17)) return false;
  // Rows and columns enough for a tiled GEMM: that is faster (H200: a 128×768 by 768×768 matmul
  // 0.34 ms as warps, 0.1 ms as 64×64 tiles).
  const ir::Shape& out = g.type(n.results[0]).shape;
  return a.size() < 2 || g.type(n.operands[1]).shape.size() < 2 || out.size() < 2 ||
         planned_size(a[a.size() - 2], max) < kTiledMinSize || planned_size(out.back(), max) < kTiledMinSize;
}

// The positions each output of a float reduce_sum, reduce_max or reduce_min (f32, f16 or bf16:
// computed in f32 either way), or an argmax or argmin of f32 (fewer than 2^31 positions: its
// lanes' indices are i32), reduces (the product of the reduced extents, symbolic ones at their
// maxima: a softmax over a dynamic sequence), or none (another op or dtype).
std::optional<int64_t> reduced_positions(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max) {
  const bool arg = n.op == ir::OpKind::ArgMax || n.op == ir::OpKind::ArgMin;
  if ((n.op != ir::OpKind::ReduceSum && n.op != ir::OpKind::ReduceMax && n.op != ir::OpKind::ReduceMin && !arg) ||
      n.results.size() != 1 || (!arg && !computed_in_f32(g.type(n.results[0]).dtype)))
    return std::nullopt;
  const ir::DType x = g.type(n.operands[0]).dtype;
  if (arg ? x != ir::DType::f32 : !computed_in_f32(x)) return std::nullopt;
  const ir::Shape& in = g.type(n.operands[0]).shape;
  int64_t positions = 1;
  for (int64_t a : n.attrs.ints("axes")) positions *= planned_size(in[static_cast<size_t>(a)], max);
  if (arg && positions > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return positions;
}

// Such a reduction over at least `min_positions` positions (Options::cuda_warp_reduce_min) into
// at most 2^17 outputs: a layer norm's row sums, a softmax's row max and sum over a long row, a
// mean pool over a long axis, greedy decoding's argmax over a vocabulary.
bool warp_reduction(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max, int64_t min_positions) {
  std::optional<int64_t> positions = reduced_positions(g, n, max);
  return positions && *positions >= min_positions && planned_size(g.type(n.results[0]).numel(), max) <= (int64_t{1} << 17);
}

// One with so many positions and so few outputs that a warp per output leaves the GPU idle
// (x.sum() over a whole tensor): a thread block per output, the warps' totals meeting in shared
// memory.
bool block_reduction(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max) {
  std::optional<int64_t> positions = reduced_positions(g, n, max);
  return positions && *positions >= kBlockReduceMinPositions &&
         planned_size(g.type(n.results[0]).numel(), max) <= kBlockReduceMaxOutputs;
}

// Warp lanes for a kernel whose reductions are all warp matmuls or warp reductions (another
// reduction would run in every lane alike: right, but 32 times over); a block's (kBlock) where
// they are all block reductions.
int64_t kernel_lanes(const ir::Graph& g, const ScheduledKernel& k, const ir::SymBindings& max, int64_t min_positions) {
  bool any = false, block = true;
  for (int i : k.nodes) {
    const ir::Node& n = g.nodes[static_cast<size_t>(i)];
    const ir::OpCategory c = ir::op_info(n.op).category;
    if (c == ir::OpCategory::Matmul || c == ir::OpCategory::Reduce) {
      const bool reduction = warp_reduction(g, n, max, min_positions);
      if (!warp_matmul(g, n, max) && !reduction) return 1;
      block = block && block_reduction(g, n, max);
      any = true;
    } else if (c == ir::OpCategory::Scan || c == ir::OpCategory::Conv ||
               c == ir::OpCategory::Pool || c == ir::OpCategory::Sort) {
      return 1;
    }
  }
  return !any ? 1 : block ? kBlock : kWarpLanes;
}

// A kernel that a thread block per row takes (emit_topk_block_sort, emit_scan_block,
// emit_scatter_block), where a thread per row would walk the row alone: a sort's indices kernel
// (a topk ranked as a heap, topk_as_heap, over a whole static axis), a cumsum or a scatter along
// the innermost axis, of at least `min_positions` (Options::cuda_block_row_min; at the maximum;
// a scatter's index row counts too), with nothing else in the kernel but
// elementwise, movement, index and source ops (operands computed in place). Top-p sampling's
// sort, cumsum and scatter of 4 rows of 50257 are otherwise 4 of the GPU's threads each, ~10^6,
// 50257 and 100514 dependent steps.
bool block_rows(const ir::Graph& g, const ScheduledKernel& k, const ir::SymBindings& max, int64_t min_positions) {
  bool rows = false;
  for (int i : k.nodes) {
    const ir::Node& n = g.nodes[static_cast<size_t>(i)];
    const ir::OpCategory c = ir::op_info(n.op).category;
    if (n.op == ir::OpKind::TopK) {
      const ir::Shape& x = g.type(n.operands[0]).shape;
      if (x.empty() || k.root != n.results[1] || !topk_as_heap(g, n)) return false;
      const std::optional<int64_t> length = x[static_cast<size_t>(n.attrs.i("axis"))].as_constant();
      if (!length || *length != n.attrs.i("k") || *length < min_positions) return false;
      rows = true;
    } else if (n.op == ir::OpKind::CumSum || n.op == ir::OpKind::Scatter) {
      const auto axis = static_cast<size_t>(n.attrs.i("axis"));
      int64_t positions = planned_size(k.loop_extents.at(axis), max);
      if (n.op == ir::OpKind::Scatter)  // the index's row too
        positions = std::max(positions, planned_size(g.type(n.operands[1]).shape[axis], max));
      if (k.root != n.results[0] || axis + 1 != k.loop_extents.size() || positions < min_positions) return false;
      rows = true;
    } else if (!ir::is_elementwise(c) && c != ir::OpCategory::Movement && c != ir::OpCategory::Index &&
               c != ir::OpCategory::Source) {
      return false;
    }
  }
  return rows;
}

// Whether every GPU of Options::cuda_archs has the tensor cores' mma.sync for f16 and bf16
// (sm_80 or newer).
bool archs_have_half_mma(const Options& options) {
  return std::all_of(options.cuda_archs.begin(), options.cuda_archs.end(), [](const std::string& a) {
    return a.rfind("sm_", 0) == 0 && a.size() > 3 && std::atoi(a.c_str() + 3) >= kMmaMinArch;
  });
}

std::optional<cpu::TiledGemmPlan> tiled_gemm(const cpu::KernelGraph& kg, const Options& options) {
  Options::CudaMath math = options.cuda_math;  // f32 models' GEMMs
  std::optional<cpu::GemmPlan> gemm = cpu::gemm_operands(kg);
  if (!gemm || gemm->node < 0 || gemm->groups != 1) return std::nullopt;  // grouped convs: the direct loops
  // f16 and bf16 GEMMs take their own type's tensor cores where every arch has them: their
  // operands are exact in it and the sums stay f32, so the numbers are the FMA path's but for
  // the sums' order (cuda_math is about rounding f32 operands, which these do not have).
  const ir::DType t = kg.dtype(gemm->a);  // the operands' (the sums may be kept f32)
  if ((t == ir::DType::f16 || t == ir::DType::bf16) && archs_have_half_mma(options))
    math = t == ir::DType::f16 ? Options::CudaMath::f16 : Options::CudaMath::bf16;
  if (kg.planned(gemm->batches) == 0 || kg.planned(gemm->m) < kTiledMinSize ||
      kg.planned(gemm->n) < kTiledMinSize || kg.planned(gemm->k) < 8)
    return std::nullopt;
  cpu::TiledGemmPlan p;
  p.gemm = *gemm;
  p.stages = options.cuda_gemm_stages;
  if (math != Options::CudaMath::f32) {
    // 8 warps of 32 × 16 outputs (2 × 2 mma blocks) over a 64 × 64 tile, 32 of K per step
    // (4 TF32 or 2 f16/bf16 mma slices between barriers); rows padded so that a warp's
    // fragment loads (As[k][m]: k in_group·t_step + j, m group + j') fall in 32 distinct banks:
    // 8 floats for TF32 (in_group·72 + group), 4 for f16/bf16 (2·in_group·68 + group).
    p.math = math;
    p.bk = 32;
    p.pad = math == Options::CudaMath::tf32 ? 8 : 4;
    p.wm = 32;
    p.wn = 16;
  }
  // Consecutive threads load along an operand's unit-stride dim.
  auto unit = [](const std::optional<cpu::StridedView>& v, size_t from_end) {
    return v && v->strides.size() >= 2 && cpu::is_one(v->strides[v->strides.size() - from_end]);
  };
  if (!gemm->is_conv) {
    p.a_m_fastest = unit(gemm->a_view, 2) && !unit(gemm->a_view, 1);
    p.b_k_fastest = unit(gemm->b_view, 2) && !unit(gemm->b_view, 1);
  }
  AOT_CHECK(p.threads() == kBlock, "a tiled GEMM's block must be the launch's block");
  AOT_CHECK(p.shared_floats() * 4 <= kStaticSharedBytes, "a tiled GEMM's tiles must fit static shared memory");
  return p;
}

// Whether a thread of kernel `k` takes `vector` (> 1) neighbouring elements of the innermost dim:
// an elementwise kernel (elementwise ops, movement, indexing, sources: no reduction, matmul,
// conv, pool, scan or sort) whose innermost extent is static and a multiple of `vector`. The
// thread's loads and stores then become one vector access each (ld.global.v4.f32: NVPTX's
// load-store vectoriser, from the buffers' 16-byte alignment), sharing its index arithmetic.
bool vector_elements(const ir::Graph& g, const ScheduledKernel& k, int64_t vector) {
  if (vector <= 1 || k.loop_extents.empty()) return false;
  const std::optional<int64_t> inner = k.loop_extents.back().as_constant();
  if (!inner || *inner % vector != 0) return false;
  return std::all_of(k.nodes.begin(), k.nodes.end(), [&](int i) {
    const ir::OpCategory c = ir::op_info(g.nodes[static_cast<size_t>(i)].op).category;
    return ir::is_elementwise(c) || c == ir::OpCategory::Movement || c == ir::OpCategory::Index ||
           c == ir::OpCategory::Source;
  });
}

std::vector<cpu::CpuPlan> plan_cuda_kernels(const Schedule& s, const Options& options) {
  std::vector<cpu::CpuPlan> plans;
  const ir::SymBindings max = max_bindings(s.fused.graph);
  for (const ScheduledKernel& k : s.kernels) {
    cpu::CpuPlan plan;
    plan.symbol = k.symbol;
    const cpu::KernelGraph kg(s.fused.graph, k);
    plan.work = cpu::work_estimate(kg);
    plan.column_chunk = 0;
    plan.lanes = kernel_lanes(s.fused.graph, k, max, options.cuda_warp_reduce_min);
    // A thread per element (a rank-0 or rank-1 root: by element, 0), or a few as vectors.
    plan.row_chunk = k.loop_extents.size() >= 2 ? 1 : 0;
    if (plan.lanes == 1 && vector_elements(s.fused.graph, k, options.cuda_vector_elements))
      plan.row_chunk = options.cuda_vector_elements;
    if (block_rows(s.fused.graph, k, max, options.cuda_block_row_min)) {
      plan.lanes = kBlock;
      plan.row_tile = kRowTile;
      plan.row_chunk = 0;
    }
    if (plan.lanes == 1) {
      plan.tiled = tiled_gemm(kg, options);
      if (plan.tiled) plan.lanes = plan.tiled->threads();
    }
    plans.push_back(plan);
  }
  return plans;
}

}  // namespace aotrace::lowering::cuda
