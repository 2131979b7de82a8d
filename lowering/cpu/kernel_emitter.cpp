// emit_kernel: one LLVM function per scheduled kernel, with the ABI of
// artifacts/runtime/aotrace_kernel_abi.h: void k(void* const* buffers, const int64_t* symbols,
// const aotrace_kernel_ctx* ctx). buffers[0] is the output, buffers[1..] the values it reads.
//
// The body is a loop nest over the root's shape (innermost contiguous) that stores
// emit(root, index). Every extent is a value, size(dim): a constant for a static dim (IRBuilder
// folds the index arithmetic on it, so static kernels are what they were before dynamic dims),
// else computed once in the body's entry block from the symbols (DESIGN §4: dynamic dims).
// emit() evaluates a value at an index vector:
//   - a materialised value is loaded (row-major offset of the index), converted from its
//     storage (bool bytes, f16/bf16 bits) to its compute type;
//   - Full is a constant; elementwise ops combine their operands, each evaluated at the
//     broadcast of the index (size-1 dims read index 0: broadcasting costs nothing);
//   - movement and index ops map the index (emit_views.cpp): views, never copies;
//   - reductions, matmul, conv, pool and topk emit their inner loops right there
//     (emit_reductions.cpp), accumulating in the compute type of their result.
// A scan (cumsum) root is the one exception: its kernel walks the scanned axis sequentially.
// A memo per loop scope evaluates each (value, index) once, so shared subexpressions are not
// re-emitted. Test: every lowering_tests EndToEnd.*, DTypes.*, Ops.* and Dynamic.* case.
#include "lowering/cpu/kernel_emitter.h"

#include <algorithm>
#include <set>

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>

namespace aotrace::lowering::cpu {


llvm::Value* emit_sym(llvm::IRBuilder<>& b, const ir::SymExpr& e,
                      const std::function<llvm::Value*(const std::string&)>& symbol) {
  using Kind = ir::SymNode::Kind;
  const ir::SymNode& n = e.node();
  if (n.kind == Kind::Const) return b.getInt64(static_cast<uint64_t>(n.value));
  if (n.kind == Kind::Symbol) return symbol(n.name);
  std::vector<llvm::Value*> a;
  for (const ir::SymExpr& arg : n.args) a.push_back(emit_sym(b, arg, symbol));
  llvm::Value* x = a[0];
  switch (n.kind) {
    case Kind::Add: for (size_t i = 1; i < a.size(); ++i) x = b.CreateAdd(x, a[i]); return x;
    case Kind::Mul: for (size_t i = 1; i < a.size(); ++i) x = b.CreateMul(x, a[i]); return x;
    case Kind::Min:
    case Kind::Max:
      for (size_t i = 1; i < a.size(); ++i) {
        llvm::Value* better = n.kind == Kind::Min ? b.CreateICmpSLT(a[i], x) : b.CreateICmpSGT(a[i], x);
        x = b.CreateSelect(better, a[i], x);
      }
      return x;
    case Kind::FloorDiv: case Kind::Mod: {
      // Python's: the remainder takes the divisor's sign (a divisor of 0 gives 0, never traps).
      llvm::Value* d = b.CreateSelect(b.CreateICmpEQ(a[1], b.getInt64(0)), b.getInt64(1), a[1]);
      llvm::Value* q = b.CreateSDiv(x, d);
      llvm::Value* r = b.CreateSRem(x, d);
      llvm::Value* zero = b.getInt64(0);
      llvm::Value* adjust = b.CreateAnd(b.CreateICmpNE(r, zero),
                                        b.CreateICmpNE(b.CreateICmpSLT(r, zero), b.CreateICmpSLT(d, zero)));
      if (n.kind == Kind::FloorDiv) return b.CreateSub(q, b.CreateZExt(adjust, b.getInt64Ty()));
      return b.CreateSelect(adjust, b.CreateAdd(r, d), r);
    }
    default: internal_error("unknown SymExpr kind in " + e.str());
  }
}

KernelEmitter::KernelEmitter(llvm::Module& m, const ir::Graph& g, const ScheduledKernel& k,
                             const CpuPlan& plan, const CpuTarget& t)
    : module_(m), target_(t), ctx_(m.getContext()), b_(ctx_), g_(g), k_(k), plan_(plan), kg_(g, k),
      producer_(kg_.producer_index), read_arg_(kg_.read_arg), max_(kg_.max) {
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  // The body has the ABI's aotrace_parallel_body type: (closure, begin, end); the GPU's warp
  // plans (CpuPlan::lanes) add the thread's lane.
  std::vector<llvm::Type*> params = {ptr, b_.getInt64Ty(), b_.getInt64Ty()};
  if (plan.lanes > 1) params.push_back(b_.getInt64Ty());
  auto* body_type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(body_type, llvm::Function::InternalLinkage, k.symbol + ".body", m);
  fn_->setDoesNotThrow();
  if (plan.lanes > 1) lane_ = fn_->getArg(3);
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
}

void KernelEmitter::emit() {
  KernelBody body = emit_body();
  emit_entry(body.tasks, plan_.work);
}

KernelBody KernelEmitter::emit_body() {
  b_.SetInsertPoint(entry_);
  std::set<int> generator_args;
  for (int i : k_.nodes)
    if (const ir::Node& n = g_.nodes[static_cast<size_t>(i)]; n.op == ir::OpKind::Random)
      if (auto it = read_arg_.find(n.operands[0]); it != read_arg_.end()) generator_args.insert(it->second);
  for (size_t a = 0; a < k_.buffers.size(); ++a) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), fn_->getArg(0), a);
    // On the GPU every buffer is in global memory (ld.global / st.global rather than generic
    // accesses; a CUDA device pointer is its global address) and starts at a multiple of 16
    // bytes (cuda_run.cpp: arena and weights at 64, the runtime's allocations at 256; entry.cpp
    // refuses a caller's device pointer that is not), so the vectoriser may join a thread's
    // neighbouring accesses (CpuPlan::row_chunk). Except the generator state (a Random's
    // operand, at any 8-byte word of the runtime's block): 8.
    llvm::LoadInst* buffer = b_.CreateAlignedLoad(
        target_.nvptx ? llvm::PointerType::get(ctx_, kGpuGlobalSpace) : b_.getPtrTy(), slot, llvm::Align(8));
    if (target_.nvptx && generator_args.count(static_cast<int>(a)) == 0)
      buffer->setMetadata(llvm::LLVMContext::MD_align,
                          llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt64(kGpuBufferAlign))}));
    buffers_.push_back(buffer);
  }
  alias_scopes();
  memo_.emplace_back();
  // The loops start in a block of their own: sizes are appended to the entry block as they are
  // first needed, ahead of every use.
  auto* start = llvm::BasicBlock::Create(ctx_, "start", fn_);
  b_.SetInsertPoint(start);
  ir::SymExpr tasks = emit_loop_body(fn_->getArg(1), fn_->getArg(2));
  b_.CreateRetVoid();
  llvm::IRBuilder<>(entry_).CreateBr(start);
  return {fn_, tasks, symbols_ != nullptr};
}

llvm::Value* KernelEmitter::size(const ir::SymExpr& e) {
  if (auto c = e.as_constant()) return i64(*c);
  std::string key = e.str();
  if (auto it = sizes_.find(key); it != sizes_.end()) return it->second;
  llvm::IRBuilder<> eb(entry_);
  if (symbols_ == nullptr) {  // after the buffer pointers in the closure
    llvm::Value* slot = eb.CreateConstInBoundsGEP1_64(eb.getPtrTy(), fn_->getArg(0), k_.buffers.size());
    symbols_ = eb.CreateAlignedLoad(eb.getPtrTy(), slot, llvm::Align(8), "symbols");
  }
  llvm::Value* v = emit_sym(eb, e, [&](const std::string& name) {
    llvm::Value*& loaded = sizes_[name];  // a symbol's str() is its name
    if (loaded == nullptr) {
      auto index = static_cast<uint64_t>(symbol_index(g_, name));
      loaded = eb.CreateAlignedLoad(eb.getInt64Ty(), eb.CreateConstInBoundsGEP1_64(eb.getInt64Ty(), symbols_, index),
                                    llvm::Align(8), name);
    }
    return loaded;
  });
  sizes_[key] = v;
  return v;
}

// Chunks of at most this many elements, whole, are emitted unrolled.
constexpr int64_t kUnrolledChunk = 4;

// The body's loops over its tasks [begin, end):
//   - a depthwise conv kernel (emit_depthwise.cpp): one task per block of channels × rows;
//   - a Winograd transform (emit_winograd.cpp): one task per row of tiles of one channel;
//   - a GEMM kernel (emit_gemm.cpp): one task per block of the output matrix;
//   - the GPU's tiled GEMM (emit_tiled_gemm.cpp): one task per tile, run by a thread block;
//   - a scan or a topk result: one task per row along its axis, which it walks in order
//     (emit_scan_kernel, emit_topk_rows); a scatter: one per run of neighbouring rows
//     (emit_scatter_rows);
//   - a reduction that keeps the innermost axis: one task per run of its outputs along it
//     (emit_column_reduction);
//   - a materialised pad: one task per row, its padding and interior as separate loops
//     (emit_pad_rows);
//   - otherwise one task per position of every output dim but the innermost, which stays a
//     static inner loop (contiguous: what the vectoriser wants); with fewer than 8 such rows
//     and enough work, the innermost dim is cut into chunks as well (CpuPlan::row_chunk); a
//     rank-1 root is split by element, a scalar root is one task.
ir::SymExpr KernelEmitter::emit_loop_body(llvm::Value* begin, llvm::Value* end) {
  if (plan_.depthwise) {
    const DepthwisePlan depthwise = for_target(*plan_.depthwise, target_.f32_lanes);
    emit_depthwise_tasks(depthwise, begin, end);
    return depthwise.tasks();
  }
  if (plan_.winograd) {
    const WinogradPlan winograd = for_target(*plan_.winograd, target_.f32_lanes);
    if (winograd.input) emit_winograd_input(winograd, begin, end);
    else if (winograd.fused) emit_winograd_fused(winograd, begin, end);
    else emit_winograd_output(winograd, begin, end);
    return winograd.tasks();
  }
  if (plan_.tiled) {
    emit_tiled_gemm(*plan_.tiled, begin, end);
    return plan_.tiled->tasks();
  }
  if (plan_.gemm) {
    emit_gemm_tasks(*plan_.gemm, begin, end);
    return plan_.gemm->tasks();
  }
  if (std::optional<ir::SymExpr> tasks = emit_column_reduction(begin, end)) return *tasks;
  if (std::optional<ir::SymExpr> tasks = emit_topk_rows(begin, end)) return *tasks;
  int p = producer_[static_cast<size_t>(k_.root)];
  bool is_copy = read_arg_.count(k_.root) != 0;  // an output copy kernel reads its own root
  const ir::Shape& extents = k_.loop_extents;
  if (p >= 0 && !is_copy && ir::op_info(g_.nodes[static_cast<size_t>(p)].op).category == ir::OpCategory::Scan) {
    const ir::Node& n = g_.nodes[static_cast<size_t>(p)];
    return n.op == ir::OpKind::Scatter ? emit_scatter_rows(n, begin, end) : emit_scan_kernel(n, begin, end);
  }
  for (const ir::SymExpr& e : extents)
    if (is_zero(e)) return 0;
  // The innermost dim is a loop of its own (every dim but it makes the tasks), except for a
  // scalar and a rank-1 root without chunks (a task per element).
  size_t split = extents.size() <= 1 ? extents.size() : extents.size() - 1;
  if (extents.size() == 1 && plan_.row_chunk > 0) split = 0;
  ir::Shape outer(extents.begin(), extents.begin() + static_cast<std::ptrdiff_t>(split));
  ir::Shape inner(extents.begin() + static_cast<std::ptrdiff_t>(split), extents.end());
  ir::SymExpr tasks = 1;
  for (const ir::SymExpr& e : outer) tasks = tasks * e;
  if (p >= 0 && !is_copy && k_.reduction < 0 && !outer.empty() &&
      g_.nodes[static_cast<size_t>(p)].op == ir::OpKind::Pad && emit_pad_rows(g_.nodes[static_cast<size_t>(p)], begin, end))
    return tasks;
  // Few rows: the innermost dim in chunks too (CpuPlan::row_chunk).
  if (const int64_t chunk = plan_.row_chunk; chunk > 0) {
    AOT_CHECK(!inner.empty(), "a kernel's rows are chunked but it has no innermost loop");
    ir::SymExpr chunks = floordiv(inner[0] + (chunk - 1), chunk);
    // Whole chunks (a static extent that the chunk divides): a loop of a constant trip count.
    const std::optional<int64_t> whole = inner[0].as_constant();
    const bool exact = whole && *whole % chunk == 0;
    range_loop(begin, end, [&](llvm::Value* t) {
      Index head = unflatten(b_.CreateUDiv(t, size(chunks)), outer);
      llvm::Value* lo = b_.CreateMul(b_.CreateURem(t, size(chunks)), i64(chunk));
      auto element = [&](llvm::Value* j) {
        Index idx = head;
        idx.push_back(j);
        store(k_.root, 0, idx, emit(k_.root, idx));
      };
      if (exact && chunk > 1 && chunk <= kUnrolledChunk) {
        // The GPU's few elements per thread, straight-line: their loads and stores side by
        // side for the vectoriser (a loop with a large body would stay rolled). Not a chunk of
        // one, which stays a loop of one: straight-line, resnet18's 2x2 direct convs made LLVM
        // 16's NVPTX backend fail ("Cannot select: i1 = mul", llvm-project issue 57404).
        for (int64_t j = 0; j < chunk; ++j) {
          memo_.emplace_back();
          element(b_.CreateAdd(lo, i64(j), "", true, true));
          memo_.pop_back();
        }
        return;
      }
      llvm::Value* hi = b_.CreateAdd(lo, i64(chunk), "", true, true);
      if (!exact) hi = b_.CreateSelect(b_.CreateICmpSLT(hi, size(inner[0])), hi, size(inner[0]));
      range_loop(lo, hi, element);
    });
    return tasks * chunks;
  }
  range_loop(begin, end, [&](llvm::Value* t) {
    Index head = unflatten(t, outer);
    loop_nest(inner, [&](const Index& tail) {
      Index idx = head;
      idx.insert(idx.end(), tail.begin(), tail.end());
      store(k_.root, 0, idx, emit(k_.root, idx));
    });
  });
  return tasks;
}

// The exported kernel: runs the body over [0, tasks), through ctx->parallel_for when the
// kernel is big enough to be worth waking other threads (and the runtime offers one). With
// symbolic sizes, the task count is computed from the symbols, the closure is the buffers
// followed by the symbols pointer, and fewer than 2 tasks run inline.
void KernelEmitter::emit_entry(const ir::SymExpr& tasks, double work) {
  auto* ptr = b_.getPtrTy();
  llvm::IRBuilder<> b(ctx_);
  const KernelEntry entry = begin_kernel_entry(b, module_, g_, k_, {fn_, tasks, symbols_ != nullptr});
  kernel_fn_ = entry.fn;
  llvm::Value* ctx = kernel_fn_->getArg(2);
  llvm::Value* closure = entry.closure;
  llvm::Value* count = entry.tasks;
  auto call_serial = [&](llvm::IRBuilder<>& at) {
    at.CreateCall(fn_, {closure, at.getInt64(0), count});
    at.CreateRetVoid();
  };
  std::optional<int64_t> fixed = tasks.as_constant();
  if ((fixed && *fixed <= 1) || work < kParallelWork) {
    fn_->addFnAttr(llvm::Attribute::AlwaysInline);
    call_serial(b);
    return;
  }
  auto* serial = llvm::BasicBlock::Create(ctx_, "serial", kernel_fn_);
  auto* check_fn = llvm::BasicBlock::Create(ctx_, "has_ctx", kernel_fn_);
  auto* parallel = llvm::BasicBlock::Create(ctx_, "parallel", kernel_fn_);
  llvm::Value* inline_call = b.CreateIsNull(ctx);
  if (!fixed) inline_call = b.CreateOr(inline_call, b.CreateICmpSLT(count, b.getInt64(2)));
  b.CreateCondBr(inline_call, serial, check_fn);
  b.SetInsertPoint(check_fn);
  // aotrace_kernel_ctx { void* pool; void (*parallel_for)(pool, n, body, closure); }
  llvm::Value* pool = b.CreateAlignedLoad(ptr, ctx, llvm::Align(8));
  llvm::Value* pf = b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, ctx, 1), llvm::Align(8));
  b.CreateCondBr(b.CreateIsNull(pf), serial, parallel);
  b.SetInsertPoint(parallel);
  auto* pf_type = llvm::FunctionType::get(b.getVoidTy(), {ptr, b.getInt64Ty(), ptr, ptr}, false);
  b.CreateCall(pf_type, pf, {pool, count, fn_, closure});
  b.CreateRetVoid();
  llvm::IRBuilder<> s(serial);
  call_serial(s);
}

llvm::BranchInst* KernelEmitter::range_loop(llvm::Value* begin, llvm::Value* end,
                                            const std::function<void(llvm::Value*)>& body, int64_t step) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "range", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "range.end", fn_);
  b_.CreateCondBr(b_.CreateICmpSLT(begin, end), header, exit);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "t");
  i->addIncoming(begin, pre);
  memo_.emplace_back();
  body(i);
  memo_.pop_back();
  llvm::Value* next = b_.CreateNSWAdd(i, b_.getInt64(step));
  i->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst* latch = b_.CreateCondBr(b_.CreateICmpSLT(next, end), header, exit);
  b_.SetInsertPoint(exit);
  return latch;
}

void KernelEmitter::lane_loop(llvm::Value* first, llvm::Value* end, const std::function<void(llvm::Value*)>& body,
                              int64_t step) {
  llvm::BranchInst* latch = range_loop(first, end, body, step);
  llvm::MDNode* count = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
                                                 llvm::ConstantAsMetadata::get(b_.getInt32(kLaneUnroll))});
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, {nullptr, count});
  loop_id->replaceOperandWith(0, loop_id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
}

llvm::Value* KernelEmitter::binary_search(llvm::Value* end, const std::function<llvm::Value*(llvm::Value*)>& past) {
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "search", fn_);
  auto* probe = llvm::BasicBlock::Create(ctx_, "search.probe", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, "search.end", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* lo = b_.CreatePHI(i64t, 2, "lo");
  llvm::PHINode* hi = b_.CreatePHI(i64t, 2, "hi");
  lo->addIncoming(i64(0), pre);
  hi->addIncoming(end, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), probe, done);
  b_.SetInsertPoint(probe);
  memo_.emplace_back();
  llvm::Value* mid = b_.CreateLShr(b_.CreateAdd(lo, hi), 1);
  llvm::Value* go = past(mid);
  memo_.pop_back();
  lo->addIncoming(b_.CreateSelect(go, b_.CreateAdd(mid, i64(1)), lo), b_.GetInsertBlock());
  hi->addIncoming(b_.CreateSelect(go, hi, mid), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(done);
  return lo;
}

llvm::Value* KernelEmitter::block_array(llvm::Type* t, int64_t count, const std::string& name) {
  if (!target_.nvptx) return stack_array(t, count);
  auto* type = llvm::ArrayType::get(t, static_cast<uint64_t>(count));
  auto* shared = new llvm::GlobalVariable(module_, type, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::UndefValue::get(type), k_.symbol + "." + name, nullptr,
                                          llvm::GlobalValue::NotThreadLocal, /*shared*/ 3);
  shared->setAlignment(llvm::Align(16));
  return shared;
}

void KernelEmitter::block_phase(int64_t threads, bool barrier, const std::function<void(llvm::Value*)>& body) {
  if (!target_.nvptx) {
    range_loop(i64(0), i64(threads), body);
    return;
  }
  memo_.emplace_back();
  body(lane_);
  memo_.pop_back();
  if (barrier) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

void KernelEmitter::if_else(llvm::Value* cond, const std::function<void()>& then_body,
                            const std::function<void()>& else_body) {
  auto* then_block = llvm::BasicBlock::Create(ctx_, "then", fn_);
  auto* else_block = llvm::BasicBlock::Create(ctx_, "else", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, "endif", fn_);
  b_.CreateCondBr(cond, then_block, else_block);
  b_.SetInsertPoint(then_block);
  then_body();
  b_.CreateBr(done);
  b_.SetInsertPoint(else_block);
  else_body();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

Index KernelEmitter::unflatten(llvm::Value* flat, const ir::Shape& extents) {
  Index idx(extents.size());
  llvm::Value* rest = flat;
  for (size_t d = extents.size(); d-- > 0;) {
    if (is_one(extents[d])) {
      idx[d] = b_.getInt64(0);
    } else if (d == 0) {
      idx[d] = rest;
    } else {
      idx[d] = b_.CreateURem(rest, size(extents[d]));
      rest = b_.CreateUDiv(rest, size(extents[d]));
    }
  }
  return idx;
}

const ir::Node& KernelEmitter::producer(ir::ValueId v) const {
  int p = producer_[static_cast<size_t>(v)];
  AOT_CHECK(p >= 0, "kernel " + k_.symbol + " evaluates an unmaterialised input %" + std::to_string(v));
  return g_.nodes[static_cast<size_t>(p)];
}

// Loops over `extents` (row-major), calling body with the index; skips extents of 1 and
// emits nothing when one is 0 (a symbolic extent is checked at run time). Values emitted inside
// live in a new memo scope.
void KernelEmitter::loop_nest(const ir::Shape& extents,
                              const std::function<void(const Index&)>& body) {
  for (const ir::SymExpr& e : extents)
    if (is_zero(e)) return;
  Index idx;
  loop_level(extents, 0, idx, body);
}

void KernelEmitter::loop_level(const ir::Shape& extents, size_t d, Index& idx,
                               const std::function<void(const Index&)>& body) {
  if (d == extents.size()) {
    memo_.emplace_back();
    body(idx);
    memo_.pop_back();
    return;
  }
  if (is_one(extents[d])) {
    idx.push_back(b_.getInt64(0));
    loop_level(extents, d + 1, idx, body);
    idx.pop_back();
    return;
  }
  llvm::Value* n = size(extents[d]);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "loop.end", fn_);
  if (extents[d].is_constant()) b_.CreateBr(header);
  else b_.CreateCondBr(b_.CreateICmpSGT(n, i64(0)), header, exit);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(b_.getInt64(0), pre);
  idx.push_back(i);
  loop_level(extents, d + 1, idx, body);
  idx.pop_back();
  llvm::Value* next = b_.CreateNUWAdd(i, b_.getInt64(1));
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpULT(next, n), header, exit);
  b_.SetInsertPoint(exit);
}

void KernelEmitter::row_loop(const ir::SymExpr& extent, const std::function<void(llvm::Value*)>& body) {
  if (is_zero(extent)) return;
  llvm::Value* n = size(extent);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "row", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "row.end", fn_);
  if (extent.is_constant()) b_.CreateBr(header);
  else b_.CreateCondBr(b_.CreateICmpSGT(n, i64(0)), header, exit);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "w");
  i->addIncoming(b_.getInt64(0), pre);
  memo_.emplace_back();
  body(i);
  memo_.pop_back();
  llvm::Value* next = b_.CreateNUWAdd(i, b_.getInt64(1));
  i->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst* back = b_.CreateCondBr(b_.CreateICmpULT(next, n), header, exit);
  // AVX2, AVX-512: masked vector ops for the row's tail; not for rows of 1 to 3 (a 2×2 image's),
  // where a vector gains nothing and LLVM 16 warned that it could not vectorise a bf16 row.
  const bool short_row = extent.is_constant() && extent.constant() < 4;
  if (target_.f32_lanes >= 8 && !short_row) {
    auto flag = [&](const char* name) {
      return llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name), llvm::ConstantAsMetadata::get(b_.getTrue())});
    };
    llvm::MDNode* id = llvm::MDNode::getDistinct(
        ctx_, {nullptr, flag("llvm.loop.vectorize.enable"), flag("llvm.loop.vectorize.predicate.enable")});
    id->replaceOperandWith(0, id);
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b_.SetInsertPoint(exit);
}

// For an index `i` = x + c (nsw) with x known non-negative and c a constant >= 0: sets `i` to x
// and returns c; else 0.
static int64_t peel_constant(llvm::Value*& i, const llvm::DataLayout& layout) {
  auto* add = llvm::dyn_cast<llvm::BinaryOperator>(i);
  if (add == nullptr || add->getOpcode() != llvm::Instruction::Add || !add->hasNoSignedWrap()) return 0;
  auto* c = llvm::dyn_cast<llvm::ConstantInt>(add->getOperand(1));
  if (c == nullptr || c->isNegative() || !llvm::isKnownNonNegative(add->getOperand(0), layout)) return 0;
  i = add->getOperand(0);
  return c->getSExtValue();
}

llvm::Value* KernelEmitter::address(ir::ValueId v, int arg, const Index& idx) {
  const ir::Shape& shape = dims(v);
  llvm::Value* offset = b_.getInt64(0);
  ir::SymExpr stride = 1;
  // An innermost index x + c with x >= 0 and c >= 0 (a GPU thread's element c of its chunk:
  // emit_loop_body) is addressed as (the offset with x) + c, so that the thread's addresses
  // differ by constants the vectoriser sees however the optimiser rewrites the offset's other
  // terms (both addresses in bounds: inbounds holds).
  Index at = idx;
  const int64_t tail = at.empty() ? 0 : peel_constant(at.back(), module_.getDataLayout());
  for (size_t d = shape.size(); d-- > 0;) {
    if (!is_one(shape[d])) offset = b_.CreateAdd(offset, b_.CreateMul(at[d], size(stride)));
    stride = stride * shape[d];
  }
  llvm::Type* t = storage_type(ctx_, dtype(v));
  llvm::Value* base = b_.CreateInBoundsGEP(t, buffers_[static_cast<size_t>(arg)], offset);
  return tail == 0 ? base : b_.CreateConstInBoundsGEP1_64(t, base, static_cast<uint64_t>(tail));
}

// The output (argument 0) never shares memory with an argument the kernel reads: the memory
// plan gives buffers live in the same kernel disjoint ranges, an updated input's new value goes
// to scratch memory, and the runtime refuses caller buffers that overlap. Telling LLVM so lets
// it vectorise loops whose loads it cannot bound (clamped or padded index maps), which it
// otherwise left scalar because it could not emit the runtime overlap checks. A read of the
// output buffer itself (a scan reading back its prefix) keeps the output's scope: it may alias.
void KernelEmitter::alias_scopes() {
  llvm::MDBuilder md(ctx_);
  llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(k_.symbol);
  std::vector<llvm::MDNode*> scopes;
  for (size_t a = 0; a < k_.buffers.size(); ++a) scopes.push_back(md.createAnonymousAliasScope(domain));
  for (size_t a = 0; a < scopes.size(); ++a) {
    std::vector<llvm::Metadata*> others;  // the output for a read, the reads for the output
    for (size_t o = 0; o < scopes.size(); ++o)
      if ((o == 0) != (a == 0) && k_.buffers[o] != k_.buffers[a]) others.push_back(scopes[o]);
    alias_md_.push_back({llvm::MDNode::get(ctx_, {scopes[a]}), others.empty() ? nullptr : llvm::MDNode::get(ctx_, others)});
  }
}

void KernelEmitter::mark_alias(llvm::Instruction* access, int arg) {
  const auto& [scope, noalias] = alias_md_[static_cast<size_t>(arg)];
  access->setMetadata(llvm::LLVMContext::MD_alias_scope, scope);
  if (noalias != nullptr) access->setMetadata(llvm::LLVMContext::MD_noalias, noalias);
  // On the GPU, what a kernel reads and does not write is constant while it runs: the
  // read-only data path (ld.global.nc).
  if (target_.nvptx && llvm::isa<llvm::LoadInst>(access) && arg != 0 &&
      k_.buffers[static_cast<size_t>(arg)] != k_.buffers[0])
    access->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
}

llvm::Value* KernelEmitter::load(ir::ValueId v, int arg, const Index& idx) {
  llvm::Type* t = storage_type(ctx_, dtype(v));
  llvm::LoadInst* x = b_.CreateAlignedLoad(t, address(v, arg, idx), llvm::Align(ir::dtype_size(dtype(v))));
  mark_alias(x, arg);
  llvm::Value* widened = from_storage(b_, x, dtype(v));
  if (widened != x) half_bits_[{widened, dtype(v)}] = x;
  return widened;
}

llvm::Value* KernelEmitter::round_to_type(llvm::Value* x, ir::DType t) {
  if (t != ir::DType::f16 && t != ir::DType::bf16) return x;
  llvm::Value* bits = to_storage(b_, x, t);
  llvm::Value* widened = from_storage(b_, bits, t);
  half_bits_[{widened, t}] = bits;
  return widened;
}

llvm::Value* KernelEmitter::load_widened(ir::DType t, llvm::Value* at, llvm::Value* index, int64_t count) {
  llvm::Type* stored = storage_type(ctx_, t);
  llvm::Type* type = count == 1 ? stored : llvm::FixedVectorType::get(stored, static_cast<unsigned>(count));
  return from_storage(b_, b_.CreateAlignedLoad(type, b_.CreateInBoundsGEP(stored, at, index), llvm::Align(ir::dtype_size(t))), t);
}

void KernelEmitter::store(ir::ValueId v, int arg, const Index& idx, llvm::Value* x) {
  auto known = half_bits_.find({x, dtype(v)});
  x = known != half_bits_.end() ? known->second : to_storage(b_, x, dtype(v));
  mark_alias(b_.CreateAlignedStore(x, address(v, arg, idx), llvm::Align(ir::dtype_size(dtype(v)))), arg);
}

// Whether emit_node gives `n`'s result of type `t` rounded to `t` already: a cast (convert()
// rounds), or an op exact in `t` when its operands are of `t` (their values moved, selected,
// negated, their magnitude, floor or ceiling; a constant: constant() rounds), where the operands
// it reads values of are (where's condition and the indices of gathers excepted).
bool KernelEmitter::rounded_to_its_type(const ir::Node& n, ir::DType t) const {
  using ir::OpKind;
  const ir::OpCategory cat = ir::op_info(n.op).category;
  size_t first = 0, end = n.operands.size();
  switch (n.op) {
    case OpKind::Cast: return true;
    case OpKind::Full: case OpKind::Neg: case OpKind::Relu: case OpKind::Abs: case OpKind::Floor:
    case OpKind::Ceil: case OpKind::Maximum: case OpKind::Minimum:
      break;
    case OpKind::Where: first = 1; break;
    case OpKind::Gather: case OpKind::IndexSelect: end = 1; break;
    default:
      if (cat != ir::OpCategory::Movement) return false;
  }
  for (size_t i = first; i < end; ++i)
    if (dtype(n.operands[i]) != t) return false;
  return true;
}

llvm::Value* KernelEmitter::emit(ir::ValueId v, const Index& idx) {
  auto key = std::make_pair(v, idx);
  for (const auto& scope : memo_)
    if (auto it = scope.find(key); it != scope.end()) return it->second;
  llvm::Value* x;
  if (auto it = read_arg_.find(v); it != read_arg_.end()) {
    x = load(v, it->second, idx);
  } else {
    // An f16/bf16 result is computed in f32 and rounded to its type after every op, as eager
    // rounds it: a fused chain (x * 3 + 1) gives eager's numbers, not more precise ones. Not
    // where it is exact already (LLVM cannot see that through the integer widening).
    const ir::Node& n = producer(v);
    x = emit_node(n, v, idx);
    if (!rounded_to_its_type(n, dtype(v))) x = round_to_type(x, dtype(v));
  }
  memo_.back()[key] = x;
  return x;
}

// `idx` of a result with `to` shape, seen by an operand of `from` shape (numpy broadcasting).
Index KernelEmitter::broadcast(const ir::Shape& from, size_t to_rank, const Index& idx) {
  Index out;
  for (size_t d = 0; d < from.size(); ++d)
    out.push_back(is_one(from[d]) ? b_.getInt64(0) : idx[d + to_rank - from.size()]);
  return out;
}

llvm::Value* KernelEmitter::operand(const ir::Node& n, size_t i, const Index& idx, ir::DType as) {
  ir::ValueId o = n.operands[i];
  llvm::Value* x = emit(o, broadcast(dims(o), idx.size(), idx));
  return convert(b_, x, dtype(o), as);
}

llvm::Value* KernelEmitter::emit_node(const ir::Node& n, ir::ValueId result, const Index& idx) {
  ir::DType rt = dtype(result);
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::Source:
      if (n.op == ir::OpKind::Arange) return emit_arange(n, idx);
      if (n.op == ir::OpKind::Random) return emit_random(n, idx);
      return constant(b_, n.attrs.f("value"), rt);
    case ir::OpCategory::Unary: return emit_unary(b_, n.op, operand(n, 0, idx, rt), rt);
    case ir::OpCategory::Cast: return operand(n, 0, idx, rt);
    case ir::OpCategory::Binary:
      return emit_binary(b_, n.op, operand(n, 0, idx, rt), operand(n, 1, idx, rt), rt);
    case ir::OpCategory::Compare: {
      ir::DType ct = ir::promote(dtype(n.operands[0]), dtype(n.operands[1]));
      return emit_compare(b_, n.op, operand(n, 0, idx, ct), operand(n, 1, idx, ct), ct);
    }
    case ir::OpCategory::Ternary: {
      llvm::Value* cond = operand(n, 0, idx, ir::DType::b8);
      return b_.CreateSelect(cond, operand(n, 1, idx, rt), operand(n, 2, idx, rt));
    }
    case ir::OpCategory::Movement: return emit_movement(n, idx);
    case ir::OpCategory::Index: return emit_index(n, idx);
    case ir::OpCategory::Reduce:
      if (n.op == ir::OpKind::ArgMax || n.op == ir::OpKind::ArgMin) return emit_arg_reduce(n, idx);
      return emit_reduce(n, idx);
    case ir::OpCategory::Matmul: return emit_matmul(n, idx);
    case ir::OpCategory::Conv: return emit_conv(n, idx);
    case ir::OpCategory::Pool: return emit_pool(n, idx);
    case ir::OpCategory::Sort: internal_error("topk inlined into a kernel: it is always a kernel root (emit_topk_rows)");
    default: internal_error("op " + std::string(ir::op_name(n.op)) + " reached CPU codegen");
  }
}

llvm::Value* KernelEmitter::accumulator(llvm::Type* t, llvm::Value* init) {
  llvm::IRBuilder<> eb(entry_, entry_->begin());
  llvm::AllocaInst* acc = eb.CreateAlloca(t);
  b_.CreateStore(init, acc);
  return acc;
}

std::unique_ptr<llvm::IRBuilderBase::FastMathFlagGuard> KernelEmitter::reassociable_sums() {
  auto guard = std::make_unique<llvm::IRBuilderBase::FastMathFlagGuard>(b_);
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  fmf.setAllowContract();
  b_.setFastMathFlags(fmf);
  return guard;
}

llvm::Value* KernelEmitter::in_range(llvm::Value* i, const ir::SymExpr& n) {
  // One unsigned compare: a negative i is a huge unsigned value.
  return b_.CreateICmpULT(i, size(n));
}

llvm::Value* KernelEmitter::clamp(llvm::Value* i, const ir::SymExpr& n) {
  llvm::Value* lo = b_.CreateSelect(b_.CreateICmpSLT(i, i64(0)), i64(0), i);
  llvm::Value* last = size(n - 1);
  return b_.CreateSelect(b_.CreateICmpSGT(lo, last), last, lo);
}

llvm::Value* KernelEmitter::smin(llvm::Value* x, llvm::Value* y) {
  return b_.CreateSelect(b_.CreateICmpSLT(x, y), x, y);
}

bool KernelEmitter::may_leave(const ir::SymExpr& out, int64_t stride, int64_t taps, int64_t dilation,
                              const ir::SymExpr& in) {
  // The last position read is (out - 1)·stride + (taps - 1)·dilation; provably inside when
  // in minus it is a positive constant.
  auto slack = (in - ((out - 1) * stride + (taps - 1) * dilation)).as_constant();
  return !slack || *slack <= 0;
}

void emit_kernel(llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel, const CpuPlan& plan,
                 const CpuTarget& target) {
  KernelEmitter(module, g, kernel, plan, target).emit();
}

KernelEntry begin_kernel_entry(llvm::IRBuilder<>& b, llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel,
                               const KernelBody& body) {
  auto* ptr = b.getPtrTy();
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, ptr}, false),
                                    llvm::Function::ExternalLinkage, kernel.symbol, module);
  fn->setDoesNotThrow();
  fn->setVisibility(llvm::GlobalValue::DefaultVisibility);
  b.SetInsertPoint(llvm::BasicBlock::Create(module.getContext(), "entry", fn));
  llvm::Value* buffers = fn->getArg(0);
  llvm::Value* symbols = fn->getArg(1);
  llvm::Value* closure = buffers;
  if (body.reads_symbols) {
    const size_t n = kernel.buffers.size();
    closure = b.CreateAlloca(ptr, b.getInt64(n + 1), "closure");
    for (size_t a = 0; a < n; ++a)
      b.CreateAlignedStore(b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, buffers, a), llvm::Align(8)),
                           b.CreateConstInBoundsGEP1_64(ptr, closure, a), llvm::Align(8));
    b.CreateAlignedStore(symbols, b.CreateConstInBoundsGEP1_64(ptr, closure, n), llvm::Align(8));
  }
  std::map<std::string, llvm::Value*> loaded;
  llvm::Value* tasks = emit_sym(b, body.tasks, [&](const std::string& name) {
    llvm::Value*& v = loaded[name];
    if (v == nullptr) {
      auto index = static_cast<uint64_t>(symbol_index(g, name));
      v = b.CreateAlignedLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), symbols, index),
                              llvm::Align(8), name);
    }
    return v;
  });
  return {fn, closure, tasks};
}

KernelBody emit_kernel_body(llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel,
                            const CpuPlan& plan, const CpuTarget& target) {
  return KernelEmitter(module, g, kernel, plan, target).emit_body();
}

}  // namespace aotrace::lowering::cpu
