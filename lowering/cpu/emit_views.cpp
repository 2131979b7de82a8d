// Ops evaluated by mapping the result index to operand indices (no loops of their own):
//   reshape, permute, expand, slice, flip   one operand index per result index (pure views);
//   pad                                     the operand at index - low where that is in range,
//                                           else the pad value (a select; the load uses a
//                                           clamped, always valid index, so it needs no branch);
//   concat                                  each non-empty operand loaded at a clamped index,
//                                           a select chain on the concatenated axis picks one;
//   gather, index_select                    the index tensor is loaded first, negative indices
//                                           wrap once (as torch). An index still out of range
//                                           cannot raise inside a kernel: it is clamped to the
//                                           nearest valid position (documented behaviour; torch
//                                           raises "index out of range");
//   searchsorted                            torch's binary search over the value's row: a
//                                           loop of log n loads (the one op here with a loop);
//   arange                                  start + i * step computed in double, then converted.
// Symbolic dims: reshape_groups pairs dims by equal SymExpr products, strides are SymExprs.
// Test: lowering_tests Ops.Slice*, Ops.Flip*, Ops.Pad*, Ops.Concat*, Ops.Gather*, Dynamic.*,
// Ops.IndexSelect*, Ops.SearchSorted*, Ops.Arange*.
#include "lowering/cpu/kernel_emitter.h"

#include <algorithm>

namespace aotrace::lowering::cpu {

llvm::Value* KernelEmitter::emit_movement(const ir::Node& n, const Index& idx) {
  if (n.op == ir::OpKind::Pad) return emit_pad(n, idx);
  if (n.op == ir::OpKind::Concat) return emit_concat(n, idx);
  ir::ValueId x = n.operands[0];
  return convert(b_, emit(x, view_index(n, idx)), dtype(x), dtype(n.results[0]));
}

// The operand index a single-operand view reads for result index `idx`.
Index KernelEmitter::view_index(const ir::Node& n, const Index& idx) {
  const ir::Shape& src = dims(n.operands[0]);
  switch (n.op) {
    case ir::OpKind::Expand: return broadcast(src, idx.size(), idx);
    case ir::OpKind::Permute: {
      std::vector<int64_t> perm = int_list(n.attrs, "perm");
      Index out(src.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(src.size()) : perm[i];
        out[static_cast<size_t>(p)] = idx[i];
      }
      return out;
    }
    case ir::OpKind::Slice: {
      auto axis = static_cast<size_t>(n.attrs.i("axis"));
      int64_t start = n.attrs.i("start"), step = n.attrs.has("step") ? n.attrs.i("step") : 1;
      Index out = idx;
      llvm::Value* scaled = step == 1 ? idx[axis] : b_.CreateMul(idx[axis], i64(step));
      out[axis] = start == 0 ? scaled : b_.CreateAdd(scaled, i64(start));
      return out;
    }
    case ir::OpKind::Flip: {
      Index out = idx;
      for (int64_t a : int_list(n.attrs, "axes")) {
        auto axis = static_cast<size_t>(a);
        if (!is_one(src[axis]) && !is_zero(src[axis])) out[axis] = b_.CreateSub(size(src[axis] - 1), idx[axis]);
      }
      return out;
    }
    case ir::OpKind::Reshape: return reshape_index(dims(n.results[0]), src, idx);
    default: internal_error("unknown view op " + std::string(ir::op_name(n.op)));
  }
}

// Reshape as a view: within each group of reshape_groups the result index is linearised and
// split again into the source dims (runtime divisions where the dims are symbolic).
Index KernelEmitter::reshape_index(const ir::Shape& dst, const ir::Shape& src, const Index& idx) {
  Index out;
  for (const DimGroup& group : reshape_groups(dst, src, max_)) {
    if (group.i1 - group.i0 == 1 && group.j1 - group.j0 == 1) {
      out.push_back(idx[group.i0]);
      continue;
    }
    llvm::Value* linear = b_.getInt64(0);
    for (size_t d = group.i0; d < group.i1; ++d)
      linear = b_.CreateAdd(b_.CreateMul(linear, size(dst[d])), idx[d]);
    for (size_t d = group.j0; d < group.j1; ++d) {
      ir::SymExpr stride = 1;  // of source dim d: the group's dims inside it
      for (size_t e = d + 1; e < group.j1; ++e) stride = stride * (is_zero(src[e]) ? ir::SymExpr(1) : src[e]);
      llvm::Value* q = is_one(stride) ? linear : b_.CreateUDiv(linear, size(stride));
      out.push_back(d == group.j0 ? q : b_.CreateURem(q, size(src[d])));
    }
  }
  return out;
}


llvm::Value* KernelEmitter::strided_address(const StridedView& sv, const Index& idx) {
  llvm::Value* off = size(sv.offset);
  for (size_t d = 0; d < idx.size(); ++d)
    if (!is_zero(sv.strides[d])) off = b_.CreateAdd(off, b_.CreateMul(idx[d], size(sv.strides[d])));
  llvm::Type* t = storage_type(ctx_, dtype(sv.buffer));
  return b_.CreateGEP(t, buffers_[static_cast<size_t>(read_arg_.at(sv.buffer))], off);
}

llvm::Value* KernelEmitter::emit_pad(const ir::Node& n, const Index& idx) {
  ir::ValueId x = n.operands[0];
  ir::DType rt = dtype(n.results[0]);
  const ir::Shape& xs = dims(x);
  std::vector<int64_t> low = int_list(n.attrs, "low"), high = int_list(n.attrs, "high");
  llvm::Value* value = constant(b_, n.attrs.f("value"), rt);
  for (const ir::SymExpr& d : xs)
    if (is_zero(d)) return value;  // nothing to read: all padding
  Index src;
  llvm::Value* inside = b_.getTrue();
  for (size_t d = 0; d < xs.size(); ++d) {
    llvm::Value* s = low[d] == 0 ? idx[d] : b_.CreateSub(idx[d], i64(low[d]));
    if (low[d] > 0 || high[d] > 0) {  // only added padding can fall outside (crops cannot)
      inside = b_.CreateAnd(inside, in_range(s, xs[d]));
      s = clamp(s, xs[d]);
    }
    src.push_back(s);
  }
  return b_.CreateSelect(inside, convert(b_, emit(x, src), dtype(x), rt), value);
}

// A materialised pad (a conv input, with the conv's producers fused: batch-norm, activation),
// row by row: a row whose outer index falls in the padding is the pad value; any other row is
// the pad value left and right of its interior, and the interior reads the operand at
// j - low[last] without the per-element select and index clamp of emit_pad, so that it
// vectorises.
bool KernelEmitter::emit_pad_rows(const ir::Node& n, llvm::Value* begin, llvm::Value* end) {
  ir::ValueId x = n.operands[0], root = n.results[0];
  const ir::Shape &xs = dims(x), &out = dims(root);
  std::vector<int64_t> low = int_list(n.attrs, "low"), high = int_list(n.attrs, "high");
  for (const ir::SymExpr& d : xs)
    if (is_zero(d)) return false;
  ir::DType rt = dtype(root);
  const size_t last = out.size() - 1;
  ir::Shape outer(out.begin(), out.end() - 1);
  // Interior columns of a row: j - low[last] in [0, xs[last]), within [0, out[last]).
  ir::SymExpr j_lo = min(max(ir::SymExpr(low[last]), 0), out[last]);
  ir::SymExpr j_hi = min(max(low[last] + xs[last], j_lo), out[last]);
  range_loop(begin, end, [&](llvm::Value* t) {
    Index head = unflatten(t, outer), src;
    llvm::Value* inside = b_.getTrue();
    for (size_t d = 0; d < last; ++d) {
      llvm::Value* s = low[d] == 0 ? head[d] : b_.CreateSub(head[d], i64(low[d]));
      if (low[d] + high[d] != 0 || low[d] != 0) inside = b_.CreateAnd(inside, in_range(s, xs[d]));
      src.push_back(is_one(xs[d]) ? i64(0) : s);
    }
    auto fill = [&](llvm::Value* from, llvm::Value* to) {
      range_loop(from, to, [&](llvm::Value* j) {
        Index idx = head;
        idx.push_back(j);
        store(root, 0, idx, constant(b_, n.attrs.f("value"), rt));
      });
    };
    if_else(inside, [&] {
      fill(i64(0), size(j_lo));
      range_loop(size(j_lo), size(j_hi), [&](llvm::Value* j) {
        Index idx = head, from = src;
        idx.push_back(j);
        from.push_back(is_one(xs[last]) ? i64(0) : b_.CreateSub(j, i64(low[last])));
        store(root, 0, idx, convert(b_, emit(x, from), dtype(x), rt));
      });
      fill(size(j_hi), size(out[last]));
    }, [&] { fill(i64(0), size(out[last])); });
  });
  return true;
}

llvm::Value* KernelEmitter::emit_concat(const ir::Node& n, const Index& idx) {
  auto axis = static_cast<size_t>(n.attrs.i("axis"));
  ir::DType rt = dtype(n.results[0]);
  llvm::Value* out = nullptr;
  ir::SymExpr offset = dims(n.results[0])[axis];
  int64_t non_empty = 0;
  for (ir::ValueId o : n.operands) non_empty += is_zero(dims(o)[axis]) ? 0 : 1;
  // From the last operand back: out = i < start_k ? (earlier operands) : operand_k.
  for (size_t k = n.operands.size(); k-- > 0;) {
    ir::ValueId o = n.operands[k];
    ir::SymExpr length = dims(o)[axis];
    offset = offset - length;
    if (is_zero(length)) continue;
    Index src = idx;
    llvm::Value* local = is_zero(offset) ? idx[axis] : b_.CreateSub(idx[axis], size(offset));
    src[axis] = non_empty == 1 ? local : clamp(local, length);  // every operand is loaded
    llvm::Value* v = convert(b_, emit(o, src), dtype(o), rt);
    out = out == nullptr ? v : b_.CreateSelect(b_.CreateICmpSLT(idx[axis], size(offset + length)), v, out);
  }
  AOT_CHECK(out != nullptr, "concat of empty operands evaluated");
  return out;
}

llvm::Value* KernelEmitter::emit_index(const ir::Node& n, const Index& idx) {
  if (n.op == ir::OpKind::SearchSorted) return emit_search_sorted(n, idx);
  ir::ValueId x = n.operands[0], index = n.operands[1];
  auto axis = static_cast<size_t>(n.attrs.i("axis"));
  ir::DType rt = dtype(n.results[0]);
  if (dims(x).empty()) return convert(b_, emit(x, {}), dtype(x), rt);  // a 0-d input reads as [1]
  ir::SymExpr length = dims(x)[axis];
  if (is_zero(length)) return constant(b_, 0, rt);  // torch raises; nothing valid to read
  llvm::Value* i;
  if (n.op == ir::OpKind::Gather) {
    i = emit(index, idx);
  } else {
    AOT_CHECK(n.op == ir::OpKind::IndexSelect, "unknown index op");
    i = emit(index, Index{idx[axis]});
  }
  i = convert(b_, i, dtype(index), ir::DType::i64);
  i = b_.CreateSelect(b_.CreateICmpSLT(i, i64(0)), b_.CreateAdd(i, size(length)), i);
  Index src = idx;
  src[axis] = clamp(i, length);
  return convert(b_, emit(x, src), dtype(x), rt);
}

// searchsorted: torch's binary search (ops.def) for the value at `idx` over its row of the sorted
// sequence (the row of idx's leading dims; a 1-D sequence: the one row), O(log n) loads of it.
llvm::Value* KernelEmitter::emit_search_sorted(const ir::Node& n, const Index& idx) {
  const ir::ValueId sorted = n.operands[0], values = n.operands[1];
  const bool right = n.attrs.i("right") != 0;
  const ir::DType t = dtype(values);
  const ir::Shape& sd = dims(sorted);
  llvm::Value* v = emit(values, idx);
  const Index row = sd.size() == 1 ? Index{} : Index(idx.begin(), idx.end() - 1);
  llvm::Value* lo = binary_search(size(sd.back()), [&](llvm::Value* mid) {
    Index at = row;
    at.push_back(mid);
    llvm::Value* s = emit(sorted, at);
    // !(row[mid] >= value) (right: !(row[mid] > value)): true where either is NaN
    if (ir::is_floating(t)) return right ? b_.CreateFCmpULE(s, v) : b_.CreateFCmpULT(s, v);
    if (t == ir::DType::u8 || t == ir::DType::b8) return right ? b_.CreateICmpULE(s, v) : b_.CreateICmpULT(s, v);
    return right ? b_.CreateICmpSLE(s, v) : b_.CreateICmpSLT(s, v);
  });
  return convert(b_, lo, ir::DType::i64, dtype(n.results[0]));
}

llvm::Value* KernelEmitter::emit_arange(const ir::Node& n, const Index& idx) {
  ir::DType rt = dtype(n.results[0]);
  llvm::Value* i = b_.CreateSIToFP(idx.at(0), b_.getDoubleTy());
  llvm::Value* v = b_.CreateFAdd(llvm::ConstantFP::get(b_.getDoubleTy(), n.attrs.f("start")),
                                 b_.CreateFMul(i, llvm::ConstantFP::get(b_.getDoubleTy(), n.attrs.f("step"))));
  return convert(b_, v, ir::DType::f64, rt);
}

// ir::philox_sample of the element at `idx`: Philox4x32-10 unrolled on 32-bit words.
llvm::Value* KernelEmitter::emit_random(const ir::Node& n, const Index& idx) {
  const ir::Shape& shape = dims(n.results[0]);
  llvm::Value* linear = b_.getInt64(0);
  for (size_t d = 0; d < shape.size(); ++d)
    linear = b_.CreateAdd(b_.CreateMul(linear, size(shape[d])), idx[d]);
  llvm::Value* seed = emit(n.operands[0], {b_.getInt64(0)});
  llvm::Value* offset = emit(n.operands[0], {b_.getInt64(1)});
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* i64 = b_.getInt64Ty();
  auto lo = [&](llvm::Value* v) { return b_.CreateTrunc(v, i32); };
  auto hi = [&](llvm::Value* v) { return b_.CreateTrunc(b_.CreateLShr(v, 32), i32); };
  llvm::Value* c[4] = {lo(linear), hi(linear), b_.getInt32(static_cast<uint32_t>(n.attrs.i("stream"))), lo(offset)};
  llvm::Value* k[2] = {lo(seed), hi(seed)};
  for (int r = 0; r < ir::kPhiloxRounds; ++r) {
    llvm::Value* p0 = b_.CreateMul(b_.CreateZExt(c[0], i64), b_.getInt64(ir::kPhiloxM0));
    llvm::Value* p1 = b_.CreateMul(b_.CreateZExt(c[2], i64), b_.getInt64(ir::kPhiloxM1));
    llvm::Value* next[4] = {b_.CreateXor(b_.CreateXor(hi(p1), c[1]), k[0]), lo(p1),
                            b_.CreateXor(b_.CreateXor(hi(p0), c[3]), k[1]), lo(p0)};
    for (int i = 0; i < 4; ++i) c[i] = next[i];
    k[0] = b_.CreateAdd(k[0], b_.getInt32(ir::kPhiloxW0));
    k[1] = b_.CreateAdd(k[1], b_.getInt32(ir::kPhiloxW1));
  }
  llvm::Type* f64 = b_.getDoubleTy();
  auto unit = [&](llvm::Value* word, uint32_t plus) {  // (word >> 8) + plus, times 2^-24
    llvm::Value* top = b_.CreateAdd(b_.CreateLShr(word, 8), b_.getInt32(plus));
    return b_.CreateFMul(b_.CreateUIToFP(top, f64), llvm::ConstantFP::get(f64, 1.0 / 16777216.0));
  };
  llvm::Value* v;
  if (n.attrs.s("distribution") == "normal") {
    llvm::Value* u1 = unit(c[0], 1);
    llvm::Value* u2 = unit(c[1], 0);
    llvm::Value* radius = b_.CreateUnaryIntrinsic(
        llvm::Intrinsic::sqrt, b_.CreateFMul(llvm::ConstantFP::get(f64, -2.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, u1)));
    v = b_.CreateFMul(radius, b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos,
                                                     b_.CreateFMul(llvm::ConstantFP::get(f64, 6.283185307179586), u2)));
  } else {
    v = unit(c[0], 0);
  }
  return convert(b_, v, ir::DType::f64, dtype(n.results[0]));
}

}  // namespace aotrace::lowering::cpu
