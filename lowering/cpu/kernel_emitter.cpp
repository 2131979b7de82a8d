// emit_kernel: one LLVM function per scheduled kernel, with the ABI of
// artifacts/runtime/aotrace_kernel_abi.h: void k(void* const* buffers, const int64_t* symbols,
// const aotrace_kernel_ctx* ctx). buffers[0] is the output, buffers[1..] the values it reads.
//
// The body is a loop nest over the root's shape (constant trip counts, innermost contiguous)
// that stores emit(root, index). emit() evaluates a value at an index vector:
//   - a materialised value is loaded (row-major offset of the index);
//   - Full is a constant; elementwise ops combine their operands, each evaluated at the
//     broadcast of the index (size-1 dims read index 0: broadcasting costs nothing);
//   - movement ops map the index (permute reorders it, expand zeroes broadcast dims, reshape
//     re-linearises within groups of dims): views, never copies;
//   - a Reduce or Matmul emits its reduction loop right there, accumulating in its dtype.
// A memo per loop scope evaluates each (value, index) once, so shared subexpressions are not
// re-emitted. Test: every lowering_tests EndToEnd.* case.
#include <functional>
#include <map>

#include <llvm/IR/Function.h>

#include "lowering/cpu/llvm_backend.h"

namespace aotrace::lowering::cpu {
namespace {

using Index = std::vector<llvm::Value*>;

std::vector<int64_t> int_list(const ir::Attrs& attrs, const std::string& key) {
  const ir::AttrValue& v = attrs.items.at(key);
  if (const auto* ints = std::get_if<std::vector<int64_t>>(&v)) return *ints;
  std::vector<int64_t> out;
  for (const ir::SymExpr& e : std::get<ir::Shape>(v)) out.push_back(e.constant());
  return out;
}

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& m, const ir::Graph& g, const ScheduledKernel& k)
      : ctx_(m.getContext()), b_(ctx_), g_(g), k_(k), producer_(g.num_values(), -1) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ir::ValueId r : g.nodes[i].results) producer_[static_cast<size_t>(r)] = static_cast<int>(i);
    auto* ptr = llvm::PointerType::get(ctx_, 0);
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, k.symbol, m);
    fn_->setDoesNotThrow();
    fn_->setVisibility(llvm::GlobalValue::DefaultVisibility);
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  }

  void emit() {
    b_.SetInsertPoint(entry_);
    for (size_t a = 0; a < k_.buffers.size(); ++a) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), fn_->getArg(0), a);
      buffers_.push_back(b_.CreateAlignedLoad(b_.getPtrTy(), slot, llvm::Align(8)));
    }
    for (size_t r = 0; r < k_.read_values.size(); ++r) read_arg_[k_.read_values[r]] = static_cast<int>(r + 1);
    memo_.emplace_back();
    loop_nest(k_.loop_extents, [&](const Index& idx) {
      llvm::Value* v = emit(k_.root, idx);
      store(k_.root, 0, idx, v);
    });
    b_.CreateRetVoid();
  }

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

  std::vector<int64_t> dims(ir::ValueId v) const { return static_dims(g_, v); }
  ir::DType dtype(ir::ValueId v) const { return g_.type(v).dtype; }

  // Loops over `extents` (row-major), calling body with the index; skips extents of 1 and
  // emits nothing when one is 0. Values emitted inside live in a new memo scope.
  void loop_nest(const std::vector<int64_t>& extents, const std::function<void(const Index&)>& body) {
    for (int64_t e : extents)
      if (e == 0) return;
    Index idx;
    loop_level(extents, 0, idx, body);
  }

  void loop_level(const std::vector<int64_t>& extents, size_t d, Index& idx,
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
    b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt64(extents[d])), header, exit);
    b_.SetInsertPoint(exit);
  }

  llvm::Value* address(ir::ValueId v, int arg, const Index& idx) {
    std::vector<int64_t> shape = dims(v);
    llvm::Value* offset = b_.getInt64(0);
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      if (shape[d] != 1) offset = b_.CreateAdd(offset, b_.CreateMul(idx[d], b_.getInt64(stride)));
      stride *= shape[d];
    }
    return b_.CreateInBoundsGEP(storage_type(ctx_, dtype(v)), buffers_[static_cast<size_t>(arg)], offset);
  }

  llvm::Value* load(ir::ValueId v, int arg, const Index& idx) {
    llvm::Type* t = storage_type(ctx_, dtype(v));
    llvm::Value* x = b_.CreateAlignedLoad(t, address(v, arg, idx), llvm::Align(ir::dtype_size(dtype(v))));
    return dtype(v) == ir::DType::b8 ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
  }

  void store(ir::ValueId v, int arg, const Index& idx, llvm::Value* x) {
    if (dtype(v) == ir::DType::b8) x = b_.CreateZExt(x, b_.getInt8Ty());
    b_.CreateAlignedStore(x, address(v, arg, idx), llvm::Align(ir::dtype_size(dtype(v))));
  }

  llvm::Value* emit(ir::ValueId v, const Index& idx) {
    auto key = std::make_pair(v, idx);
    for (const auto& scope : memo_)
      if (auto it = scope.find(key); it != scope.end()) return it->second;
    llvm::Value* x;
    if (auto it = read_arg_.find(v); it != read_arg_.end()) {
      x = load(v, it->second, idx);
    } else {
      int p = producer_[static_cast<size_t>(v)];
      AOT_CHECK(p >= 0, "kernel " + k_.symbol + " evaluates an unmaterialised input %" + std::to_string(v));
      x = emit_node(g_.nodes[static_cast<size_t>(p)], idx);
    }
    memo_.back()[key] = x;
    return x;
  }

  // `idx` of a result with `to` shape, seen by an operand of `from` shape (numpy broadcasting).
  Index broadcast(const std::vector<int64_t>& from, size_t to_rank, const Index& idx) {
    Index out;
    for (size_t d = 0; d < from.size(); ++d)
      out.push_back(from[d] == 1 ? b_.getInt64(0) : idx[d + to_rank - from.size()]);
    return out;
  }

  llvm::Value* operand(const ir::Node& n, size_t i, const Index& idx, ir::DType as) {
    ir::ValueId o = n.operands[i];
    llvm::Value* x = emit(o, broadcast(dims(o), idx.size(), idx));
    return convert(b_, x, dtype(o), as);
  }

  llvm::Value* emit_node(const ir::Node& n, const Index& idx) {
    ir::DType rt = dtype(n.results[0]);
    switch (ir::op_info(n.op).category) {
      case ir::OpCategory::Source: return constant(b_, n.attrs.f("value"), rt);
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
      case ir::OpCategory::Movement: return emit(n.operands[0], view_index(n, idx));
      case ir::OpCategory::Reduce: return emit_reduce(n, idx);
      case ir::OpCategory::Matmul: return emit_matmul(n, idx);
      default: internal_error("op " + std::string(ir::op_name(n.op)) + " reached CPU codegen");
    }
  }

  // The operand index a movement op reads for result index `idx`.
  Index view_index(const ir::Node& n, const Index& idx) {
    std::vector<int64_t> src = dims(n.operands[0]);
    if (n.op == ir::OpKind::Expand) return broadcast(src, idx.size(), idx);
    if (n.op == ir::OpKind::Permute) {
      std::vector<int64_t> perm = int_list(n.attrs, "perm");
      Index out(src.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(src.size()) : perm[i];
        out[static_cast<size_t>(p)] = idx[i];
      }
      return out;
    }
    AOT_CHECK(n.op == ir::OpKind::Reshape, "unknown movement op");
    return reshape_index(dims(n.results[0]), src, idx);
  }

  // Reshape as a view: dims are split into groups of equal element count; within a group the
  // result index is linearised and split again into the source dims.
  Index reshape_index(const std::vector<int64_t>& dst, const std::vector<int64_t>& src, const Index& idx) {
    Index out;
    size_t i = 0, j = 0;
    while (i < dst.size() || j < src.size()) {
      size_t i0 = i, j0 = j;
      int64_t pd = i < dst.size() ? dst[i++] : 1, ps = j < src.size() ? src[j++] : 1;
      while (pd != ps) {
        if (pd < ps) pd *= dst.at(i++);
        else ps *= src.at(j++);
        if (pd == 0 || ps == 0) break;  // empty tensors: never read
      }
      if (i - i0 == 1 && j - j0 == 1) {
        out.push_back(idx[i0]);
        continue;
      }
      llvm::Value* linear = b_.getInt64(0);
      for (size_t d = i0; d < i; ++d)
        linear = b_.CreateAdd(b_.CreateMul(linear, b_.getInt64(dst[d])), idx[d]);
      int64_t stride = ps;
      for (size_t d = j0; d < j; ++d) {
        stride /= src[d] == 0 ? 1 : src[d];
        llvm::Value* q = stride == 1 ? linear : b_.CreateUDiv(linear, b_.getInt64(stride));
        out.push_back(d == j0 ? q : b_.CreateURem(q, b_.getInt64(src[d])));
      }
    }
    return out;
  }

  llvm::Value* accumulator(ir::DType t, llvm::Value* init) {
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    llvm::AllocaInst* acc = eb.CreateAlloca(compute_type(ctx_, t));
    b_.CreateStore(init, acc);
    return acc;
  }

  llvm::Value* emit_reduce(const ir::Node& n, const Index& idx) {
    ir::ValueId x = n.operands[0];
    ir::DType rt = dtype(n.results[0]);
    std::vector<int64_t> xs = dims(x), axes = int_list(n.attrs, "axes");
    bool keepdim = n.attrs.has("keepdim") && n.attrs.i("keepdim") != 0;
    std::vector<bool> reduced(xs.size(), false);
    std::vector<int64_t> extents;
    for (int64_t a : axes) {
      size_t axis = static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(xs.size()) : a);
      reduced[axis] = true;
    }
    for (size_t d = 0; d < xs.size(); ++d)
      if (reduced[d]) extents.push_back(xs[d]);
    bool is_max = n.op == ir::OpKind::ReduceMax;
    llvm::Value* acc = accumulator(rt, is_max ? lowest_value(b_, rt) : constant(b_, 0, rt));
    llvm::Type* t = compute_type(ctx_, rt);
    loop_nest(extents, [&](const Index& r) {
      Index xi;
      size_t next_r = 0, next_out = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        if (reduced[d]) {
          xi.push_back(r[next_r++]);
          if (keepdim) ++next_out;
        } else {
          xi.push_back(idx[next_out++]);
        }
      }
      llvm::Value* v = convert(b_, emit(x, xi), dtype(x), rt);
      llvm::Value* a = b_.CreateLoad(t, acc);
      llvm::Value* sum = is_max ? emit_max(b_, a, v, rt) : emit_binary(b_, ir::OpKind::Add, a, v, rt);
      b_.CreateStore(sum, acc);
    });
    return b_.CreateLoad(t, acc);
  }

  // torch.matmul: 1-D operands lose their matrix dim; batch dims broadcast.
  llvm::Value* emit_matmul(const ir::Node& n, const Index& idx) {
    ir::ValueId a = n.operands[0], bv = n.operands[1];
    ir::DType rt = dtype(n.results[0]);
    std::vector<int64_t> as = dims(a), bs = dims(bv);
    size_t batch = idx.size() - (as.size() >= 2 ? 1 : 0) - (bs.size() >= 2 ? 1 : 0);
    Index batch_idx(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(batch));
    llvm::Value* row = as.size() >= 2 ? idx[batch] : nullptr;
    llvm::Value* col = bs.size() >= 2 ? idx.back() : nullptr;
    auto batch_of = [&](const std::vector<int64_t>& s) {
      std::vector<int64_t> bdims(s.begin(), s.end() - std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(s.size())));
      if (s.size() < 2) bdims.clear();
      return broadcast(bdims, batch, batch_idx);
    };
    Index a_batch = batch_of(as), b_batch = batch_of(bs);
    llvm::Value* acc = accumulator(rt, constant(b_, 0, rt));
    llvm::Type* t = compute_type(ctx_, rt);
    loop_nest({as.back()}, [&](const Index& k) {
      Index ai = a_batch, bi = b_batch;
      if (row) ai.push_back(as[as.size() - 2] == 1 ? b_.getInt64(0) : row);
      ai.push_back(k[0]);
      bi.push_back(k[0]);
      if (col) bi.push_back(bs.back() == 1 ? b_.getInt64(0) : col);
      llvm::Value* prod = emit_binary(b_, ir::OpKind::Mul, convert(b_, emit(a, ai), dtype(a), rt),
                                      convert(b_, emit(bv, bi), dtype(bv), rt), rt);
      b_.CreateStore(emit_binary(b_, ir::OpKind::Add, b_.CreateLoad(t, acc), prod, rt), acc);
    });
    return b_.CreateLoad(t, acc);
  }
};

}  // namespace

void emit_kernel(llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel) {
  KernelEmitter(module, g, kernel).emit();
}

}  // namespace aotrace::lowering::cpu
