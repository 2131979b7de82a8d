// emit_kernel: one LLVM function per scheduled kernel, with the ABI of
// artifacts/runtime/aotrace_kernel_abi.h: void k(void* const* buffers, const int64_t* symbols,
// const aotrace_kernel_ctx* ctx). buffers[0] is the output, buffers[1..] the values it reads.
//
// The body is a loop nest over the root's shape (constant trip counts, innermost contiguous)
// that stores emit(root, index). emit() evaluates a value at an index vector:
//   - a materialised value is loaded (row-major offset of the index), converted from its
//     storage (bool bytes, f16/bf16 bits) to its compute type;
//   - Full is a constant; elementwise ops combine their operands, each evaluated at the
//     broadcast of the index (size-1 dims read index 0: broadcasting costs nothing);
//   - movement and index ops map the index (emit_views.cpp): views, never copies;
//   - reductions, matmul, conv, pool and topk emit their inner loops right there
//     (emit_reductions.cpp), accumulating in the compute type of their result.
// A scan (cumsum) root is the one exception: its kernel walks the scanned axis sequentially.
// A memo per loop scope evaluates each (value, index) once, so shared subexpressions are not
// re-emitted. Test: every lowering_tests EndToEnd.*, DTypes.* and Ops.* case.
#include "lowering/cpu/kernel_emitter.h"

#include <algorithm>

#include <llvm/IR/Function.h>

namespace aotrace::lowering::cpu {

// Below this many operations, waking threads costs more than it gains: one task, inline.
constexpr double kParallelWork = 32768;

std::vector<int64_t> int_list(const ir::Attrs& attrs, const std::string& key) {
  const ir::AttrValue& v = attrs.items.at(key);
  if (const auto* ints = std::get_if<std::vector<int64_t>>(&v)) return *ints;
  if (const auto* one = std::get_if<int64_t>(&v)) return {*one};
  std::vector<int64_t> out;
  for (const ir::SymExpr& e : std::get<ir::Shape>(v)) out.push_back(e.constant());
  return out;
}

KernelEmitter::KernelEmitter(llvm::Module& m, const ir::Graph& g, const ScheduledKernel& k,
                             const CpuTarget& t)
    : module_(m), target_(t), ctx_(m.getContext()), b_(ctx_), g_(g), k_(k),
      producer_(g.num_values(), -1) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId r : g.nodes[i].results) producer_[static_cast<size_t>(r)] = static_cast<int>(i);
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr}, false);
  kernel_fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, k.symbol, m);
  kernel_fn_->setDoesNotThrow();
  kernel_fn_->setVisibility(llvm::GlobalValue::DefaultVisibility);
  // The body has the ABI's aotrace_parallel_body type: (closure = buffers, begin, end).
  auto* body_type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, b_.getInt64Ty(), b_.getInt64Ty()}, false);
  fn_ = llvm::Function::Create(body_type, llvm::Function::InternalLinkage, k.symbol + ".body", m);
  fn_->setDoesNotThrow();
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
}

void KernelEmitter::emit() {
  b_.SetInsertPoint(entry_);
  for (size_t a = 0; a < k_.buffers.size(); ++a) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), fn_->getArg(0), a);
    buffers_.push_back(b_.CreateAlignedLoad(b_.getPtrTy(), slot, llvm::Align(8)));
  }
  for (size_t r = 0; r < k_.read_values.size(); ++r) read_arg_[k_.read_values[r]] = static_cast<int>(r + 1);
  memo_.emplace_back();
  double work = work_estimate();
  int64_t tasks = emit_loop_body(fn_->getArg(1), fn_->getArg(2), work);
  b_.CreateRetVoid();
  emit_entry(tasks, work);
}

// The body's loops over its tasks [begin, end):
//   - a GEMM kernel (emit_gemm.cpp): one task per block of the output matrix;
//   - a scan: one task, the whole kernel (it walks its axis in order);
//   - a materialised pad: one task per row, its padding and interior as separate loops
//     (emit_pad_rows);
//   - otherwise one task per position of every output dim but the innermost, which stays a
//     static inner loop (contiguous: what the vectoriser wants); with fewer than 8 such rows
//     and enough work, the innermost dim is cut into chunks as well; a rank-1 root is split
//     by element, a scalar root is one task.
int64_t KernelEmitter::emit_loop_body(llvm::Value* begin, llvm::Value* end, double work) {
  GemmPlan gemm;
  if (plan_gemm(gemm)) {
    emit_gemm_tasks(gemm, begin, end);
    return gemm.tasks();
  }
  int p = producer_[static_cast<size_t>(k_.root)];
  bool is_copy = read_arg_.count(k_.root) != 0;  // an output copy kernel reads its own root
  const std::vector<int64_t>& extents = k_.loop_extents;
  if (p >= 0 && !is_copy && ir::op_info(g_.nodes[static_cast<size_t>(p)].op).category == ir::OpCategory::Scan) {
    range_loop(begin, end, [&](llvm::Value*) { emit_scan_kernel(g_.nodes[static_cast<size_t>(p)]); });
    return 1;
  }
  for (int64_t e : extents)
    if (e == 0) return 0;
  size_t split = extents.size() <= 1 ? extents.size() : extents.size() - 1;
  std::vector<int64_t> outer(extents.begin(), extents.begin() + static_cast<std::ptrdiff_t>(split));
  std::vector<int64_t> inner(extents.begin() + static_cast<std::ptrdiff_t>(split), extents.end());
  int64_t tasks = 1;
  for (int64_t e : outer) tasks *= e;
  if (p >= 0 && !is_copy && k_.reduction < 0 && !outer.empty() &&
      g_.nodes[static_cast<size_t>(p)].op == ir::OpKind::Pad && emit_pad_rows(g_.nodes[static_cast<size_t>(p)], begin, end))
    return tasks;
  if (!inner.empty() && tasks < 8 && inner[0] >= 64 && work >= kParallelWork) {
    // Few rows (a batch-1 linear layer: [1, N]): the innermost dim is split into chunks too, so
    // that there are tasks for every thread; chunks stay multiples of 16 for the vectoriser.
    int64_t chunk = (inner[0] + 7) / 8;
    chunk = (chunk + 15) / 16 * 16;
    int64_t chunks = (inner[0] + chunk - 1) / chunk;
    range_loop(begin, end, [&](llvm::Value* t) {
      Index head = unflatten(b_.CreateUDiv(t, i64(chunks)), outer);
      llvm::Value* lo = b_.CreateMul(b_.CreateURem(t, i64(chunks)), i64(chunk));
      llvm::Value* hi = b_.CreateAdd(lo, i64(chunk));
      hi = b_.CreateSelect(b_.CreateICmpSLT(hi, i64(inner[0])), hi, i64(inner[0]));
      range_loop(lo, hi, [&](llvm::Value* j) {
        Index idx = head;
        idx.push_back(j);
        store(k_.root, 0, idx, emit(k_.root, idx));
      });
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

// Arithmetic operations a kernel performs (per output element: its reduction's trip count).
double KernelEmitter::work_estimate() const {
  double outputs = 1;
  for (int64_t e : k_.loop_extents) outputs *= static_cast<double>(e);
  if (k_.reduction < 0) return outputs;
  const ir::Node& n = g_.nodes[static_cast<size_t>(producer_[static_cast<size_t>(k_.reduction)])];
  auto numel = [&](ir::ValueId v) {
    double c = 1;
    for (int64_t d : dims(v)) c *= static_cast<double>(d);
    return c;
  };
  double per_output = 1;
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::Reduce: per_output = numel(n.operands[0]) / std::max(1.0, numel(k_.reduction)); break;
    case ir::OpCategory::Matmul: per_output = static_cast<double>(dims(n.operands[0]).back()); break;
    case ir::OpCategory::Conv: per_output = numel(n.operands[1]) / std::max<double>(1, static_cast<double>(dims(n.operands[1])[0])); break;
    case ir::OpCategory::Pool:
      for (int64_t e : int_list(n.attrs, "kernel")) per_output *= static_cast<double>(e);
      break;
    default: break;
  }
  return outputs * std::max(1.0, per_output);
}

// The exported kernel: runs the body over [0, tasks), through ctx->parallel_for when the
// kernel is big enough to be worth waking other threads (and the runtime offers one).
void KernelEmitter::emit_entry(int64_t tasks, double work) {
  auto* bb = llvm::BasicBlock::Create(ctx_, "entry", kernel_fn_);
  llvm::IRBuilder<> b(bb);
  llvm::Value* buffers = kernel_fn_->getArg(0);
  llvm::Value* ctx = kernel_fn_->getArg(2);
  auto call_serial = [&](llvm::IRBuilder<>& at) {
    at.CreateCall(fn_, {buffers, at.getInt64(0), at.getInt64(static_cast<uint64_t>(tasks))});
    at.CreateRetVoid();
  };
  if (tasks <= 1 || work < kParallelWork) {
    fn_->addFnAttr(llvm::Attribute::AlwaysInline);
    call_serial(b);
    return;
  }
  auto* ptr = b.getPtrTy();
  auto* serial = llvm::BasicBlock::Create(ctx_, "serial", kernel_fn_);
  auto* check_fn = llvm::BasicBlock::Create(ctx_, "has_ctx", kernel_fn_);
  auto* parallel = llvm::BasicBlock::Create(ctx_, "parallel", kernel_fn_);
  b.CreateCondBr(b.CreateIsNull(ctx), serial, check_fn);
  b.SetInsertPoint(check_fn);
  // aotrace_kernel_ctx { void* pool; void (*parallel_for)(pool, n, body, closure); }
  llvm::Value* pool = b.CreateAlignedLoad(ptr, ctx, llvm::Align(8));
  llvm::Value* pf = b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, ctx, 1), llvm::Align(8));
  b.CreateCondBr(b.CreateIsNull(pf), serial, parallel);
  b.SetInsertPoint(parallel);
  auto* pf_type = llvm::FunctionType::get(b.getVoidTy(), {ptr, b.getInt64Ty(), ptr, ptr}, false);
  b.CreateCall(pf_type, pf, {pool, b.getInt64(static_cast<uint64_t>(tasks)), fn_, buffers});
  b.CreateRetVoid();
  llvm::IRBuilder<> s(serial);
  call_serial(s);
}

void KernelEmitter::range_loop(llvm::Value* begin, llvm::Value* end,
                               const std::function<void(llvm::Value*)>& body) {
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
  llvm::Value* next = b_.CreateNSWAdd(i, b_.getInt64(1));
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpSLT(next, end), header, exit);
  b_.SetInsertPoint(exit);
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

Index KernelEmitter::unflatten(llvm::Value* flat, const std::vector<int64_t>& extents) {
  Index idx(extents.size());
  llvm::Value* rest = flat;
  for (size_t d = extents.size(); d-- > 0;) {
    if (extents[d] == 1) {
      idx[d] = b_.getInt64(0);
    } else if (d == 0) {
      idx[d] = rest;
    } else {
      idx[d] = b_.CreateURem(rest, i64(extents[d]));
      rest = b_.CreateUDiv(rest, i64(extents[d]));
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
// emits nothing when one is 0. Values emitted inside live in a new memo scope.
void KernelEmitter::loop_nest(const std::vector<int64_t>& extents,
                              const std::function<void(const Index&)>& body) {
  for (int64_t e : extents)
    if (e == 0) return;
  Index idx;
  loop_level(extents, 0, idx, body);
}

void KernelEmitter::loop_level(const std::vector<int64_t>& extents, size_t d, Index& idx,
                               const std::function<void(const Index&)>& body) {
  if (d == extents.size()) {
    memo_.emplace_back();
    body(idx);
    memo_.pop_back();
    return;
  }
  if (extents[d] == 1) {
    idx.push_back(b_.getInt64(0));
    loop_level(extents, d + 1, idx, body);
    idx.pop_back();
    return;
  }
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "loop.end", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(b_.getInt64(0), pre);
  idx.push_back(i);
  loop_level(extents, d + 1, idx, body);
  idx.pop_back();
  llvm::Value* next = b_.CreateNUWAdd(i, b_.getInt64(1));
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpULT(next, i64(extents[d])), header, exit);
  b_.SetInsertPoint(exit);
}

llvm::Value* KernelEmitter::address(ir::ValueId v, int arg, const Index& idx) {
  std::vector<int64_t> shape = dims(v);
  llvm::Value* offset = b_.getInt64(0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) offset = b_.CreateAdd(offset, b_.CreateMul(idx[d], i64(stride)));
    stride *= shape[d];
  }
  return b_.CreateInBoundsGEP(storage_type(ctx_, dtype(v)), buffers_[static_cast<size_t>(arg)], offset);
}

llvm::Value* KernelEmitter::load(ir::ValueId v, int arg, const Index& idx) {
  llvm::Type* t = storage_type(ctx_, dtype(v));
  llvm::Value* x = b_.CreateAlignedLoad(t, address(v, arg, idx), llvm::Align(ir::dtype_size(dtype(v))));
  return from_storage(b_, x, dtype(v));
}

void KernelEmitter::store(ir::ValueId v, int arg, const Index& idx, llvm::Value* x) {
  x = to_storage(b_, x, dtype(v));
  b_.CreateAlignedStore(x, address(v, arg, idx), llvm::Align(ir::dtype_size(dtype(v))));
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
    // rounds it: a fused chain (x * 3 + 1) gives eager's numbers, not more precise ones.
    x = round_to_storage_precision(b_, emit_node(producer(v), v, idx), dtype(v));
  }
  memo_.back()[key] = x;
  return x;
}

// `idx` of a result with `to` shape, seen by an operand of `from` shape (numpy broadcasting).
Index KernelEmitter::broadcast(const std::vector<int64_t>& from, size_t to_rank, const Index& idx) {
  Index out;
  for (size_t d = 0; d < from.size(); ++d)
    out.push_back(from[d] == 1 ? b_.getInt64(0) : idx[d + to_rank - from.size()]);
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
    case ir::OpCategory::Sort: return emit_topk(n, result, idx);
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

llvm::Value* KernelEmitter::in_range(llvm::Value* i, int64_t n) {
  // One unsigned compare: a negative i is a huge unsigned value.
  return b_.CreateICmpULT(i, i64(n));
}

llvm::Value* KernelEmitter::clamp(llvm::Value* i, int64_t n) {
  llvm::Value* lo = b_.CreateSelect(b_.CreateICmpSLT(i, i64(0)), i64(0), i);
  return b_.CreateSelect(b_.CreateICmpSGT(lo, i64(n - 1)), i64(n - 1), lo);
}

void emit_kernel(llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel,
                 const CpuTarget& target) {
  KernelEmitter(module, g, kernel, target).emit();
}

}  // namespace aotrace::lowering::cpu
