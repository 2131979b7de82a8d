// Ops with an inner loop per output element, accumulating in the compute type of their result
// (f16/bf16: f32; integer sums: i64 as the op rule gives). Floating sums (reduce_sum, matmul,
// conv) may be reassociated and contracted to FMA, so that LLVM vectorises them with several
// partial sums, as torch's own kernels sum in blocks; max/min keep their order (NaN rules):
//   reduce_sum/max/min   over the reduced axes; max/min propagate NaN (torch.amax/amin)
//   argmax/argmin        (best value, first index) over one axis; NaN beats everything
//   matmul               over K, batch dims broadcast, 1-D operands as torch.matmul
//   conv                 direct convolution over C/groups × kernel window; zero padding is a
//                        select on a clamped (always valid) load; groups and depthwise by the
//                        output channel's group
//   pool                 max (padding never wins, NaN propagates) or avg (torch's divisor,
//                        count_include_pad, ceil_mode windows clipped to the padded input)
//   topk                 kernels of their own: emit_topk.cpp
//   cumsum               a kernel of its own, a task per row: the scanned axis is walked
//                        sequentially with a running sum (emit_scan_kernel); on the GPU a
//                        thread block per long row (emit_scan_block)
//   scatter              a kernel of its own: self's rows copied, then src written (added) where
//                        the index points, in order (emit_scatter_rows); on the GPU a thread
//                        block per long row (emit_scatter_block)
// Test: lowering_tests EndToEnd.Reduce*, EndToEnd.Matmul*, Ops.ReduceMin*, Ops.Arg*, Ops.Conv*,
// Ops.Pool*, Ops.CumSum*, Ops.Scatter*, Dynamic.Scatters*.
#include <limits>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "lowering/cpu/kernel_emitter.h"

namespace aotrace::lowering::cpu {
namespace {

// What a reduce_sum/max/min starts from, and how it takes in the next value `v` (max and min
// propagate NaN).
llvm::Value* reduce_identity(llvm::IRBuilder<>& b, ir::OpKind op, ir::DType t) {
  return op == ir::OpKind::ReduceMax   ? lowest_value(b, t)
         : op == ir::OpKind::ReduceMin ? highest_value(b, t)
                                       : constant(b, 0, t);
}
llvm::Value* reduce_step(llvm::IRBuilder<>& b, ir::OpKind op, llvm::Value* acc, llvm::Value* v, ir::DType t) {
  if (op == ir::OpKind::ReduceMax) return emit_max(b, acc, v, t);
  if (op == ir::OpKind::ReduceMin) return emit_min(b, acc, v, t);
  return emit_binary(b, ir::OpKind::Add, acc, v, t);
}

// A reduction's axes over its input of shape `xs`: which dims it reduces, and their extents.
struct ReducedAxes {
  std::vector<bool> reduced;
  ir::Shape extents;
  bool keepdim = false;
};
ReducedAxes reduced_axes(const ir::Node& n, const ir::Shape& xs) {
  ReducedAxes r{std::vector<bool>(xs.size(), false), {}, n.attrs.has("keepdim") && n.attrs.i("keepdim") != 0};
  for (int64_t a : int_list(n.attrs, "axes"))
    r.reduced[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(xs.size()) : a)] = true;
  for (size_t d = 0; d < xs.size(); ++d)
    if (r.reduced[d]) r.extents.push_back(xs[d]);
  return r;
}

}  // namespace

Index KernelEmitter::reduced_index(const std::vector<bool>& reduced, bool keepdim, const Index& idx,
                                   const Index& r) {
  Index xi;
  size_t next_r = 0, next_out = 0;
  for (bool is_reduced : reduced) {
    if (is_reduced) {
      xi.push_back(r[next_r++]);
      if (keepdim) ++next_out;
    } else {
      xi.push_back(idx[next_out++]);
    }
  }
  return xi;
}

llvm::Value* KernelEmitter::emit_reduce(const ir::Node& n, const Index& idx) {
  ir::ValueId x = n.operands[0];
  ir::DType rt = dtype(n.results[0]);
  const ReducedAxes axes = reduced_axes(n, dims(x));
  llvm::Type* t = compute_type(ctx_, rt);
  // A warp (or block) lane's positions (CpuPlan::lanes): the reduced positions flattened, those
  // at first, first + step, ... in order.
  auto lane_positions = [&](llvm::Value* first, int64_t step, const std::function<void(const Index&)>& at) {
    ir::SymExpr count = 1;
    for (const ir::SymExpr& e : axes.extents) count = count * e;
    lane_loop(first, size(count), [&](llvm::Value* flat) { at(unflatten(flat, axes.extents)); }, step);
  };
  if (n.op != ir::OpKind::ReduceSum && t->isFloatingPointTy()) {
    // A float max or min is NaN where any element is, else the extreme of the others: an integer
    // max (min) of order-preserving keys and an "any NaN" flag, two reductions LLVM vectorises.
    // One compare-and-select chain that propagates NaN stayed scalar, and LLVM 16 vectorises
    // neither that nor maxnum without fast-math (softmax's row max over [12, 128, 128]: 0.29 →
    // 0.018 ms).
    // key(bits) = bits ^ (sign ? 0x7fff.. : 0): signed order of keys is the float order, with
    // -0 < +0; the key maps back by the same xor.
    auto* it = b_.getIntNTy(t->getPrimitiveSizeInBits());
    const unsigned top = it->getBitWidth() - 1;
    auto key = [&](llvm::Value* bits) {
      return b_.CreateXor(bits, b_.CreateLShr(b_.CreateAShr(bits, top), 1));
    };
    const bool is_max = n.op == ir::OpKind::ReduceMax;
    const llvm::Intrinsic::ID pick = is_max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin;
    // The extreme key and the NaN flag of the positions `visit` walks.
    auto keys_of = [&](const std::function<void(const std::function<void(const Index&)>&)>& visit) {
      llvm::Value* best = accumulator(it, key(b_.CreateBitCast(reduce_identity(b_, n.op, rt), it)));
      llvm::Value* nan = accumulator(b_.getInt1Ty(), b_.getFalse());
      visit([&](const Index& r) {
        llvm::Value* v = convert(b_, emit(x, reduced_index(axes.reduced, axes.keepdim, idx, r)), dtype(x), rt);
        b_.CreateStore(b_.CreateBinaryIntrinsic(pick, b_.CreateLoad(it, best), key(b_.CreateBitCast(v, it))), best);
        b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), nan), b_.CreateFCmpUNO(v, v)), nan);
      });
      return Partials{b_.CreateLoad(it, best), b_.CreateLoad(b_.getInt1Ty(), nan)};
    };
    Partials best;
    if (plan_.warp()) {
      // The GPU's warp reductions (f32; f16 and bf16 computed in f32): the lanes' keys meet by max (min) and their NaN
      // flags (as i32) by or.
      best = warp_combine(
          [&](llvm::Value* first, int64_t step) {
            Partials p = keys_of([&](const std::function<void(const Index&)>& at) { lane_positions(first, step, at); });
            return Partials{p[0], b_.CreateZExt(p[1], b_.getInt32Ty())};
          },
          [&](const Partials& a, const Partials& b) {
            return Partials{b_.CreateBinaryIntrinsic(pick, a[0], b[0]), b_.CreateOr(a[1], b[1])};
          });
      best[1] = b_.CreateICmpNE(best[1], b_.getInt32(0));
    } else {
      best = keys_of([&](const std::function<void(const Index&)>& at) { loop_nest(axes.extents, at); });
    }
    llvm::Value* extreme = b_.CreateBitCast(key(best[0]), t);
    return b_.CreateSelect(best[1], llvm::ConstantFP::getNaN(t), extreme);
  }
  if (plan_.warp() && n.op == ir::OpKind::ReduceSum) {
    // The GPU's warp (or block) reductions of f32 sums: each lane's positions summed in order
    // (not reassociated: the GPU adds them one by one, and so does the emulation then).
    return warp_total([&](llvm::Value* first, int64_t step) {
      llvm::Value* acc = accumulator(t, reduce_identity(b_, n.op, rt));
      lane_positions(first, step, [&](const Index& r) {
        llvm::Value* v = convert(b_, emit(x, reduced_index(axes.reduced, axes.keepdim, idx, r)), dtype(x), rt);
        b_.CreateStore(reduce_step(b_, n.op, b_.CreateLoad(t, acc), v, rt), acc);
      });
      return b_.CreateLoad(t, acc);
    });
  }
  llvm::Value* acc = accumulator(t, reduce_identity(b_, n.op, rt));
  loop_nest(axes.extents, [&](const Index& r) {
    llvm::Value* v = convert(b_, emit(x, reduced_index(axes.reduced, axes.keepdim, idx, r)), dtype(x), rt);
    llvm::Value* a = b_.CreateLoad(t, acc);
    // Sums may be reassociated (vectorised with partial sums).
    auto sums = n.op == ir::OpKind::ReduceSum ? reassociable_sums() : nullptr;
    b_.CreateStore(reduce_step(b_, n.op, a, v, rt), acc);
  });
  return b_.CreateLoad(t, acc);
}

// A sum, max or min over axes that leave the input's innermost axis (a channels-last average
// pool: [N, H·W, C] over H·W), as the kernel's reduction: per element it would walk the input
// C apart, which LLVM leaves scalar. Instead each task accumulates a run of up to
// CpuPlan::column_chunk contiguous outputs of one row in a stack buffer, one vectorisable pass
// over C per reduced position, then stores the root over the run with the reduction taken from
// it.
// Taken for f32 with a static innermost dim; the result's innermost dim is the input's.
// Returns the task count, or nothing where it does not apply.
std::optional<ir::SymExpr> KernelEmitter::emit_column_reduction(llvm::Value* begin, llvm::Value* end) {
  const int64_t run = plan_.column_chunk;
  if (run <= 0 || k_.reduction < 0 || dims(k_.root) != dims(k_.reduction)) return std::nullopt;
  const ir::Node& n = producer(k_.reduction);
  if (n.op != ir::OpKind::ReduceSum && n.op != ir::OpKind::ReduceMax && n.op != ir::OpKind::ReduceMin) return std::nullopt;
  ir::ValueId x = n.operands[0];
  const ir::Shape &xs = dims(x), &out = dims(k_.reduction);
  if (dtype(x) != ir::DType::f32 || dtype(k_.reduction) != ir::DType::f32 || xs.size() < 2 || out.empty())
    return std::nullopt;
  const ReducedAxes axes = reduced_axes(n, xs);
  auto inner = xs.back().as_constant();
  int64_t trip = 1;
  for (const ir::SymExpr& e : axes.extents) trip *= planned(e);
  if (axes.reduced.back() || !inner || axes.extents.empty() || trip < 8) return std::nullopt;
  ir::Shape outer(out.begin(), out.end() - 1);
  const int64_t chunks = (*inner + run - 1) / run;
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* acc = stack_array(f32, std::min(*inner, run));
  llvm::Value* init = reduce_identity(b_, n.op, ir::DType::f32);
  range_loop(begin, end, [&](llvm::Value* t) {
    Index head = unflatten(b_.CreateUDiv(t, i64(chunks)), outer);
    llvm::Value* lo = b_.CreateMul(b_.CreateURem(t, i64(chunks)), i64(run));
    llvm::Value* count = smin(i64(run), b_.CreateSub(i64(*inner), lo));
    auto at = [&](llvm::Value* j) { return b_.CreateInBoundsGEP(f32, acc, j); };
    range_loop(i64(0), count, [&](llvm::Value* j) { b_.CreateStore(init, at(j)); });
    loop_nest(axes.extents, [&](const Index& r) {
      range_loop(i64(0), count, [&](llvm::Value* j) {
        Index idx = head;
        idx.push_back(b_.CreateAdd(lo, j));
        llvm::Value* v = emit(x, reduced_index(axes.reduced, axes.keepdim, idx, r));
        b_.CreateStore(reduce_step(b_, n.op, b_.CreateLoad(f32, at(j)), v, ir::DType::f32), at(j));
      });
    });
    range_loop(i64(0), count, [&](llvm::Value* j) {
      Index idx = head;
      idx.push_back(b_.CreateAdd(lo, j));
      memo_.back()[{k_.reduction, idx}] = b_.CreateLoad(f32, at(j));
      store(k_.root, 0, idx, emit(k_.root, idx));
    });
  });
  ir::SymExpr tasks = chunks;
  for (const ir::SymExpr& e : outer) tasks = tasks * e;
  return tasks;
}

llvm::Value* KernelEmitter::emit_arg_reduce(const ir::Node& n, const Index& idx) {
  ir::ValueId x = n.operands[0];
  ir::DType xt = dtype(x);
  const ir::Shape& xs = dims(x);
  bool keepdim = n.attrs.has("keepdim") && n.attrs.i("keepdim") != 0;
  std::vector<int64_t> axes = int_list(n.attrs, "axes");
  AOT_CHECK(axes.size() == 1, "argmax/argmin over one axis");
  std::vector<bool> reduced(xs.size(), false);
  reduced[static_cast<size_t>(axes[0])] = true;
  bool is_max = n.op == ir::OpKind::ArgMax;
  llvm::Type* t = compute_type(ctx_, xt);
  // Whether x beats y (a NaN beats every number, for argmin too).
  auto beats = [&](llvm::Value* x, llvm::Value* y) { return is_max ? strictly_greater(b_, x, y, xt) : strictly_less(b_, x, y, xt, true); };
  if (plan_.warp()) {
    // The GPU's warp (or block) arg-reductions (f32, fewer than 2^31 positions: cuda/plan.cpp):
    // lane l scans positions l, l + lanes, ... in order from (-inf for argmax, +inf for argmin;
    // index kNone), keeping its first best; the lanes' (value, i32 index) pairs meet by the
    // larger (smaller) value, ties (NaN with NaN too) by the smaller index: a total order, so
    // every lane ends with the first position of the extreme, as the loop below finds it (kNone
    // only where every value is the start, -inf or +inf: index 0, as below).
    AOT_CHECK(xt == ir::DType::f32, "a warp arg-reduction of f32 only");
    const int32_t kNone = std::numeric_limits<int32_t>::max();
    const ir::SymExpr& extent = xs[static_cast<size_t>(axes[0])];
    Partials best = warp_combine(
        [&](llvm::Value* first, int64_t step) {
          llvm::Value* value = accumulator(t, is_max ? lowest_value(b_, xt) : highest_value(b_, xt));
          llvm::Value* index = accumulator(b_.getInt32Ty(), b_.getInt32(kNone));
          lane_loop(first, size(extent), [&](llvm::Value* r) {
            llvm::Value* v = emit(x, reduced_index(reduced, keepdim, idx, {r}));
            llvm::Value* held = b_.CreateLoad(t, value);
            llvm::Value* better = beats(v, held);
            b_.CreateStore(b_.CreateSelect(better, v, held), value);
            b_.CreateStore(b_.CreateSelect(better, b_.CreateTrunc(r, b_.getInt32Ty()), b_.CreateLoad(b_.getInt32Ty(), index)), index);
          }, step);
          return Partials{b_.CreateLoad(t, value), b_.CreateLoad(b_.getInt32Ty(), index)};
        },
        [&](const Partials& a, const Partials& c) {
          llvm::Value* same = b_.CreateOr(b_.CreateFCmpOEQ(a[0], c[0]), b_.CreateAnd(is_nan(b_, a[0], xt), is_nan(b_, c[0], xt)));
          llvm::Value* take_c = b_.CreateOr(beats(c[0], a[0]), b_.CreateAnd(same, b_.CreateICmpULT(c[1], a[1])));
          return Partials{b_.CreateSelect(take_c, c[0], a[0]), b_.CreateSelect(take_c, c[1], a[1])};
        });
    llvm::Value* none = b_.CreateICmpEQ(best[1], b_.getInt32(kNone));
    return b_.CreateSelect(none, i64(0), b_.CreateZExt(best[1], b_.getInt64Ty()));
  }
  llvm::Value* best = accumulator(t, is_max ? lowest_value(b_, xt) : highest_value(b_, xt));
  llvm::Value* best_index = accumulator(b_.getInt64Ty(), i64(0));
  loop_nest({xs[static_cast<size_t>(axes[0])]}, [&](const Index& r) {
    llvm::Value* v = emit(x, reduced_index(reduced, keepdim, idx, r));
    llvm::Value* a = b_.CreateLoad(t, best);
    llvm::Value* better = is_max ? strictly_greater(b_, v, a, xt) : strictly_less(b_, v, a, xt, true);
    b_.CreateStore(b_.CreateSelect(better, v, a), best);
    b_.CreateStore(b_.CreateSelect(better, r[0], b_.CreateLoad(b_.getInt64Ty(), best_index)), best_index);
  });
  return b_.CreateLoad(b_.getInt64Ty(), best_index);
}

// torch.matmul: 1-D operands lose their matrix dim; batch dims broadcast.
llvm::Value* KernelEmitter::emit_matmul(const ir::Node& n, const Index& idx) {
  ir::ValueId a = n.operands[0], bv = n.operands[1];
  ir::DType rt = dtype(n.results[0]);
  const ir::Shape &as = dims(a), &bs = dims(bv);
  size_t batch = idx.size() - (as.size() >= 2 ? 1 : 0) - (bs.size() >= 2 ? 1 : 0);
  Index batch_idx(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(batch));
  llvm::Value* row = as.size() >= 2 ? idx[batch] : nullptr;
  llvm::Value* col = bs.size() >= 2 ? idx.back() : nullptr;
  auto batch_of = [&](const ir::Shape& s) {
    ir::Shape bdims;
    if (s.size() > 2) bdims.assign(s.begin(), s.end() - 2);
    return broadcast(bdims, batch, batch_idx);
  };
  Index a_batch = batch_of(as), b_batch = batch_of(bs);
  llvm::Type* t = compute_type(ctx_, rt);
  // The sum over K's positions first, first + step, ... (step 1: all of K, from 0).
  auto sum_from = [&](llvm::Value* first, int64_t step) {
    llvm::Value* acc = accumulator(t, constant(b_, 0, rt));
    auto term = [&](llvm::Value* k) {
      Index ai = a_batch, bi = b_batch;
      if (row) ai.push_back(is_one(as[as.size() - 2]) ? b_.getInt64(0) : row);
      ai.push_back(k);
      bi.push_back(k);
      if (col) bi.push_back(is_one(bs.back()) ? b_.getInt64(0) : col);
      llvm::Value* av = convert(b_, emit(a, ai), dtype(a), rt);
      llvm::Value* bw = convert(b_, emit(bv, bi), dtype(bv), rt);
      // Reassociated (vectorised) on the CPU; a warp lane's terms in order, as on the GPU.
      auto sums = step == 1 ? reassociable_sums() : nullptr;
      llvm::Value* prod = emit_binary(b_, ir::OpKind::Mul, av, bw, rt);
      b_.CreateStore(emit_binary(b_, ir::OpKind::Add, b_.CreateLoad(t, acc), prod, rt), acc);
    };
    if (step == 1) loop_nest({as.back()}, [&](const Index& k) { term(k[0]); });
    else lane_loop(first, size(as.back()), term, step);
    return b_.CreateLoad(t, acc);
  };
  if (!plan_.warp()) return sum_from(nullptr, 1);
  return warp_total(sum_from);
}

llvm::Value* KernelEmitter::warp_total(const std::function<llvm::Value*(llvm::Value*, int64_t)>& sum_from) {
  return warp_combine([&](llvm::Value* first, int64_t step) { return Partials{sum_from(first, step)}; },
                      [&](const Partials& a, const Partials& b) { return Partials{b_.CreateFAdd(a[0], b[0])}; })[0];
}

KernelEmitter::Partials KernelEmitter::warp_combine(
    const std::function<Partials(llvm::Value*, int64_t)>& partial,
    const std::function<Partials(const Partials&, const Partials&)>& combine) {
  // A warp (or a block) per output (the GPU's warp reductions, CpuPlan::lanes): lane l takes the
  // terms at l mod lanes, and a butterfly (offsets 16 .. 1) combines the partials of each warp,
  // after which every lane of a warp holds the same total (each step combines a pair of equal
  // values in either order). A block's warps then meet in shared memory: lane 0 of each warp
  // stores its total, and after a barrier every thread combines the warps' totals by the same
  // butterfly (offsets warps/2 .. 1), taking warp 0's result: the same value in every thread.
  const int64_t lanes = plan_.lanes, width = std::min<int64_t>(lanes, 32), warps = lanes / width;
  // A warp (full-mask shuffles) or the launch's block of 256 (cuda::kBlock: barriers within it).
  AOT_CHECK(plan_.warp() && (lanes == 32 || lanes == 256), "a warp reduction in a kernel without a warp or block plan");
  auto butterfly = [&](std::vector<Partials> v, int64_t from) {
    for (int64_t off = from; off >= 1; off /= 2) {
      std::vector<Partials> next(v.size());
      for (size_t l = 0; l < v.size(); ++l) next[l] = combine(v[l], v[l ^ static_cast<size_t>(off)]);
      v = std::move(next);
    }
    return v;
  };
  if (target_.nvptx) {
    Partials v = partial(lane_, lanes);
    for (int64_t off = width / 2; off >= 1; off /= 2) {
      Partials other;
      for (llvm::Value* x : v) {
        AOT_CHECK(x->getType()->isFloatTy() || x->getType()->isIntegerTy(32), "warp shuffles move f32 or i32 values");
        other.push_back(b_.CreateIntrinsic(
            x->getType()->isFloatTy() ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
            {b_.getInt32(0xffffffffu), x, b_.getInt32(static_cast<uint32_t>(off)), b_.getInt32(31)}));
      }
      v = combine(v, other);
    }
    if (warps == 1) return v;
    std::vector<llvm::GlobalVariable*> shared;
    for (llvm::Value* x : v) {
      auto* type = llvm::ArrayType::get(x->getType(), static_cast<uint64_t>(warps));
      shared.push_back(new llvm::GlobalVariable(module_, type, false, llvm::GlobalValue::InternalLinkage,
                                                llvm::UndefValue::get(type), k_.symbol + ".warps", nullptr,
                                                llvm::GlobalValue::NotThreadLocal, /*shared*/ 3));
    }
    auto at = [&](size_t i, llvm::Value* w) {
      return b_.CreateInBoundsGEP(shared[i]->getValueType(), shared[i], {i64(0), w});
    };
    if_else(b_.CreateICmpEQ(b_.CreateURem(lane_, i64(width)), i64(0)), [&] {
      for (size_t i = 0; i < v.size(); ++i) b_.CreateStore(v[i], at(i, b_.CreateUDiv(lane_, i64(width))));
    }, [] {});
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
    std::vector<Partials> totals(static_cast<size_t>(warps));
    for (int64_t w = 0; w < warps; ++w)
      for (size_t i = 0; i < v.size(); ++i) totals[static_cast<size_t>(w)].push_back(b_.CreateLoad(v[i]->getType(), at(i, i64(w))));
    Partials total = butterfly(std::move(totals), warps / 2)[0];
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});  // read before any thread writes again
    return total;
  }
  // Grid emulation has no shuffles and runs lane 0 of each task (cuda/codegen.cpp): it computes
  // every lane's partials (a loop over the lanes into stack arrays) and the same butterflies
  // (the total every lane has on the GPU).
  std::vector<llvm::Value*> arrays;
  std::vector<llvm::Type*> types;
  range_loop(i64(0), i64(lanes), [&](llvm::Value* l) {
    Partials p = partial(l, lanes);
    if (arrays.empty()) {  // typed by the partials (stack_array allocates in the entry block)
      for (llvm::Value* x : p) {
        types.push_back(x->getType());
        arrays.push_back(stack_array(x->getType(), lanes));
      }
    }
    for (size_t i = 0; i < p.size(); ++i) b_.CreateStore(p[i], b_.CreateInBoundsGEP(types[i], arrays[i], l));
  });
  std::vector<Partials> v(static_cast<size_t>(lanes));
  for (int64_t l = 0; l < lanes; ++l)
    for (size_t i = 0; i < arrays.size(); ++i)
      v[static_cast<size_t>(l)].push_back(b_.CreateLoad(types[i], b_.CreateConstInBoundsGEP1_64(types[i], arrays[i], static_cast<uint64_t>(l))));
  v = butterfly(std::move(v), width / 2);  // offsets below the width stay within each warp
  std::vector<Partials> totals;
  for (int64_t w = 0; w < warps; ++w) totals.push_back(v[static_cast<size_t>(w * width)]);
  return butterfly(std::move(totals), warps / 2)[0];
}

llvm::Value* KernelEmitter::emit_conv(const ir::Node& n, const Index& idx) {
  ir::ValueId x = n.operands[0], w = n.operands[1];
  ir::DType rt = dtype(n.results[0]);
  const ir::Shape& xs = dims(x);
  std::vector<int64_t> ws = static_dims(g_, w);  // weights are static
  size_t spatial = xs.size() - 2;
  std::vector<int64_t> stride = int_list(n.attrs, "stride"), dilation = int_list(n.attrs, "dilation"),
                       pad = int_list(n.attrs, "pad_low");
  int64_t groups = n.attrs.has("groups") ? n.attrs.i("groups") : 1;
  int64_t out_per_group = ws[0] / groups, in_per_group = ws[1];
  // Input channel base of this output channel's group.
  llvm::Value* group_base = groups == 1 ? i64(0)
                            : b_.CreateMul(b_.CreateUDiv(idx[1], i64(out_per_group)), i64(in_per_group));
  llvm::Type* t = compute_type(ctx_, rt);
  ir::Shape extents = {in_per_group};
  int64_t taps = in_per_group;
  for (size_t s = 0; s < spatial; ++s) {
    extents.push_back(ws[2 + s]);
    taps *= ws[2 + s];
  }
  bool any_empty = false;
  for (const ir::SymExpr& d : xs) any_empty |= is_zero(d);
  // Depthwise (one input channel per output channel) with a small window: the taps are
  // unrolled here into one straight-line sum, with no accumulator in memory, so that the
  // loop over the output row is the innermost loop and vectorises (with the padding
  // materialised by pad_conv_inputs there are no bounds checks either).
  bool unrolled = in_per_group == 1 && taps <= 64 && !any_empty;
  llvm::Value* acc = unrolled ? nullptr : accumulator(t, constant(b_, 0, rt));
  llvm::Value* sum = unrolled ? constant(b_, 0, rt) : nullptr;
  auto tap = [&](const Index& r) {
    Index xi = {idx[0], groups == 1 ? r[0] : b_.CreateAdd(group_base, r[0])};
    Index wi = {idx[1], r[0]};
    llvm::Value* inside = b_.getTrue();
    for (size_t s = 0; s < spatial; ++s) {
      // in = out * stride - pad + k * dilation
      llvm::Value* pos = b_.CreateAdd(b_.CreateMul(idx[2 + s], i64(stride[s])),
                                      b_.CreateMul(r[1 + s], i64(dilation[s])));
      if (pad[s] != 0) pos = b_.CreateSub(pos, i64(pad[s]));
      // Bounds checks only where the window can leave the input (never once pad_conv_inputs
      // has moved the padding into the input).
      const ir::Shape& os = dims(n.results[0]);
      if (pad[s] != 0 || may_leave(os[2 + s], stride[s], ws[2 + s], dilation[s], xs[2 + s])) {
        inside = b_.CreateAnd(inside, in_range(pos, xs[2 + s]));
        pos = clamp(pos, xs[2 + s]);
      }
      xi.push_back(pos);
      wi.push_back(r[1 + s]);
    }
    llvm::Value* xv = convert(b_, emit(x, xi), dtype(x), rt);
    xv = b_.CreateSelect(inside, xv, constant(b_, 0, rt));
    llvm::Value* wv = convert(b_, emit(w, wi), dtype(w), rt);
    auto sums = reassociable_sums();
    llvm::Value* prod = emit_binary(b_, ir::OpKind::Mul, xv, wv, rt);
    if (unrolled) sum = emit_binary(b_, ir::OpKind::Add, sum, prod, rt);
    else b_.CreateStore(emit_binary(b_, ir::OpKind::Add, b_.CreateLoad(t, acc), prod, rt), acc);
  };
  if (unrolled) {
    for (int64_t i = 0; i < taps; ++i) {
      int64_t rest = i;
      Index ri(extents.size());
      for (size_t d = extents.size(); d-- > 0;) {
        ri[d] = i64(rest % extents[d].constant());
        rest /= extents[d].constant();
      }
      tap(ri);
    }
  } else if (!any_empty) {
    loop_nest(extents, tap);
  }
  if (!unrolled) sum = b_.CreateLoad(t, acc);
  if (n.operands.size() > 2) {
    ir::ValueId bias = n.operands[2];
    sum = emit_binary(b_, ir::OpKind::Add, sum, convert(b_, emit(bias, Index{idx[1]}), dtype(bias), rt), rt);
  }
  return sum;
}

llvm::Value* KernelEmitter::emit_pool(const ir::Node& n, const Index& idx) {
  ir::ValueId x = n.operands[0];
  ir::DType rt = dtype(n.results[0]);
  const ir::Shape& xs = dims(x);
  size_t spatial = xs.size() - 2;
  std::vector<int64_t> kernel = int_list(n.attrs, "kernel"), stride = int_list(n.attrs, "stride"),
                       pad = int_list(n.attrs, "padding");
  std::vector<int64_t> dilation(spatial, 1);
  if (n.attrs.has("dilation")) dilation = int_list(n.attrs, "dilation");
  bool is_max = n.attrs.s("kind") == "max";
  bool include_pad = n.attrs.has("count_include_pad") && n.attrs.i("count_include_pad") != 0;
  llvm::Type* t = compute_type(ctx_, rt);
  llvm::Value* acc = accumulator(t, is_max ? lowest_value(b_, rt) : constant(b_, 0, rt));
  llvm::Value* count = accumulator(b_.getInt64Ty(), i64(0));
  bool any_empty = false;
  for (const ir::SymExpr& d : xs) any_empty |= is_zero(d);
  std::vector<llvm::Value*> start(spatial);
  for (size_t s = 0; s < spatial; ++s)
    start[s] = b_.CreateSub(b_.CreateMul(idx[2 + s], i64(stride[s])), i64(pad[s]));
  if (!any_empty) loop_nest(to_shape(kernel), [&](const Index& r) {
    Index xi = {idx[0], idx[1]};
    llvm::Value* inside = b_.getTrue();
    for (size_t s = 0; s < spatial; ++s) {
      llvm::Value* pos = b_.CreateAdd(start[s], b_.CreateMul(r[s], i64(dilation[s])));
      inside = b_.CreateAnd(inside, in_range(pos, xs[2 + s]));
      xi.push_back(clamp(pos, xs[2 + s]));
    }
    llvm::Value* v = convert(b_, emit(x, xi), dtype(x), rt);
    llvm::Value* a = b_.CreateLoad(t, acc);
    llvm::Value* next = is_max ? emit_max(b_, a, v, rt) : emit_binary(b_, ir::OpKind::Add, a, v, rt);
    b_.CreateStore(b_.CreateSelect(inside, next, a), acc);
    llvm::Value* c = b_.CreateLoad(b_.getInt64Ty(), count);
    b_.CreateStore(b_.CreateSelect(inside, b_.CreateAdd(c, i64(1)), c), count);
  });
  llvm::Value* result = b_.CreateLoad(t, acc);
  if (is_max) return result;
  llvm::Value* divisor = b_.CreateLoad(b_.getInt64Ty(), count);
  if (include_pad) {  // the window clipped to the padded input: (min(start + k, in + pad) - start)
    divisor = i64(1);
    for (size_t s = 0; s < spatial; ++s) {
      llvm::Value* end = b_.CreateAdd(start[s], i64(kernel[s]));
      llvm::Value* limit = size(xs[2 + s] + pad[s]);
      end = b_.CreateSelect(b_.CreateICmpSLT(end, limit), end, limit);
      divisor = b_.CreateMul(divisor, b_.CreateSub(end, start[s]));
    }
  }
  return b_.CreateFDiv(result, convert(b_, divisor, ir::DType::i64, rt));
}

// A scan (cumsum) kernel: a task per row along its axis, walking it in order with a running sum
// (the rows split over the CPU's threads; on the GPU a thread per row, or a thread block per long
// row: emit_scan_block).
ir::SymExpr KernelEmitter::emit_scan_kernel(const ir::Node& n, llvm::Value* begin, llvm::Value* end) {
  if (plan_.row_tile > 0) return emit_scan_block(n, begin, end);
  ir::ValueId x = n.operands[0], root = n.results[0];
  ir::DType rt = dtype(root);
  auto axis = static_cast<size_t>(n.attrs.i("axis"));
  const ir::SymExpr& length = k_.loop_extents.at(axis);
  if (is_zero(length)) return 0;
  llvm::Type* t = compute_type(ctx_, rt);
  return row_tasks(axis, begin, end, [&](const RowIndex& at) {
    llvm::Value* acc = accumulator(t, constant(b_, 0, rt));
    loop_nest({length}, [&](const Index& i) {
      const Index xi = at(i[0]);
      llvm::Value* v = convert(b_, emit(x, xi), dtype(x), rt);
      llvm::Value* sum = emit_binary(b_, ir::OpKind::Add, b_.CreateLoad(t, acc), v, rt);
      b_.CreateStore(sum, acc);
      store(root, 0, xi, sum);
    });
  });
}

// The GPU's scan of a row by a thread block (CpuPlan::row_tile: cuda-plan's block scans, a long
// innermost axis): the row in tiles of row_tile positions, row_tile / lanes neighbouring ones a
// thread. The block loads a tile into shared memory (neighbouring threads, neighbouring
// positions); each thread sums its positions in order into running sums (in place) and its
// total; after a barrier each thread starts from the row's total before it (the earlier tiles'
// sum, then the earlier threads' totals, in order) and adds it to its running sums; the block
// stores the tile, and every thread adds the tile's totals to the row's (the same number in
// each). The sums run in another order than a thread's walk (as torch's GPU cumsum's do): float
// results differ in rounding only. Top-p sampling's cumsum over 50257 is 25 tiles, where a
// thread per row would take 50257 dependent steps alone. Grid emulation runs each phase as a
// loop over the block's threads (block_phase), in the same order of sums.
ir::SymExpr KernelEmitter::emit_scan_block(const ir::Node& n, llvm::Value* begin, llvm::Value* end) {
  const ir::ValueId x = n.operands[0], root = n.results[0];
  const ir::DType rt = dtype(root);
  const auto axis = static_cast<size_t>(n.attrs.i("axis"));
  const ir::SymExpr& extent = k_.loop_extents.at(axis);
  const int64_t threads = plan_.lanes, tile = plan_.row_tile, per = tile / threads;
  AOT_CHECK(threads > 1 && tile % threads == 0, "a block scan's tile is whole positions a thread");
  if (is_zero(extent)) return 0;
  llvm::Type* t = compute_type(ctx_, rt);
  llvm::Value* zero = constant(b_, 0, rt);
  llvm::Value* sums = block_array(t, tile, "scan_tile");
  llvm::Value* totals = block_array(t, threads, "scan_totals");
  auto at_sum = [&](llvm::Value* i) { return b_.CreateInBoundsGEP(t, sums, i); };
  auto at_total = [&](llvm::Value* w) { return b_.CreateInBoundsGEP(t, totals, w); };
  auto add = [&](llvm::Value* a, llvm::Value* b) { return emit_binary(b_, ir::OpKind::Add, a, b, rt); };
  return row_tasks(axis, begin, end, [&](const RowIndex& at) {
    llvm::Value* length = size(extent);
    llvm::Value* carry = accumulator(t, zero);  // the row's sum before the tile (every thread's alike)
    range_loop(i64(0), ceil_div(length, tile), [&](llvm::Value* tile_index) {
      llvm::Value* base = b_.CreateMul(tile_index, i64(tile));
      llvm::Value* count = smin(i64(tile), b_.CreateSub(length, base));
      block_phase(threads, true, [&](llvm::Value* tid) {
        range_loop(tid, count, [&](llvm::Value* i) {
          b_.CreateStore(convert(b_, emit(x, at(b_.CreateAdd(base, i))), dtype(x), rt), at_sum(i));
        }, threads);
      });
      // The thread's positions in order (those past the row add nothing), its total.
      block_phase(threads, true, [&](llvm::Value* tid) {
        llvm::Value* running = zero;
        for (int64_t m = 0; m < per; ++m) {
          llvm::Value* i = b_.CreateAdd(b_.CreateMul(tid, i64(per)), i64(m));
          llvm::Value* v = b_.CreateSelect(b_.CreateICmpSLT(i, count), b_.CreateLoad(t, at_sum(i)), zero);
          running = add(running, v);
          b_.CreateStore(running, at_sum(i));
        }
        b_.CreateStore(running, at_total(tid));
      });
      block_phase(threads, true, [&](llvm::Value* tid) {
        llvm::Value* start = accumulator(t, b_.CreateLoad(t, carry));
        range_loop(i64(0), tid, [&](llvm::Value* w) {
          b_.CreateStore(add(b_.CreateLoad(t, start), b_.CreateLoad(t, at_total(w))), start);
        });
        llvm::Value* before = b_.CreateLoad(t, start);
        for (int64_t m = 0; m < per; ++m) {
          llvm::Value* i = b_.CreateAdd(b_.CreateMul(tid, i64(per)), i64(m));
          b_.CreateStore(add(before, b_.CreateLoad(t, at_sum(i))), at_sum(i));
        }
      });
      block_phase(threads, true, [&](llvm::Value* tid) {
        range_loop(tid, count, [&](llvm::Value* i) { store(root, 0, at(b_.CreateAdd(base, i)), b_.CreateLoad(t, at_sum(i))); }, threads);
      });
      range_loop(i64(0), i64(threads), [&](llvm::Value* w) {
        b_.CreateStore(add(b_.CreateLoad(t, carry), b_.CreateLoad(t, at_total(w))), carry);
      });
    });
  });
}

// A scatter kernel (torch.scatter / scatter_add, index_add, x[idx] = v): each row of the result
// along its axis copies self's row, then walks the index's row in order, writing (accumulate:
// adding) src at each position the index names, so that a repeated position keeps the last
// write (the sums in order), as torch's CPU loop. A position out of range writes nothing (torch
// raises). O(n + m) per row, where the one-hot form it replaced (a compare of every index with
// every position) was O(n · m): top-p sampling's scatter over a vocabulary of 50257, 93 ms →
// 0.05 ms. A task takes a run of up to CpuPlan::column_chunk neighbouring rows (the positions
// after the axis, contiguous in memory) and walks them together: its copy and writes are whole
// cache lines, which no other thread's task shares but at a run's ends (a row per task over
// [50257, 4] along its first axis had two threads writing every line: 0.9 ms at 2 threads
// against 0.13 ms at 1). The GPU's plan (column_chunk 0) keeps a thread per row: neighbouring
// threads, neighbouring addresses; or a thread block per long row (emit_scatter_block). A
// symbolic count of such rows: a row per task.
ir::SymExpr KernelEmitter::emit_scatter_rows(const ir::Node& n, llvm::Value* begin, llvm::Value* end) {
  if (plan_.row_tile > 0) return emit_scatter_block(n, begin, end);
  const ir::ValueId self = n.operands[0], index = n.operands[1], src = n.operands[2], root = n.results[0];
  const ir::DType rt = dtype(root);
  const auto axis = static_cast<size_t>(n.attrs.i("axis"));
  const bool accumulate = n.attrs.i("accumulate") != 0;
  const ir::Shape& extents = k_.loop_extents;
  const ir::Shape& index_dims = dims(index);
  const ir::Shape outer(extents.begin(), extents.begin() + static_cast<std::ptrdiff_t>(axis));
  const ir::Shape inner(extents.begin() + static_cast<std::ptrdiff_t>(axis) + 1, extents.end());
  ir::SymExpr columns = 1;
  for (const ir::SymExpr& e : inner) columns = columns * e;
  const std::optional<int64_t> fixed = columns.as_constant();
  const int64_t run = fixed && *fixed > 1 && plan_.column_chunk > 1 ? std::min(*fixed, plan_.column_chunk) : 1;
  ir::Shape task_shape = outer;
  task_shape.push_back(run == 1 ? columns : ir::SymExpr((*fixed + run - 1) / run));
  ir::SymExpr tasks = 1;
  for (const ir::SymExpr& e : task_shape) tasks = tasks * e;
  if (is_zero(tasks)) return tasks;
  llvm::Value* length = size(extents[axis]);
  range_loop(begin, end, [&](llvm::Value* task) {
    Index head = unflatten(task, task_shape);
    llvm::Value* first = b_.CreateMul(head.back(), i64(run));
    llvm::Value* last = b_.CreateAdd(first, i64(run));
    if (fixed) last = b_.CreateSelect(b_.CreateICmpSLT(last, i64(*fixed)), last, i64(*fixed));
    head.pop_back();
    auto at = [&](llvm::Value* j, llvm::Value* column) {
      Index idx = head;
      idx.push_back(j);
      for (llvm::Value* c : unflatten(column, inner)) idx.push_back(c);
      return idx;
    };
    // Whether the index covers a row: its extent outside the axis may be smaller than self's.
    auto covered = [&](const Index& idx, size_t from, size_t to) {
      llvm::Value* in = b_.getTrue();
      for (size_t d = from; d < to; ++d)
        if (!(index_dims[d] == extents[d])) in = b_.CreateAnd(in, b_.CreateICmpSLT(idx[d], size(index_dims[d])));
      return in;
    };
    range_loop(i64(0), length, [&](llvm::Value* i) {
      range_loop(first, last, [&](llvm::Value* c) {
        const Index idx = at(i, c);
        store(root, 0, idx, convert(b_, emit(self, idx), dtype(self), rt));
      });
    });
    if_else(covered(at(i64(0), first), 0, axis), [&] {
      range_loop(i64(0), size(index_dims[axis]), [&](llvm::Value* p) {
        range_loop(first, last, [&](llvm::Value* c) {
          const Index ip = at(p, c);
          if_else(covered(ip, axis + 1, extents.size()), [&] {
            llvm::Value* q = convert(b_, emit(index, ip), dtype(index), ir::DType::i64);
            llvm::Value* v = convert(b_, emit(src, ip), dtype(src), rt);
            Index iq = ip;
            iq[axis] = q;
            if_else(b_.CreateAnd(b_.CreateICmpSGE(q, i64(0)), b_.CreateICmpSLT(q, length)), [&] {
              store(root, 0, iq, accumulate ? emit_binary(b_, ir::OpKind::Add, load(root, 0, iq), v, rt) : v);
            }, [] {});
          }, [] {});
        });
      });
    }, [] {});
  });
  return tasks;
}

// The GPU's scatter along an innermost axis by a thread block per row (CpuPlan::row_tile:
// cuda-plan's block rows): the block copies self's row (neighbouring threads, neighbouring
// positions), then takes the index's row a chunk of `lanes` positions at a time, in order: each
// thread puts its position's target (-1: past the index's row or out of range, which writes
// nothing) and src value in shared memory; after a barrier the thread whose target no later
// thread of the chunk shares writes its value (the last write wins, as in a thread's walk), or,
// accumulating, the thread whose target no earlier one shares adds the chunk's values for it in
// order. Chunks follow each other across barriers, so the row ends as a thread's walk leaves it:
// the same numbers, sums in the same order. Top-p sampling's scatter back over 50257 is 197
// chunks, where a thread per row walks 100514 dependent steps alone. Grid emulation runs each
// phase as a loop over the block's threads (block_phase).
ir::SymExpr KernelEmitter::emit_scatter_block(const ir::Node& n, llvm::Value* begin, llvm::Value* end) {
  const ir::ValueId self = n.operands[0], index = n.operands[1], src = n.operands[2], root = n.results[0];
  const ir::DType rt = dtype(root);
  const auto axis = static_cast<size_t>(n.attrs.i("axis"));
  const bool accumulate = n.attrs.i("accumulate") != 0;
  const ir::Shape& extents = k_.loop_extents;
  const ir::Shape& index_dims = dims(index);
  const int64_t threads = plan_.lanes;
  AOT_CHECK(threads > 1 && axis + 1 == extents.size(), "a block scatter runs along the innermost axis");
  const ir::Shape outer(extents.begin(), extents.begin() + static_cast<std::ptrdiff_t>(axis));
  ir::SymExpr tasks = 1;
  for (const ir::SymExpr& e : outer) tasks = tasks * e;
  if (is_zero(tasks)) return tasks;
  llvm::Type* t = compute_type(ctx_, rt);
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Value* targets = block_array(i64t, threads, "scatter_targets");
  llvm::Value* values = block_array(t, threads, "scatter_values");
  auto target_at = [&](llvm::Value* w) { return b_.CreateInBoundsGEP(i64t, targets, w); };
  auto value_at = [&](llvm::Value* w) { return b_.CreateInBoundsGEP(t, values, w); };
  llvm::Value* length = size(extents[axis]);
  range_loop(begin, end, [&](llvm::Value* task) {
    const Index head = unflatten(task, outer);
    auto at = [&](llvm::Value* j) {
      Index idx = head;
      idx.push_back(j);
      return idx;
    };
    block_phase(threads, true, [&](llvm::Value* tid) {
      range_loop(tid, length, [&](llvm::Value* i) {
        store(root, 0, at(i), convert(b_, emit(self, at(i)), dtype(self), rt));
      }, threads);
    });
    // Whether the index covers the row (its extents before the axis may be smaller than self's):
    // the same in every thread of the block.
    llvm::Value* covered = b_.getTrue();
    for (size_t d = 0; d < axis; ++d)
      if (!(index_dims[d] == extents[d])) covered = b_.CreateAnd(covered, b_.CreateICmpSLT(head[d], size(index_dims[d])));
    if_else(covered, [&] {
      llvm::Value* m = size(index_dims[axis]);
      range_loop(i64(0), ceil_div(m, threads), [&](llvm::Value* chunk) {
        llvm::Value* first = b_.CreateMul(chunk, i64(threads));
        block_phase(threads, true, [&](llvm::Value* tid) {
          llvm::Value* j = b_.CreateAdd(first, tid);
          b_.CreateStore(i64(-1), target_at(tid));
          if_else(b_.CreateICmpSLT(j, m), [&] {
            llvm::Value* q = convert(b_, emit(index, at(j)), dtype(index), ir::DType::i64);
            if_else(b_.CreateAnd(b_.CreateICmpSGE(q, i64(0)), b_.CreateICmpSLT(q, length)), [&] {
              b_.CreateStore(q, target_at(tid));
              b_.CreateStore(convert(b_, emit(src, at(j)), dtype(src), rt), value_at(tid));
            }, [] {});
          }, [] {});
        });
        block_phase(threads, true, [&](llvm::Value* tid) {
          llvm::Value* q = b_.CreateLoad(i64t, target_at(tid));
          if_else(b_.CreateICmpSGE(q, i64(0)), [&] {
            // Another thread of the chunk with the same target: a later one (a write), an earlier one (a sum).
            llvm::Value* shared = accumulator(b_.getInt1Ty(), b_.getFalse());
            llvm::Value* from = accumulate ? i64(0) : b_.CreateAdd(tid, i64(1));
            llvm::Value* to = accumulate ? tid : i64(threads);
            range_loop(from, to, [&](llvm::Value* w) {
              b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), shared), b_.CreateICmpEQ(b_.CreateLoad(i64t, target_at(w)), q)), shared);
            });
            if_else(b_.CreateLoad(b_.getInt1Ty(), shared), [] {}, [&] {
              if (!accumulate) {
                store(root, 0, at(q), b_.CreateLoad(t, value_at(tid)));
                return;
              }
              llvm::Value* sum = accumulator(t, load(root, 0, at(q)));
              range_loop(tid, i64(threads), [&](llvm::Value* w) {
                if_else(b_.CreateICmpEQ(b_.CreateLoad(i64t, target_at(w)), q), [&] {
                  llvm::Value* added = emit_binary(b_, ir::OpKind::Add, b_.CreateLoad(t, sum), b_.CreateLoad(t, value_at(w)), rt);
                  b_.CreateStore(round_to_storage_precision(b_, added, rt), sum);  // as a walk's store and load
                }, [] {});
              });
              store(root, 0, at(q), b_.CreateLoad(t, sum));
            });
          }, [] {});
        });
      });
    }, [] {});
  });
  return tasks;
}

// Tasks [begin, end) of a task per row of the root along `axis` (every other dim's positions,
// flattened), calling `row` in each with the index of the row's position j.
ir::SymExpr KernelEmitter::row_tasks(size_t axis, llvm::Value* begin, llvm::Value* end,
                                     const std::function<void(const RowIndex&)>& row) {
  const ir::Shape& extents = k_.loop_extents;
  ir::Shape rows;
  for (size_t d = 0; d < extents.size(); ++d)
    if (d != axis) rows.push_back(extents[d]);
  ir::SymExpr tasks = 1;
  for (const ir::SymExpr& e : rows) tasks = tasks * e;
  if (is_zero(tasks)) return tasks;
  range_loop(begin, end, [&](llvm::Value* task) {
    const Index head = unflatten(task, rows);
    row([&](llvm::Value* j) {
      Index idx = head;
      idx.insert(idx.begin() + static_cast<std::ptrdiff_t>(axis), j);
      return idx;
    });
  });
  return tasks;
}

}  // namespace aotrace::lowering::cpu
