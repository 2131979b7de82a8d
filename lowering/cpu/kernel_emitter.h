// Private to lowering/cpu/: the emitter of one kernel (one exported LLVM function per scheduled
// kernel, plus the body it runs over the runtime's parallel_for), split by concern:
//   kernel_emitter.cpp   the functions, parallel split, loop nests, loads/stores, elementwise ops
//   emit_gemm.cpp        matmul and conv kernels as packed, register-blocked GEMM with the
//                        kernel's elementwise ops as epilogue
//   emit_views.cpp       ops that map the index: movement (reshape, permute, expand, slice,
//                        flip, pad, concat), index loads (gather, index_select), arange
//   emit_reductions.cpp  ops with an inner loop per output element: reduce, arg-reduce,
//                        matmul, conv, pool, topk; and the scan kernel (cumsum)
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "lowering/cpu/llvm_backend.h"

namespace aotrace::lowering::cpu {

using Index = std::vector<llvm::Value*>;

// An int-list attribute (also given as a constant Shape).
std::vector<int64_t> int_list(const ir::Attrs& attrs, const std::string& key);

// A value read straight from a materialised buffer through views only: element idx is at
// buffer[offset + Σ idx[d]·strides[d]] (strides in elements, 0 for broadcast dims). What a
// GEMM packs with plain loads instead of evaluating the view's index map per element.
struct StridedView {
  ir::ValueId buffer = -1;  // the materialised value read
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// How a GEMM kernel is blocked (emit_gemm.cpp): C[M×N] += A[M×K]·B[K×N] per batch, in tasks of
// one MT×NC block of C; each task walks K in KC panels, packs its B panel once and A in MC-row
// blocks, both as MR-row / NR-column micro-panels.
struct GemmPlan {
  const ir::Node* node = nullptr;  // the matmul or conv
  // The operands as A[M×K] and B[K×N]: matmul's first and second; conv's weight and input
  // (B is its im2col).
  ir::ValueId a = -1, b = -1;
  bool is_conv = false;
  int64_t batches = 1, m = 0, n = 0, k = 0;
  int64_t mr = 6, nr = 16, mc = 72, nc = 128, kc = 256;
  int64_t mt = 72;  // rows per task: a multiple of MC (fewer B packings, enough tasks)
  // Conv: N walks output rows of `row` columns (NC is a multiple of it), of which the first
  // `out_w` are the output's. `wide`: a stride-1 conv of an unpadded, materialised input is
  // computed on the input's width (row = input width), so that B[k, n] = x_flat[offset(k) + n]:
  // im2col rows are contiguous slices, packed with vector loads; the extra columns are dropped.
  int64_t row = 0, out_w = 0;
  bool wide = false;
  // `gathered`: any other conv of a materialised, unpadded input: B[k, n] = x_flat[base(k) +
  // offset(n)], the offsets of a task's columns computed once per task into a table.
  bool gathered = false;
  // Matmul operands that are strided views of a buffer (packed with plain loads; unit stride
  // along the panel: vector loads). `direct_a`: A's rows are contiguous along K, so the
  // microkernel reads A in place (row pointers) and A is never packed.
  std::optional<StridedView> a_view, b_view;
  bool direct_a = false;
  int64_t m_tasks() const { return (m + mt - 1) / mt; }
  int64_t n_blocks() const { return (n + nc - 1) / nc; }
  int64_t tasks() const { return batches * m_tasks() * n_blocks(); }
};

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& m, const ir::Graph& g, const ScheduledKernel& k, const CpuTarget& t);
  void emit();

 private:
  llvm::Module& module_;
  const CpuTarget& target_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const ir::Graph& g_;
  const ScheduledKernel& k_;
  std::vector<int> producer_;
  llvm::Function* kernel_fn_ = nullptr;  // the exported ABI function
  llvm::Function* fn_ = nullptr;         // the body: (buffers, begin, end) over parallel tasks
  llvm::BasicBlock* entry_ = nullptr;
  std::vector<llvm::Value*> buffers_;
  std::map<ir::ValueId, int> read_arg_;
  std::vector<std::map<std::pair<ir::ValueId, Index>, llvm::Value*>> memo_;

  // kernel_emitter.cpp
  // Returns the task count; `work` is work_estimate().
  int64_t emit_loop_body(llvm::Value* begin, llvm::Value* end, double work);
  void emit_entry(int64_t tasks, double work);
  double work_estimate() const;
  // for (i = begin; i < end; ++i) body(i), with a memo scope for the body.
  void range_loop(llvm::Value* begin, llvm::Value* end, const std::function<void(llvm::Value*)>& body);
  // if (cond) then_body() else else_body(), each in its own block; continues after both.
  void if_else(llvm::Value* cond, const std::function<void()>& then_body, const std::function<void()>& else_body);
  // The index over `extents` of flat row-major position `flat` (size-1 dims: constant 0).
  Index unflatten(llvm::Value* flat, const std::vector<int64_t>& extents);
  std::vector<int64_t> dims(ir::ValueId v) const { return static_dims(g_, v); }
  ir::DType dtype(ir::ValueId v) const { return g_.type(v).dtype; }
  const ir::Node& producer(ir::ValueId v) const;
  void loop_nest(const std::vector<int64_t>& extents, const std::function<void(const Index&)>& body);
  void loop_level(const std::vector<int64_t>& extents, size_t d, Index& idx,
                  const std::function<void(const Index&)>& body);
  llvm::Value* address(ir::ValueId v, int arg, const Index& idx);
  llvm::Value* load(ir::ValueId v, int arg, const Index& idx);
  void store(ir::ValueId v, int arg, const Index& idx, llvm::Value* x);
  llvm::Value* emit(ir::ValueId v, const Index& idx);
  Index broadcast(const std::vector<int64_t>& from, size_t to_rank, const Index& idx);
  llvm::Value* operand(const ir::Node& n, size_t i, const Index& idx, ir::DType as);
  llvm::Value* emit_node(const ir::Node& n, ir::ValueId result, const Index& idx);
  // A stack slot (in the entry block) holding an accumulator of compute type `t`, set to init.
  llvm::Value* accumulator(llvm::Type* t, llvm::Value* init);
  llvm::Value* i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  // While alive, floating adds and multiplies built by b_ may be reassociated and contracted.
  std::unique_ptr<llvm::IRBuilderBase::FastMathFlagGuard> reassociable_sums();
  llvm::Value* in_range(llvm::Value* i, int64_t n);   // 0 <= i < n, signed
  llvm::Value* clamp(llvm::Value* i, int64_t n);      // into [0, n-1] (n >= 1)

  // emit_views.cpp
  llvm::Value* emit_movement(const ir::Node& n, const Index& idx);
  Index view_index(const ir::Node& n, const Index& idx);
  Index reshape_index(const std::vector<int64_t>& dst, const std::vector<int64_t>& src, const Index& idx);
  llvm::Value* emit_pad(const ir::Node& n, const Index& idx);
  // The rows [begin, end) of a kernel whose root is pad `n`; false (nothing emitted) where the
  // operand is empty.
  bool emit_pad_rows(const ir::Node& n, llvm::Value* begin, llvm::Value* end);
  llvm::Value* emit_concat(const ir::Node& n, const Index& idx);
  llvm::Value* emit_index(const ir::Node& n, const Index& idx);
  llvm::Value* emit_arange(const ir::Node& n, const Index& idx);
  llvm::Value* emit_random(const ir::Node& n, const Index& idx);
  // `v` as a strided view of a buffer this kernel reads, if it is one (views of the same dtype
  // down to a materialised value; reshapes only where they keep the layout affine).
  std::optional<StridedView> strided_view(ir::ValueId v) const;
  // Pointer to element `idx` of a strided view (batch-broadcast dims may be given as 0).
  llvm::Value* strided_address(const StridedView& sv, const Index& idx);

  // emit_gemm.cpp
  bool plan_gemm(GemmPlan& plan) const;
  void emit_gemm_tasks(const GemmPlan& plan, llvm::Value* begin, llvm::Value* end);
  llvm::Function* gemm_microkernel(const GemmPlan& plan, int64_t rows, bool direct_a);
  llvm::Value* packed_weight(ir::ValueId view, int64_t width);
  void gemm_pack_wide_b(const GemmPlan& plan, const Index& batch, llvm::Value* jc, llvm::Value* nc,
                        llvm::Value* pc, llvm::Value* kc, llvm::Value* dst);
  llvm::Value* conv_input_base(const GemmPlan& plan, const Index& batch, llvm::Value* k);
  void gemm_conv_offsets(const GemmPlan& plan, llvm::Value* jc, int64_t count, llvm::Value* table);
  void gemm_pack_gathered_b(const GemmPlan& plan, const Index& batch, llvm::Value* nc, llvm::Value* pc,
                            llvm::Value* kc, llvm::Value* table, llvm::Value* dst);
  llvm::Value* gemm_a(const GemmPlan& plan, const Index& batch, llvm::Value* m, llvm::Value* k);
  llvm::Value* gemm_b(const GemmPlan& plan, const Index& batch, llvm::Value* k, llvm::Value* n);
  void gemm_pack(const GemmPlan& plan, bool pack_a, const Index& batch, llvm::Value* start,
                 llvm::Value* count, llvm::Value* pc, llvm::Value* kc, llvm::Value* dst);
  void gemm_epilogue(const GemmPlan& plan, const Index& batch, llvm::Value* ic, llvm::Value* mc,
                     llvm::Value* jc, llvm::Value* nc, llvm::Value* tile, int64_t ldc);
  llvm::Value* stack_array(llvm::Type* t, int64_t count);

  // emit_reductions.cpp
  llvm::Value* emit_reduce(const ir::Node& n, const Index& idx);
  llvm::Value* emit_arg_reduce(const ir::Node& n, const Index& idx);
  llvm::Value* emit_matmul(const ir::Node& n, const Index& idx);
  llvm::Value* emit_conv(const ir::Node& n, const Index& idx);
  llvm::Value* emit_pool(const ir::Node& n, const Index& idx);
  llvm::Value* emit_topk(const ir::Node& n, ir::ValueId result, const Index& idx);
  void emit_scan_kernel(const ir::Node& n);
  // The operand index of a reduction over `axes` (normalised) for result index `idx`.
  Index reduced_index(const std::vector<bool>& reduced, bool keepdim, const Index& idx,
                      const Index& r);
};

}  // namespace aotrace::lowering::cpu
