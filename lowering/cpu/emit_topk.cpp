// topk kernels (a kernel of their own; ties: the lower index first; NaN the largest):
//   emit_topk_rows        a task per row walks the axis once, inserting each element into the
//                         row's k best so far (sorted stack arrays; most elements fail against
//                         the k-th and cost one compare), then stores them
//   emit_topk_heap        where k > kTopkRowsMaxK or k² > 2n (topk_as_heap: a sort, a large k):
//                         the indices kernel ranks the row as a heap in its own output
//                         (decompose gathers the values): O(n log k), a task per row
//   emit_topk_block_sort  the GPU's sorts (CpuPlan::row_tile): a thread block per row, a
//                         bitonic network over the row in its output, tiles in shared memory
// Test: lowering_tests Ops.TopK*, Dynamic.WideTopk*, Cuda.BlockSorts*.
#include <limits>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "lowering/cpu/kernel_emitter.h"

namespace aotrace::lowering::cpu {
namespace {

// (value, index) a comes before (value, index) b in topk's result order: the better value
// (largest: NaN first; smallest: NaN last), ties and NaN with NaN by the lower index.
llvm::Value* topk_before(llvm::IRBuilder<>& b, bool largest, ir::DType xt, llvm::Value* av, llvm::Value* ai,
                         llvm::Value* bv, llvm::Value* bi) {
  llvm::Value* strictly = largest ? strictly_greater(b, av, bv, xt) : strictly_less(b, av, bv, xt, false);
  llvm::Value* reverse = largest ? strictly_greater(b, bv, av, xt) : strictly_less(b, bv, av, xt, false);
  llvm::Value* tie = b.CreateAnd(b.CreateNot(reverse), b.CreateICmpSLT(ai, bi));
  return b.CreateOr(strictly, tie);
}

// Whether a topk_as_heap kernel's slot packs x's 32-bit order key above the index (values of at
// most 32 bits over rows shorter than 2^32), else holds the index alone.
bool topk_packed(ir::DType xt, int64_t length) {
  return xt != ir::DType::f64 && xt != ir::DType::i64 && length <= int64_t{std::numeric_limits<uint32_t>::max()};
}

// The 32 bits of v (of x's compute type) ascending in the output order, as an i64: floats by
// their bits (negative ones inverted), -0 as +0, NaN above +inf; integers offset by 2^31 (u8
// and bool as unsigned); inverted for largest.
llvm::Value* topk_key(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType xt, bool largest) {
  llvm::Type* i32t = b.getInt32Ty();
  llvm::Value* key;
  if (v->getType()->isFloatTy()) {
    llvm::Value* zero = llvm::ConstantFP::get(v->getType(), 0.0);
    llvm::Value* bits = b.CreateBitCast(b.CreateSelect(b.CreateFCmpOEQ(v, zero), zero, v), i32t);
    key = b.CreateSelect(b.CreateICmpSLT(bits, b.getInt32(0)), b.CreateNot(bits), b.CreateOr(bits, b.getInt32(0x80000000u)));
    key = b.CreateSelect(b.CreateFCmpUNO(v, v), b.getInt32(0xFFFFFFFFu), key);
  } else {
    const bool is_unsigned = xt == ir::DType::u8 || xt == ir::DType::b8;
    key = is_unsigned ? b.CreateZExt(v, i32t) : b.CreateSExtOrBitCast(v, i32t);
    key = b.CreateXor(key, b.getInt32(0x80000000u));
  }
  return b.CreateZExt(largest ? b.CreateNot(key) : key, b.getInt64Ty());
}

}  // namespace

// A topk result's kernel as a task per row along the axis: the row's k best so far sorted in
// stack arrays (values in the compute type, i64 indices), filled by inserting the first k
// elements, then each later element compared with the k-th (one compare for most) and, where its
// value is strictly better, inserted: a binary search for its slot, the worse ones moved down one
// (a memmove), the k-th dropped (an element comes after every kept one of equal value: its index
// is larger). Then the k are stored. O(n + inserts · (log k + k moved)) per row, against
// O(k² · n) for the k outputs element by element: top-k sampling's k = 200 over a vocabulary of
// 50257, 12 s → 0.043 ms on a CPU thread (torch 0.087 ms). Values and indices are two kernels (a
// kernel has one root), each walking the row. k at most kTopkRowsMaxK (the arrays live on a CPU
// thread's stack or in a GPU thread's local memory).
std::optional<ir::SymExpr> KernelEmitter::emit_topk_rows(llvm::Value* begin, llvm::Value* end) {
  const int p = producer_[static_cast<size_t>(k_.root)];
  if (p < 0 || read_arg_.count(k_.root) != 0) return std::nullopt;
  const ir::Node& n = g_.nodes[static_cast<size_t>(p)];
  if (n.op != ir::OpKind::TopK) return std::nullopt;
  const ir::ValueId x = n.operands[0];
  const int64_t k = n.attrs.i("k");
  const bool indices = k_.root == n.results[1];
  if (dims(x).empty()) {  // a 0-d x: itself at index 0, whatever k (as torch)
    range_loop(begin, end, [&](llvm::Value*) { store(k_.root, 0, {}, indices ? i64(0) : emit(x, {})); });
    return ir::SymExpr(1);
  }
  if (k < 1) return ir::SymExpr(0);
  if (topk_as_heap(g_, n)) {
    AOT_CHECK(indices, "the values of a topk ranked as a heap reached codegen (decompose gathers them)");
    return plan_.row_tile > 0 ? emit_topk_block_sort(n, begin, end) : emit_topk_heap(n, begin, end);
  }
  const ir::DType xt = dtype(x);
  const auto axis = static_cast<size_t>(n.attrs.i("axis"));
  const bool largest = n.attrs.has("largest") && n.attrs.i("largest") != 0;
  llvm::Type* t = compute_type(ctx_, xt);
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Value* values = stack_array(t, k);
  llvm::Value* positions = stack_array(i64t, k);
  auto slot = [&](llvm::Value* array, llvm::Type* type, llvm::Value* s) { return b_.CreateGEP(type, array, s); };
  // The row is walked in index order, so an element's index is larger than every kept one's:
  // it comes before a kept pair exactly where its value is strictly better (topk_before without
  // the tie, which it always loses).
  auto better = [&](llvm::Value* v, llvm::Value* kept) {
    return largest ? strictly_greater(b_, v, kept, xt) : strictly_less(b_, v, kept, xt, false);
  };
  // Inserts (v, i) into the kept slots [0, from) (sorted, their values non-increasing in
  // `better`'s order) and slot `from`: a binary search for the first slot whose value v beats,
  // then the slots from there to `from` move down one (a memmove) and v takes its place.
  auto insert = [&](llvm::Value* v, llvm::Value* i, llvm::Value* from) {
    llvm::Value* lo = binary_search(from, [&](llvm::Value* mid) {
      return b_.CreateNot(better(v, b_.CreateLoad(t, slot(values, t, mid))));
    });
    llvm::Value* moved = b_.CreateSub(from, lo);
    for (auto [array, type] : {std::pair{values, t}, std::pair{positions, i64t}}) {
      const uint64_t bytes = module_.getDataLayout().getTypeAllocSize(type);
      b_.CreateMemMove(slot(array, type, b_.CreateAdd(lo, i64(1))), llvm::MaybeAlign(bytes), slot(array, type, lo),
                       llvm::MaybeAlign(bytes), b_.CreateMul(moved, i64(static_cast<int64_t>(bytes))));
    }
    b_.CreateStore(v, slot(values, t, lo));
    b_.CreateStore(i, slot(positions, i64t, lo));
  };
  // The first k (fewer where a symbolic axis is shorter: the capture refuses a range allowing
  // that, and the slots past the row are never read here), then the rest against the k-th.
  llvm::Value* length = size(dims(x)[axis]);
  llvm::Value* first = b_.CreateSelect(b_.CreateICmpSLT(length, i64(k)), length, i64(k));
  return row_tasks(axis, begin, end, [&](const RowIndex& at) {
    range_loop(i64(0), first, [&](llvm::Value* i) { insert(emit(x, at(i)), i, i); });
    range_loop(first, length, [&](llvm::Value* i) {
      llvm::Value* v = emit(x, at(i));
      llvm::Value* kth = b_.CreateLoad(t, slot(values, t, i64(k - 1)));
      // Most elements fail one compare: v > kth or unordered (largest), v < kth or unordered
      // (smallest) holds for every one that beats the k-th; the NaN rules only after it.
      llvm::Value* maybe = !t->isFloatingPointTy() ? b_.getTrue() : largest ? b_.CreateFCmpUGT(v, kth) : b_.CreateFCmpULT(v, kth);
      if_else(maybe, [&] { if_else(better(v, kth), [&] { insert(v, i, i64(k - 1)); }, [] {}); }, [] {});
    });
    range_loop(i64(0), first, [&](llvm::Value* j) {
      store(k_.root, 0, at(j), indices ? b_.CreateLoad(i64t, slot(positions, i64t, j)) : b_.CreateLoad(t, slot(values, t, j)));
    });
  });
}

// The indices kernel of a topk ranked as a heap (topk_as_heap: a sort, top-p sampling's over a
// vocabulary, median, kthvalue): a task per row keeps the row's k best as a binary heap in its
// own output row, the worst kept one at the root (the first k heapified; each later element
// compared with the root, one compare for most, and where better put in its place and sifted
// down), then sorts the heap in place (the root swapped to the end), best first: ties lower
// index first, NaN largest (topk_before's total order). O(n + k log k + inserts · log k) per row
// and no scratch memory; decompose gathers the values at the indices.
// A slot holds, for values of at most 32 bits over rows shorter than 2^32, the value's key (its
// order as 32 bits) above the index, so that the order is one unsigned compare of two slots and
// the heap never reads x again; the slots become indices at the end. For f64 and i64 a slot
// holds the index alone and compares read x (topk_before). Sorting 50257 floats on one CPU
// thread: 10.5 ms with indices alone, 4.8 ms packed, 3.5 ms packed and bottom-up (torch 3.9 ms).
ir::SymExpr KernelEmitter::emit_topk_heap(const ir::Node& n, llvm::Value* begin, llvm::Value* end) {
  const ir::ValueId x = n.operands[0];
  const ir::DType xt = dtype(x);
  const auto axis = static_cast<size_t>(n.attrs.i("axis"));
  const int64_t k = n.attrs.i("k");
  const bool largest = n.attrs.has("largest") && n.attrs.i("largest") != 0;
  const bool packed = topk_packed(xt, planned(dims(x)[axis]));
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Value* length = size(dims(x)[axis]);
  // k slots (fewer where a symbolic axis is shorter: the capture refuses a range allowing that).
  llvm::Value* heap_size = b_.CreateSelect(b_.CreateICmpSLT(length, i64(k)), length, i64(k));
  struct Elem {
    llvm::Value* slot;   // what the heap's slot holds
    llvm::Value* value;  // x at the index (slots of the index alone)
  };
  return row_tasks(axis, begin, end, [&](const RowIndex& at) {
    auto value_of = [&](llvm::Value* i) { return emit(x, at(i)); };
    auto element = [&](llvm::Value* v, llvm::Value* i) {
      return packed ? Elem{b_.CreateOr(b_.CreateShl(topk_key(b_, v, xt, largest), 32), i), nullptr} : Elem{i, v};
    };
    auto element_at = [&](llvm::Value* s) {
      llvm::Value* slot = load(k_.root, 0, at(s));
      return Elem{slot, packed ? nullptr : value_of(slot)};
    };
    auto put = [&](llvm::Value* s, const Elem& e) { store(k_.root, 0, at(s), e.slot); };
    auto worse = [&](const Elem& a, const Elem& b) {  // a after b in the output order
      return packed ? b_.CreateICmpUGT(a.slot, b.slot) : topk_before(b_, largest, xt, b.value, b.slot, a.value, a.slot);
    };
    // Puts e into the heap of `size` slots at the hole `from`, bottom-up (Floyd): the hole goes
    // down to a leaf, the worse of its children moving up at each level (a select: no branch
    // to mispredict), then e climbs back while worse than its parent (a level or two: what
    // sifts down are mostly the heap's worst elements).
    auto sift_down = [&](llvm::Value* from, llvm::Value* size, const Elem& e) {
      llvm::BasicBlock* pre = b_.GetInsertBlock();
      auto* down = llvm::BasicBlock::Create(ctx_, "heap.down", fn_);
      auto* down_step = llvm::BasicBlock::Create(ctx_, "heap.child", fn_);
      auto* up = llvm::BasicBlock::Create(ctx_, "heap.up", fn_);
      auto* up_test = llvm::BasicBlock::Create(ctx_, "heap.parent", fn_);
      auto* up_move = llvm::BasicBlock::Create(ctx_, "heap.climb", fn_);
      auto* place = llvm::BasicBlock::Create(ctx_, "heap.place", fn_);
      b_.CreateBr(down);
      b_.SetInsertPoint(down);
      llvm::PHINode* hole = b_.CreatePHI(i64t, 2, "hole");
      hole->addIncoming(from, pre);
      llvm::Value* left = b_.CreateAdd(b_.CreateShl(hole, 1), i64(1));
      b_.CreateCondBr(b_.CreateICmpSLT(left, size), down_step, up);
      b_.SetInsertPoint(down_step);
      memo_.emplace_back();
      llvm::Value* right = b_.CreateAdd(left, i64(1));
      llvm::Value* has_right = b_.CreateICmpSLT(right, size);
      const Elem l = element_at(left);
      const Elem r = element_at(b_.CreateSelect(has_right, right, left));  // never past the heap
      llvm::Value* take_right = b_.CreateAnd(has_right, worse(r, l));
      put(hole, Elem{b_.CreateSelect(take_right, r.slot, l.slot), nullptr});
      memo_.pop_back();
      hole->addIncoming(b_.CreateSelect(take_right, right, left), b_.GetInsertBlock());
      b_.CreateBr(down);
      b_.SetInsertPoint(up);
      llvm::PHINode* at_hole = b_.CreatePHI(i64t, 2, "climb");
      at_hole->addIncoming(hole, down);
      b_.CreateCondBr(b_.CreateICmpSGT(at_hole, from), up_test, place);
      b_.SetInsertPoint(up_test);
      memo_.emplace_back();
      llvm::Value* parent = b_.CreateLShr(b_.CreateSub(at_hole, i64(1)), 1);
      const Elem pe = element_at(parent);
      b_.CreateCondBr(worse(e, pe), up_move, place);
      b_.SetInsertPoint(up_move);
      put(at_hole, pe);
      memo_.pop_back();
      at_hole->addIncoming(parent, up_move);
      b_.CreateBr(up);
      b_.SetInsertPoint(place);
      put(at_hole, e);
    };
    range_loop(i64(0), heap_size, [&](llvm::Value* i) { put(i, element(value_of(i), i)); });
    llvm::Value* parents = b_.CreateLShr(heap_size, 1);
    range_loop(i64(0), parents, [&](llvm::Value* q) {  // heapify: parents - 1 down to 0
      llvm::Value* p = b_.CreateSub(b_.CreateSub(parents, q), i64(1));
      sift_down(p, heap_size, element_at(p));
    });
    // Most elements fail one compare with the root.
    range_loop(heap_size, length, [&](llvm::Value* i) {
      const Elem e = element(value_of(i), i);
      if_else(worse(element_at(i64(0)), e), [&] { sift_down(i64(0), heap_size, e); }, [] {});
    });
    range_loop(i64(1), heap_size, [&](llvm::Value* q) {  // the worst left moves to slot heap_size - q
      llvm::Value* last = b_.CreateSub(heap_size, q);
      const Elem worst = element_at(i64(0)), moved = element_at(last);
      put(last, worst);
      sift_down(i64(0), last, moved);
    });
    if (packed)
      range_loop(i64(0), heap_size, [&](llvm::Value* j) { store(k_.root, 0, at(j), b_.CreateAnd(load(k_.root, 0, at(j)), i64(0xFFFFFFFF))); });
  });
}


// The indices kernel of a sort on the GPU (CpuPlan::row_tile: cuda-plan's block sorts, a whole
// static axis): a thread block per row sorts the row's slots (emit_topk_heap's: key above index,
// or the index alone) by a bitonic network over the row padded to P positions, the next power of
// two. Every compare-exchange puts the better slot at the lower position: the first pass of
// stage s (sorted runs of s/2 merged into runs of s) pairs each position with its mirror in its
// block of s, the later ones i with i + j (j = s/4 .. 1). So the padding, after every element,
// never moves, and an exchange that reaches past the row is skipped (the network sorts any n).
// The stages up to the tile (row_tile positions: 16 KiB of shared memory) run in shared memory
// a tile at a time; each later stage's passes of distance at least the tile run in the output in
// global memory, its shorter ones in shared memory again. log2 P · (log2 P + 1) / 2 passes of P/2
// exchanges, a barrier after each, every thread of the block taking every 256th exchange: top-p
// sampling's sort of 50257 is 136 passes, 15 of them in global memory, where a thread per row
// (emit_topk_heap) would take ~10^6 dependent steps alone. Grid emulation runs each phase as a
// loop over the block's threads (block_phase), the tile a stack array.
ir::SymExpr KernelEmitter::emit_topk_block_sort(const ir::Node& n, llvm::Value* begin, llvm::Value* end) {
  const ir::ValueId x = n.operands[0];
  const ir::DType xt = dtype(x);
  const auto axis = static_cast<size_t>(n.attrs.i("axis"));
  const bool largest = n.attrs.has("largest") && n.attrs.i("largest") != 0;
  const std::optional<int64_t> length = dims(x)[axis].as_constant();
  const int64_t threads = plan_.lanes;
  AOT_CHECK(length && *length == n.attrs.i("k") && *length >= 2 && threads > 1 && plan_.row_tile >= 2 &&
                (plan_.row_tile & (plan_.row_tile - 1)) == 0,
            "a block sort sorts a whole static axis of at least 2 positions by a thread block, in tiles of a power of two");
  int64_t log_p = 0;
  while ((int64_t{1} << log_p) < *length) ++log_p;
  int64_t log_t = 0;
  while ((int64_t{1} << log_t) < plan_.row_tile && log_t < log_p) ++log_t;
  const int64_t tile = int64_t{1} << log_t, tiles = (*length + tile - 1) / tile;
  const bool packed = topk_packed(xt, *length);
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Value* shared = block_array(i64t, tile, "sort_tile");
  // Slots of the tile or of the row in the output, by position (within the tile, the row).
  struct Slots {
    std::function<llvm::Value*(llvm::Value*)> get;
    std::function<void(llvm::Value*, llvm::Value*)> set;
  };
  auto in_tile = [&](llvm::Value* i) { return b_.CreateInBoundsGEP(i64t, shared, i); };
  const Slots tile_slots{[&](llvm::Value* i) { return b_.CreateAlignedLoad(i64t, in_tile(i), llvm::Align(8)); },
                         [&](llvm::Value* i, llvm::Value* v) { b_.CreateAlignedStore(v, in_tile(i), llvm::Align(8)); }};
  return row_tasks(axis, begin, end, [&](const RowIndex& at) {
    const Slots row_slots{[&](llvm::Value* i) { return load(k_.root, 0, at(i)); },
                          [&](llvm::Value* i, llvm::Value* v) { store(k_.root, 0, at(i), v); }};
    // Slot a after slot b in the output order.
    auto worse = [&](llvm::Value* a, llvm::Value* b) {
      return packed ? b_.CreateICmpUGT(a, b) : topk_before(b_, largest, xt, emit(x, at(b)), b, emit(x, at(a)), a);
    };
    // One pass of distance 2^je (flip: the first of its stage, pairing mirrors) over `pairs`
    // exchanges of `slots`, whose position 0 is the row's position `base`.
    auto pass = [&](const Slots& slots, llvm::Value* base, int64_t pairs, llvm::Value* je, llvm::Value* flip) {
      block_phase(threads, true, [&](llvm::Value* tid) {
        range_loop(tid, i64(pairs), [&](llvm::Value* q) {
          llvm::Value* j = b_.CreateShl(i64(1), je);
          llvm::Value* r = b_.CreateAnd(q, b_.CreateSub(j, i64(1)));
          llvm::Value* start = b_.CreateShl(b_.CreateLShr(q, je), b_.CreateAdd(je, i64(1)));  // the block of 2j
          llvm::Value* lo = b_.CreateAdd(start, r);
          llvm::Value* mirror = b_.CreateSub(b_.CreateAdd(start, b_.CreateShl(j, 1)), b_.CreateAdd(r, i64(1)));
          llvm::Value* hi = b_.CreateSelect(flip, mirror, b_.CreateAdd(lo, j));
          if_else(b_.CreateICmpSLT(b_.CreateAdd(base, hi), i64(*length)), [&] {
            llvm::Value* a = slots.get(lo);
            llvm::Value* b = slots.get(hi);
            llvm::Value* swap = worse(a, b);
            slots.set(lo, b_.CreateSelect(swap, b, a));
            slots.set(hi, b_.CreateSelect(swap, a, b));
          }, [] {});
        }, threads);
      });
    };
    // Every tile of the row through shared memory: loaded (fresh: its slots made from x), sorted
    // by the stages up to the tile (fresh) or by the passes of distance below it, stored (last:
    // as indices).
    auto tile_sweep = [&](bool fresh, llvm::Value* last) {
      range_loop(i64(0), i64(tiles), [&](llvm::Value* t) {
        llvm::Value* base = b_.CreateMul(t, i64(tile));
        llvm::Value* count = smin(i64(tile), b_.CreateSub(i64(*length), base));  // positions in the row
        block_phase(threads, true, [&](llvm::Value* tid) {
          range_loop(tid, count, [&](llvm::Value* i) {
            llvm::Value* p = b_.CreateAdd(base, i);
            llvm::Value* slot = !fresh ? row_slots.get(p)
                                : packed ? b_.CreateOr(b_.CreateShl(topk_key(b_, emit(x, at(p)), xt, largest), 32), p)
                                         : p;
            tile_slots.set(i, slot);
          }, threads);
        });
        if (fresh) {
          range_loop(i64(1), i64(log_t + 1), [&](llvm::Value* e) {  // stage s = 2^e
            range_loop(i64(0), e, [&](llvm::Value* u) {
              pass(tile_slots, base, tile / 2, b_.CreateSub(b_.CreateSub(e, i64(1)), u), b_.CreateICmpEQ(u, i64(0)));
            });
          });
        } else {
          range_loop(i64(0), i64(log_t), [&](llvm::Value* u) {
            pass(tile_slots, base, tile / 2, b_.CreateSub(i64(log_t - 1), u), b_.getFalse());
          });
        }
        block_phase(threads, true, [&](llvm::Value* tid) {
          range_loop(tid, count, [&](llvm::Value* i) {
            llvm::Value* slot = tile_slots.get(i);
            if (packed) slot = b_.CreateSelect(last, b_.CreateAnd(slot, i64(0xFFFFFFFF)), slot);
            row_slots.set(b_.CreateAdd(base, i), slot);
          }, threads);
        });
      });
    };
    tile_sweep(true, b_.getInt1(log_p == log_t));
    // Each later stage: its passes of distance from 2^(e-1) down to the tile in global memory,
    // then the rest tile by tile.
    range_loop(i64(log_t + 1), i64(log_p + 1), [&](llvm::Value* e) {
      range_loop(i64(0), b_.CreateSub(e, i64(log_t)), [&](llvm::Value* u) {
        pass(row_slots, i64(0), (int64_t{1} << log_p) / 2, b_.CreateSub(b_.CreateSub(e, i64(1)), u), b_.CreateICmpEQ(u, i64(0)));
      });
      tile_sweep(false, b_.CreateICmpEQ(e, i64(log_p)));
    });
  });
}

}  // namespace aotrace::lowering::cpu
