// Private to lowering/cpu/: the emitter of one kernel (one LLVM function per scheduled kernel),
// split by concern over three files:
//   kernel_emitter.cpp   the function, loop nests, loads/stores, elementwise ops, dispatch
//   emit_views.cpp       ops that map the index: movement (reshape, permute, expand, slice,
//                        flip, pad, concat), index loads (gather, index_select), arange
//   emit_reductions.cpp  ops with an inner loop per output element: reduce, arg-reduce,
//                        matmul, conv, pool, topk; and the scan kernel (cumsum)
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "lowering/cpu/llvm_backend.h"

namespace aotrace::lowering::cpu {

using Index = std::vector<llvm::Value*>;

// An int-list attribute (also given as a constant Shape).
std::vector<int64_t> int_list(const ir::Attrs& attrs, const std::string& key);

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& m, const ir::Graph& g, const ScheduledKernel& k);
  void emit();

 private:
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const ir::Graph& g_;
  const ScheduledKernel& k_;
  std::vector<int> producer_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::vector<llvm::Value*> buffers_;
  std::map<ir::ValueId, int> read_arg_;
  std::vector<std::map<std::pair<ir::ValueId, Index>, llvm::Value*>> memo_;

  // kernel_emitter.cpp
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
  llvm::Value* in_range(llvm::Value* i, int64_t n);   // 0 <= i < n, signed
  llvm::Value* clamp(llvm::Value* i, int64_t n);      // into [0, n-1] (n >= 1)

  // emit_views.cpp
  llvm::Value* emit_movement(const ir::Node& n, const Index& idx);
  Index view_index(const ir::Node& n, const Index& idx);
  Index reshape_index(const std::vector<int64_t>& dst, const std::vector<int64_t>& src, const Index& idx);
  llvm::Value* emit_pad(const ir::Node& n, const Index& idx);
  llvm::Value* emit_concat(const ir::Node& n, const Index& idx);
  llvm::Value* emit_index(const ir::Node& n, const Index& idx);
  llvm::Value* emit_arange(const ir::Node& n, const Index& idx);

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
