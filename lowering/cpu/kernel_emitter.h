// Private to lowering/cpu/: the emitter of one kernel (one exported LLVM function per scheduled
// kernel, plus the body it runs over the runtime's parallel_for), carrying out the kernel's
// CpuPlan (plan.h), split by concern:
//   kernel_emitter.cpp   the functions, parallel split, loop nests, loads/stores, elementwise ops
//   emit_gemm.cpp        matmul and conv kernels as packed, register-blocked GEMM with the
//                        kernel's elementwise ops as epilogue
//   emit_depthwise.cpp   depthwise conv kernels: output rows in vectors along the width, the
//                        window's taps unrolled, the kernel's elementwise ops as epilogue
//   emit_winograd.cpp    the Winograd F(2×2, 3×3) transforms, in vectors of tiles; the output
//                        transform with the kernel's elementwise ops as epilogue; a whole
//                        Winograd conv (transforms and GEMMs) in one kernel
//   emit_tiled_gemm.cpp  the GPU's matmul and conv kernels as shared-memory tiled GEMM
//   emit_views.cpp       ops that map the index: movement (reshape, permute, expand, slice,
//                        flip, pad, concat), index loads (gather, index_select), arange
//   emit_reductions.cpp  ops with an inner loop per output element: reduce, arg-reduce,
//                        matmul, conv, pool; the scan (cumsum) and scatter kernels
//   emit_topk.cpp        topk kernels: sorted arrays, a heap, the GPU's block sort
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "lowering/cpu/llvm_backend.h"
#include "lowering/cpu/plan.h"

namespace aotrace::lowering::cpu {

using Index = std::vector<llvm::Value*>;

// B panels per GEMM microkernel call (emit_gemm.cpp): two where one NR-wide panel is a single
// vector (AVX-512), else one.
int64_t panels_per_call(const CpuTarget& target, int64_t nr);

// Iterations of a warp or block lane's loop unrolled into one (KernelEmitter::lane_loop).
constexpr int kLaneUnroll = 4;

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& m, const ir::Graph& g, const ScheduledKernel& k, const CpuPlan& plan,
                const CpuTarget& t);
  void emit();  // the body and the exported CPU entry (emit_entry)
  KernelBody emit_body();

 private:
  llvm::Module& module_;
  const CpuTarget& target_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const ir::Graph& g_;
  const ScheduledKernel& k_;
  const CpuPlan& plan_;  // plan.h: decided before codegen
  // The kernel's graph as the plan saw it; the names below are views of it.
  const KernelGraph kg_;
  const std::vector<int>& producer_;                 // value → node index, or -1
  const std::map<ir::ValueId, int>& read_arg_;       // value read from a buffer → its argument
  const ir::SymBindings& max_;                       // max_bindings(g): planning sizes
  llvm::Function* kernel_fn_ = nullptr;  // the exported ABI function (emit_entry)
  // The body: (closure, begin, end) over parallel tasks. The closure is the buffers array; a
  // kernel with symbolic sizes gets a copy of it with the symbols pointer after the buffers.
  llvm::Function* fn_ = nullptr;
  llvm::Value* lane_ = nullptr;  // the thread's lane in its warp or tiled block (CpuPlan::lanes > 1), else null
  llvm::BasicBlock* entry_ = nullptr;    // the body's allocas, buffer pointers and sizes
  std::vector<llvm::Value*> buffers_;
  std::vector<std::map<std::pair<ir::ValueId, Index>, llvm::Value*>> memo_;
  // An f16/bf16 value (computed in f32) → its bits, where it was loaded or rounded here
  // (round_to_type): store() stores those instead of rounding it again.
  std::map<std::pair<llvm::Value*, ir::DType>, llvm::Value*> half_bits_;
  llvm::Value* symbols_ = nullptr;             // the body's symbols pointer, once loaded
  std::map<std::string, llvm::Value*> sizes_;  // size(e) by e.str(), in entry_
  // Per buffer argument: its alias scope and the scopes it does not alias (or null), for
  // load() and store(): see mark_alias().
  std::vector<std::pair<llvm::MDNode*, llvm::MDNode*>> alias_md_;

  // kernel_emitter.cpp
  // Returns the task count.
  ir::SymExpr emit_loop_body(llvm::Value* begin, llvm::Value* end);
  // emit_reductions.cpp: a reduction over axes that keep the innermost one, or nothing.
  std::optional<ir::SymExpr> emit_column_reduction(llvm::Value* begin, llvm::Value* end);
  // emit_topk.cpp: a topk result as a task per row (one pass keeping the k best in sorted
  // arrays, or its indices ranked as a heap: emit_topk_heap), or the GPU's sort of a row by a
  // thread block (emit_topk_block_sort), or nothing.
  std::optional<ir::SymExpr> emit_topk_rows(llvm::Value* begin, llvm::Value* end);
  void emit_entry(const ir::SymExpr& tasks, double work);
  // Tags a load or store through argument `arg` with its alias scope (alias_md_, built once per
  // kernel by alias_scopes).
  void alias_scopes();
  void mark_alias(llvm::Instruction* access, int arg);
  // The value of dim `e` in the body: a constant, or computed once in its entry block.
  llvm::Value* size(const ir::SymExpr& e);
  // `e` at the symbols' maxima: for compile-time choices (exact for a static dim).
  int64_t planned(const ir::SymExpr& e) const { return planned_size(e, max_); }
  // for (i = begin; i < end; i += step) body(i), its values in a memo scope of their own;
  // returns the loop's latch (its back branch).
  llvm::BranchInst* range_loop(llvm::Value* begin, llvm::Value* end, const std::function<void(llvm::Value*)>& body,
                               int64_t step = 1);
  // The same for a lane of a warp or block plan (CpuPlan::lanes; step: the lanes), unrolled by
  // kLaneUnroll: a GPU thread then has that many loads in flight before their sums (in order:
  // the same numbers), where the rolled loop waits for each load before the next.
  void lane_loop(llvm::Value* first, llvm::Value* end, const std::function<void(llvm::Value*)>& body, int64_t step);
  // A phase of a thread block's task (a tiled GEMM, a block sort): every thread runs body(tid)
  // (the GPU: this thread, tid = lane_), then, with `barrier`, waits for the others; grid
  // emulation, which runs a task's lane 0 only, runs body for tid 0 .. threads - 1 in turn
  // (Triton's interpreter and POCL's work-group loops run barriers alike).
  void block_phase(int64_t threads, bool barrier, const std::function<void(llvm::Value*)>& body);
  // The binary search lo = 0, hi = end; while lo < hi: mid = (lo + hi) / 2, lo = mid + 1 where
  // past(mid) (the target lies past mid), else hi = mid: the first position not past, at b_
  // after the loop (past's values in a memo scope of their own).
  llvm::Value* binary_search(llvm::Value* end, const std::function<llvm::Value*(llvm::Value*)>& past);
  // An array of `count` values of type `t` that a thread block shares: static shared memory on the
  // GPU (16-byte aligned), a stack array in grid emulation.
  llvm::Value* block_array(llvm::Type* t, int64_t count, const std::string& name);
  // if (cond) then_body() else else_body(), each in its own block; continues after both.
  void if_else(llvm::Value* cond, const std::function<void()>& then_body, const std::function<void()>& else_body);
  // The index over `extents` of flat row-major position `flat` (size-1 dims: constant 0).
  Index unflatten(llvm::Value* flat, const ir::Shape& extents);
  const ir::Shape& dims(ir::ValueId v) const { return g_.type(v).shape; }
  ir::DType dtype(ir::ValueId v) const { return g_.type(v).dtype; }
  const ir::Node& producer(ir::ValueId v) const;
  bool rounded_to_its_type(const ir::Node& n, ir::DType t) const;
  // round_to_storage_precision, remembering the bits for store().
  llvm::Value* round_to_type(llvm::Value* x, ir::DType t);
  void loop_nest(const ir::Shape& extents, const std::function<void(const Index&)>& body);
  // for (w = 0; w < extent; ++w) body(w): an output row of an epilogue. Where the target has
  // masked vector loads and stores (AVX2, AVX-512), the vectoriser is asked to fold the row's
  // tail into a masked vector instead of a scalar remainder (7-, 14- and 28-wide rows would be
  // mostly remainder): efficientnet_b0 1.5x faster at 16 lanes, 1.34x at 8. The masks depend on
  // the loop counter (LLVM 16's wrong folding of constant-masked wide loads does not apply).
  void row_loop(const ir::SymExpr& extent, const std::function<void(llvm::Value*)>& body);
  void loop_level(const ir::Shape& extents, size_t d, Index& idx,
                  const std::function<void(const Index&)>& body);
  llvm::Value* address(ir::ValueId v, int arg, const Index& idx);
  llvm::Value* load(ir::ValueId v, int arg, const Index& idx);
  void store(ir::ValueId v, int arg, const Index& idx, llvm::Value* x);
  llvm::Value* emit(ir::ValueId v, const Index& idx);
  Index broadcast(const ir::Shape& from, size_t to_rank, const Index& idx);
  llvm::Value* operand(const ir::Node& n, size_t i, const Index& idx, ir::DType as);
  llvm::Value* emit_node(const ir::Node& n, ir::ValueId result, const Index& idx);
  // A stack slot (in the entry block) holding an accumulator of compute type `t`, set to init.
  llvm::Value* accumulator(llvm::Type* t, llvm::Value* init);
  llvm::Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  // While alive, floating adds and multiplies built by b_ may be reassociated and contracted.
  std::unique_ptr<llvm::IRBuilderBase::FastMathFlagGuard> reassociable_sums();
  llvm::Value* in_range(llvm::Value* i, const ir::SymExpr& n);  // 0 <= i < n, signed
  llvm::Value* clamp(llvm::Value* i, const ir::SymExpr& n);     // into [0, n-1] (n >= 1)
  llvm::Value* smin(llvm::Value* x, llvm::Value* y);            // signed min
  // Whether a window of `taps` positions `dilation` apart, starting at out·stride for every
  // out < `out`, can read past `in` (static: decided; symbolic: unless provably not).
  static bool may_leave(const ir::SymExpr& out, int64_t stride, int64_t taps, int64_t dilation,
                        const ir::SymExpr& in);

  // emit_views.cpp
  llvm::Value* emit_movement(const ir::Node& n, const Index& idx);
  Index view_index(const ir::Node& n, const Index& idx);
  Index reshape_index(const ir::Shape& dst, const ir::Shape& src, const Index& idx);
  llvm::Value* emit_pad(const ir::Node& n, const Index& idx);
  // The rows [begin, end) of a kernel whose root is pad `n`; false (nothing emitted) where the
  // operand is empty.
  bool emit_pad_rows(const ir::Node& n, llvm::Value* begin, llvm::Value* end);
  llvm::Value* emit_concat(const ir::Node& n, const Index& idx);
  llvm::Value* emit_index(const ir::Node& n, const Index& idx);
  llvm::Value* emit_search_sorted(const ir::Node& n, const Index& idx);
  llvm::Value* emit_arange(const ir::Node& n, const Index& idx);
  llvm::Value* emit_random(const ir::Node& n, const Index& idx);
  // Pointer to element `idx` of a strided view (batch-broadcast dims may be given as 0).
  llvm::Value* strided_address(const StridedView& sv, const Index& idx);

  // emit_gemm.cpp
  void emit_gemm_tasks(const GemmPlan& plan, llvm::Value* begin, llvm::Value* end);
  // How a GEMM's microkernels read B (gemm_microkernel): f32 panels; bf16 K pairs widened to
  // f32; bf16 K pairs multiplied with A's pairs by vdpbf16ps; f16 panels widened as loaded.
  enum class GemmPairs { none, widen, dot, f16 };
  // The tasks [begin, end) of the GEMM, its microkernels reading B as `pairs` says.
  void gemm_task_loop(const GemmPlan& plan, llvm::Value* begin, llvm::Value* end, GemmPairs pairs);
  // i1: the CPU running the kernel has AVX512-BF16 (CPUID, asked once per library load).
  llvm::Value* cpu_has_avx512_bf16();
  // ⌈x / y⌉ for x >= 0.
  llvm::Value* ceil_div(llvm::Value* x, int64_t y);
  // The microkernels of a GEMM for this target: uk[a][b] takes a + 1 A panels by b + 1 B panels
  // per call (up to a_pair and b_pair), `rows` rows of A per call.
  struct Microkernels {
    llvm::Function* uk[2][2] = {};
    int64_t rows = 6, a_pair = 1, b_pair = 1;
  };
  Microkernels gemm_microkernels(const GemmPlan& plan, bool direct_a, int64_t static_lda, int64_t b_row,
                                 GemmPairs pairs = GemmPairs::none);
  // The microkernel calls of a block of m_panels A panels × n_panels B panels:
  // call(jr, b_count, ir, a_count) for B panels [jr, jr + b_count) and A panels
  // [ir, ir + a_count), b_pair and a_pair at a time where they are there (and, for A,
  // `rows_there(ir)` when given), one at a time at the edges.
  void gemm_block_calls(llvm::Value* m_panels, llvm::Value* n_panels, int64_t a_pair, int64_t b_pair,
                        const std::function<llvm::Value*(llvm::Value*)>& rows_there,
                        const std::function<void(llvm::Value*, int64_t, llvm::Value*, int64_t)>& call);
  llvm::Function* gemm_microkernel(const GemmPlan& plan, int64_t rows, bool direct_a, int64_t panels,
                                   int64_t static_lda = 0, int64_t b_row = 0, GemmPairs pairs = GemmPairs::none);
  // The buffer of the packed weight behind `view`: panels of `width` of `type` (f32; f16: an f16
  // matmul's B), or (pairs) bf16 K pairs.
  llvm::Value* packed_weight(ir::ValueId view, int64_t width, bool pairs = false, ir::DType type = ir::DType::f32);
  // Widens the f16 panels of a pre-packed B (GemmPlan::b_f16) for columns [jc, jc + nc) and
  // rows [pc, pc + kc) into f32 panels at `dst`, laid out as gemm_pack's.
  void gemm_widen_f16_b(const GemmPlan& plan, llvm::Value* panels16, llvm::Value* jc, llvm::Value* nc,
                        llvm::Value* pc, llvm::Value* kc, llvm::Value* dst);
  void pack_b_rows(const GemmPlan& plan, bool pairs, llvm::Value* kc, llvm::Value* panels, llvm::Value* dst,
                   const std::function<void(llvm::Value*, llvm::Value*, llvm::Value*)>& row);
  void gemm_pack_wide_b(const GemmPlan& plan, bool pairs, const Index& batch, llvm::Value* jc, llvm::Value* nc,
                        llvm::Value* pc, llvm::Value* kc, llvm::Value* dst);
  llvm::Value* conv_input_base(const GemmPlan& plan, const Index& batch, llvm::Value* k);
  // Part `part` of `parts` of the source lines of the B block [pc, pc + kc) × [jc, jc + nc) into
  // L2 (prefetches; nothing where B is not read from contiguous lines).
  void prefetch_b_source(const GemmPlan& plan, const Index& batch, llvm::Value* jc, llvm::Value* nc, llvm::Value* pc,
                         llvm::Value* kc, llvm::Value* part, llvm::Value* parts);
  // `count` consecutive elements of dtype `t` at `at` + `index` (in elements), widened as load()
  // widens (f16/bf16 to f32): a value, or a vector of `count`. For GEMM packing, which reads
  // through addresses rather than values.
  llvm::Value* load_widened(ir::DType t, llvm::Value* at, llvm::Value* index, int64_t count);
  void gemm_conv_offsets(const GemmPlan& plan, llvm::Value* jc, int64_t count, llvm::Value* table);
  llvm::Value* conv_column_offset(const GemmPlan& plan, llvm::Value* n);
  void gemm_pack_gathered_b(const GemmPlan& plan, bool pairs, const Index& batch, llvm::Value* nc, llvm::Value* pc,
                            llvm::Value* kc, llvm::Value* table, llvm::Value* dst);
  llvm::Value* gemm_a(const GemmPlan& plan, const Index& batch, llvm::Value* m, llvm::Value* k);
  // A grouped conv's first output channel and first input channel of batch [image, group]
  // (GemmPlan::groups); 0 for every other GEMM.
  llvm::Value* group_rows(const GemmPlan& plan, const Index& batch);
  llvm::Value* group_input_channels(const GemmPlan& plan, const Index& batch);
  llvm::Value* a_row_address(const GemmPlan& plan, const Index& batch, llvm::Value* m, llvm::Value* k);
  const ir::SymExpr& a_row_stride(const GemmPlan& plan);
  llvm::Value* gemm_b(const GemmPlan& plan, const Index& batch, llvm::Value* k, llvm::Value* n);
  void gemm_pack(const GemmPlan& plan, bool pack_a, const Index& batch, llvm::Value* start,
                 llvm::Value* count, llvm::Value* pc, llvm::Value* kc, llvm::Value* dst, bool pairs = false);
  void prefetch_epilogue(Index first, llvm::Value* floats);
  // Stores the root at output index `idx` with the GEMM's sum there taken as `sum` (a conv's
  // bias added): the epilogue of every GEMM kernel, CPU and GPU.
  void store_gemm_root(const GemmPlan& plan, Index idx, llvm::Value* sum);
  void gemm_epilogue(const GemmPlan& plan, const Index& batch, llvm::Value* ic, llvm::Value* mc,
                     llvm::Value* jc, llvm::Value* nc, llvm::Value* tile, int64_t ldc);
  llvm::Value* stack_array(llvm::Type* t, int64_t count);

  // emit_tiled_gemm.cpp: the GPU's block-tiled GEMM, a task per thread block.
  void emit_tiled_gemm(const TiledGemmPlan& plan, llvm::Value* begin, llvm::Value* end);

  // emit_depthwise.cpp
  void emit_depthwise_tasks(const DepthwisePlan& plan, llvm::Value* begin, llvm::Value* end);
  // Copies `count` input columns from `src` into the scratch row at `dst` (column c at padded
  // position c + pad_w, in phase (c + pad_w) % stride_w).
  void depthwise_copy_row(const DepthwisePlan& plan, llvm::Value* src, llvm::Value* dst, llvm::Value* count);
  // One vector of `lanes` conv outputs for each row of a group, starting at output column
  // `ow0`; rows[r][i]: the scratch row of window row i of group row r.
  std::vector<llvm::Value*> depthwise_vectors(const DepthwisePlan& plan, llvm::Value* ow0,
                                              const std::vector<std::vector<llvm::Value*>>& rows,
                                              const std::vector<llvm::Value*>& weights);

  // emit_winograd.cpp
  void emit_winograd_input(const WinogradPlan& plan, llvm::Value* begin, llvm::Value* end);
  void emit_winograd_output(const WinogradPlan& plan, llvm::Value* begin, llvm::Value* end);
  void emit_winograd_fused(const WinogradPlan& plan, llvm::Value* begin, llvm::Value* end);
  // The input transform of `lanes` tiles of input plane `plane` (n·C + c) from tile (th, tw0)
  // along a row: P = (m + 2)² vectors (BT·d·B, point (m + 2)·a + b), handed to `use` (on two
  // paths: vectors inside the buffer, or per lane, clamped).
  void winograd_input_tiles(const WinogradPlan& plan, llvm::Value* x, llvm::Value* plane, llvm::Value* th,
                            llvm::Value* tw0, const std::function<void(const std::vector<llvm::Value*>&)>& use);
  // AT·m·A of `lanes` tiles from their P vectors m[(m + 2)·a + b]: the m output rows of each
  // tile, interleaved into the m rows of `tile` (row_tile floats apart) from column m·tw0.
  void winograd_output_tiles(const WinogradPlan& plan, const std::vector<llvm::Value*>& m, llvm::Value* tile,
                             llvm::Value* tw0);
  // The root for the (up to) m output rows of tile row th of image n, channel o, with the
  // conv's value taken from `tile` (the kernel's epilogue).
  void winograd_store_rows(const WinogradPlan& plan, llvm::Value* n, llvm::Value* o, llvm::Value* th, llvm::Value* tile);
  // Σ_j coefficients[j]·values[j] over the nonzero coefficients, in order: ±1 an add or a
  // subtraction, others a multiply-add (a transform matrix's row).
  llvm::Value* winograd_row(const double* coefficients, const std::vector<llvm::Value*>& values);

  // emit_reductions.cpp
  llvm::Value* emit_reduce(const ir::Node& n, const Index& idx);
  llvm::Value* emit_arg_reduce(const ir::Node& n, const Index& idx);
  llvm::Value* emit_matmul(const ir::Node& n, const Index& idx);
  // The total over a warp or block (CpuPlan::lanes) of `sum_from(first, step)` (the f32 sum of
  // the terms at first, first + step, ...), by lane_ and shuffles (and shared memory for a
  // block) on the GPU, by every lane's partial in grid emulation.
  llvm::Value* warp_total(const std::function<llvm::Value*(llvm::Value*, int64_t)>& sum_from);
  // The same for partials of several values (f32 or i32 each) that `combine` merges pairwise
  // (commutative and associative): warp_total is warp_combine of one f32 with fadd.
  using Partials = std::vector<llvm::Value*>;
  Partials warp_combine(const std::function<Partials(llvm::Value*, int64_t)>& partial,
                        const std::function<Partials(const Partials&, const Partials&)>& combine);
  llvm::Value* emit_conv(const ir::Node& n, const Index& idx);
  llvm::Value* emit_pool(const ir::Node& n, const Index& idx);
  // emit_topk.cpp (the task count)
  ir::SymExpr emit_topk_heap(const ir::Node& n, llvm::Value* begin, llvm::Value* end);
  ir::SymExpr emit_topk_block_sort(const ir::Node& n, llvm::Value* begin, llvm::Value* end);
  ir::SymExpr emit_scan_kernel(const ir::Node& n, llvm::Value* begin, llvm::Value* end);  // the task count
  ir::SymExpr emit_scan_block(const ir::Node& n, llvm::Value* begin, llvm::Value* end);  // the task count
  ir::SymExpr emit_scatter_rows(const ir::Node& n, llvm::Value* begin, llvm::Value* end);  // the task count
  ir::SymExpr emit_scatter_block(const ir::Node& n, llvm::Value* begin, llvm::Value* end);  // the task count
  // A task per row along `axis` of the root (emit_scan_kernel, emit_topk_rows, emit_topk_heap):
  // the task count.
  using RowIndex = std::function<Index(llvm::Value*)>;  // the index of the row's position j
  ir::SymExpr row_tasks(size_t axis, llvm::Value* begin, llvm::Value* end, const std::function<void(const RowIndex&)>& row);
  // The operand index of a reduction over `axes` (normalised) for result index `idx`.
  Index reduced_index(const std::vector<bool>& reduced, bool keepdim, const Index& idx,
                      const Index& r);
};

}  // namespace aotrace::lowering::cpu
