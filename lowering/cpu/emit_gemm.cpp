// Matmul and conv kernels as a packed, register-blocked GEMM (the BLIS/GotoBLAS structure):
//
//   per task = one MT×NC block of C (for one batch index; MT = a few MC):
//     for each KC panel of K:
//       pack B[pc:pc+KC, jc:jc+NC] into NR-column micro-panels (p-major: b[p*NR + j])
//       for each MC block of the task's rows:
//         pack A[ic:ic+MC, pc:pc+KC] into MR-row micro-panels  (p-major: a[p*MR + i])
//         for each NR panel, for each MR panel: the MR×NR microkernel accumulates into the tile
//     epilogue: for each element of the block, the kernel's root is evaluated with the matmul/
//               conv value taken from the tile (bias, batch-norm, activation, residual add...)
//               and stored once: fused intermediates never reach the output buffer.
//
// An operand that is a strided view of a buffer (StridedView: a row-major or transposed matrix,
// attention's heads split by reshape + permute, a broadcast batch dim) is packed with plain
// loads, vector loads where the panel is contiguous; a matmul's A whose rows are contiguous
// along K is not packed at all: the microkernel reads its rows in place (as oneDNN's brgemm
// does for inference). Other operands are evaluated while packing, through their index maps,
// so conv's im2col (zero padding, stride, dilation) and fused elementwise producers cost
// nothing beyond the packing read. K is cut into even panels of at most KC. The first
// microkernel call on each B panel prefetches the next one into L2 (pre-packed weights come
// from memory). The microkernel keeps MR × NR/lanes vector accumulators in
// registers (6×16 with AVX2's 16 registers: 12 accumulators, 2 B vectors, 1 broadcast) and uses
// llvm.fmuladd, which becomes FMA where the target has it. Tiles are on the stack of the thread
// running the task: tasks are independent, so the runtime's parallel_for spreads them.
//
// Weights packed at compile time (pack_weights.cpp, nodes marked packed_a/packed_b) are read in
// place: only the activation side is packed per call.
//
// Taken: f32 matmul with both operands of rank >= 2, and f32 conv but depthwise (a grouped
// conv: one GEMM per image and group, GemmPlan::groups), when the product is big enough to pay
// for packing (passes.h kGemmMin*: M >= 4, N >= 4, K >= 8); f16 and bf16 too, their
// operands widened to f32 as they are packed (A never read in place) and their sums rounded to
// the type before the epilogue, as the per-element loop rounds its sum. An f16 matmul's weight B
// is pre-packed as f16 panels (GemmPlan::b_f16), widened by the microkernel as it loads them
// where few rows read each panel, else once per task and K panel into f32 panels (widen_b); an
// f16 conv's W is read by its rows, widened as packed. A bf16 matmul's weight B is pre-packed
// in bf16 K pairs (GemmPlan::b_pairs): with AVX512-BF16 (known at compile time, or asked of
// CPUID at run time by an x86-64-v4 library) A's bf16 rows are read in place and each step of
// two K is one vdpbf16ps per accumulator (bert's bf16 layer 2x faster); elsewhere the pairs are
// widened in registers by a shift and a mask (the same numbers as f32 panels, half their bytes).
// A bf16 conv takes the dot too: its W's rows read in place, its im2col packed in K pairs as it
// runs (resnet18's strided and 1×1 convs 1.5-3x faster; elsewhere f32 panels, and W's rows
// widened as they are packed), and so does a product of two bf16 activations (attention's), its
// B packed in pairs as it runs. Everything else keeps the per-element loops of
// emit_reductions.cpp, but depthwise convs (emit_depthwise.cpp). That
// choice and the blocking (GemmPlan) are made before codegen, by cpu/plan.cpp (the "cpu-plan"
// pass, `--dump cpu-plan`); this file carries them out.
//
// Dynamic dims: M, N, K, the batch and a conv's row width may be symbolic. The blocking (MR, NR,
// MC, KC, MT) stays a set of constants, chosen from the sizes at their maxima; the edges, the
// panel and block counts and the task count are computed from the symbols at run time (NC too
// for a conv: whole rows; the tile and B panel are sized for its bound).
//
// Test: lowering_tests Gemm.* (edge blocks in every dim, K over several panels, batch broadcast,
// transposed operands, conv stride/pad/dilation with bias and epilogues), Dynamic.* (symbolic M,
// N, K, batch, conv sizes), and every model test.
#include "lowering/cpu/kernel_emitter.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsX86.h>

namespace aotrace::lowering::cpu {

// B panels packed per call lie KC·NR + kBPanelPad floats apart, not KC·NR: at KC = 64 with 16
// lanes that is 4 KB, and packing walks K outermost, so each step's stores into the panels all
// fell in one L1 set (more panels than the cache has ways).
constexpr int64_t kBPanelPad = 16;

static llvm::Value* local_b_stride(llvm::IRBuilder<>& b, llvm::Value* kc, int64_t nr) {
  return b.CreateAdd(b.CreateMul(kc, b.getInt64(static_cast<uint64_t>(nr))), b.getInt64(kBPanelPad));
}

// Where element p (along K) of panel q lies in a packing buffer of `width`-wide panels
// `panel_stride` floats apart.
static llvm::Value* panel_offset(llvm::IRBuilder<>& b, llvm::Value* q, llvm::Value* p, llvm::Value* panel_stride,
                                 int64_t width) {
  return b.CreateAdd(b.CreateMul(q, panel_stride), b.CreateMul(p, b.getInt64(static_cast<uint64_t>(width))));
}


// How many rows (a conv's channels) ahead a GEMM's epilogue prefetches its output and residual.
constexpr int64_t kEpiloguePrefetchAhead = 4;

// B panels per microkernel call: two where one panel is a single vector wide (AVX-512), so that
// a call keeps 12 accumulators in flight; one elsewhere.
int64_t panels_per_call(const CpuTarget& target, int64_t nr) {
  return nr / std::min<int64_t>(target.f32_lanes, nr) == 1 ? 2 : 1;
}

llvm::Value* KernelEmitter::stack_array(llvm::Type* t, int64_t count) {
  llvm::IRBuilder<> eb(entry_, entry_->begin());
  llvm::AllocaInst* a = eb.CreateAlloca(t, eb.getInt64(static_cast<uint64_t>(count)));
  a->setAlignment(llvm::Align(64));
  return a;
}

llvm::Value* KernelEmitter::group_rows(const GemmPlan& plan, const Index& batch) {
  return plan.groups > 1 ? b_.CreateMul(batch[1], size(plan.m)) : i64(0);
}

llvm::Value* KernelEmitter::group_input_channels(const GemmPlan& plan, const Index& batch) {
  return plan.groups > 1 ? b_.CreateMul(batch[1], i64(static_dims(g_, plan.a)[1])) : i64(0);
}

// A[m, k] of batch `batch`: matmul's first operand, or the conv weight as Cout × (Cin·window)
// (a grouped conv's: the group's rows).
llvm::Value* KernelEmitter::gemm_a(const GemmPlan& plan, const Index& batch, llvm::Value* m,
                                   llvm::Value* k) {
  ir::ValueId a = plan.a;
  const ir::Shape& as = dims(a);
  Index ai;
  if (plan.is_conv) {
    ai.push_back(b_.CreateAdd(group_rows(plan, batch), m));
    Index window = unflatten(k, ir::Shape(as.begin() + 1, as.end()));
    ai.insert(ai.end(), window.begin(), window.end());
  } else {
    ai = broadcast(ir::Shape(as.begin(), as.end() - 2), batch.size(), batch);
    ai.push_back(m);
    ai.push_back(k);
  }
  return emit(a, ai);
}

// The address of A[m, k] of batch `batch` where A's rows lie along K (GemmPlan::a_rows,
// direct_a): in matmul's strided view, or in a conv's W, whose rows [Cout, Cin·kh·kw] are K long.
llvm::Value* KernelEmitter::a_row_address(const GemmPlan& plan, const Index& batch, llvm::Value* m, llvm::Value* k) {
  if (plan.is_conv)
    return b_.CreateInBoundsGEP(storage_type(ctx_, dtype(plan.a)), buffers_[static_cast<size_t>(read_arg_.at(plan.a))],
                                b_.CreateAdd(b_.CreateMul(b_.CreateAdd(group_rows(plan, batch), m), size(plan.k)), k));
  const ir::Shape& as = dims(plan.a);
  Index ai = broadcast(ir::Shape(as.begin(), as.end() - 2), batch.size(), batch);
  ai.push_back(m);
  ai.push_back(k);
  return strided_address(*plan.a_view, ai);
}

// The distance in elements between A's rows where they lie along K (a_row_address).
const ir::SymExpr& KernelEmitter::a_row_stride(const GemmPlan& plan) {
  return plan.is_conv ? plan.k : plan.a_view->strides[dims(plan.a).size() - 2];
}

// B[k, n] of batch `batch`: matmul's second operand, or conv's im2col of the input (zero where
// the window reads padding).
llvm::Value* KernelEmitter::gemm_b(const GemmPlan& plan, const Index& batch, llvm::Value* k,
                                   llvm::Value* n_pos) {
  const ir::Node& n = g_.nodes[static_cast<size_t>(plan.node)];
  if (!plan.is_conv) {
    ir::ValueId bv = plan.b;
    const ir::Shape& bs = dims(bv);
    Index bi = broadcast(ir::Shape(bs.begin(), bs.end() - 2), batch.size(), batch);
    bi.push_back(k);
    bi.push_back(n_pos);
    return emit(bv, bi);
  }
  ir::ValueId x = plan.b;
  const ir::Shape &xs = dims(x), &out = dims(k_.reduction);
  std::vector<int64_t> ws = static_dims(g_, plan.a);
  std::vector<int64_t> stride = int_list(n.attrs, "stride"), dilation = int_list(n.attrs, "dilation"),
                       pad = int_list(n.attrs, "pad_low");
  Index window = unflatten(k, to_shape(std::vector<int64_t>(ws.begin() + 1, ws.end())));
  Index spatial = unflatten(n_pos, ir::Shape(out.begin() + 2, out.end()));
  Index xi = {batch[0], b_.CreateAdd(group_input_channels(plan, batch), window[0])};
  llvm::Value* inside = b_.getTrue();
  for (size_t s = 0; s + 2 < xs.size(); ++s) {
    llvm::Value* pos = b_.CreateAdd(b_.CreateMul(spatial[s], i64(stride[s])),
                                    b_.CreateMul(window[1 + s], i64(dilation[s])));
    if (pad[s] != 0) pos = b_.CreateSub(pos, i64(pad[s]));
    if (pad[s] != 0 || may_leave(out[2 + s], stride[s], ws[2 + s], dilation[s], xs[2 + s])) {
      inside = b_.CreateAnd(inside, in_range(pos, xs[2 + s]));
      pos = clamp(pos, xs[2 + s]);
    }
    xi.push_back(is_one(xs[2 + s]) ? b_.getInt64(0) : pos);
  }
  return b_.CreateSelect(inside, emit(x, xi), llvm::ConstantFP::get(b_.getFloatTy(), 0.0));
}

// Packs rows [start, start + count) of A (or columns of B) for K range [pc, pc + kc) into
// micro-panels of MR (NR) at `dst`, zero-filling past the matrix edge. A is walked panel by
// panel (MR rows advance together along K); B is walked along K outermost, so that a row of a
// row-major B is read once, contiguously, across all its panels.
void KernelEmitter::gemm_pack(const GemmPlan& plan, bool pack_a, const Index& batch,
                              llvm::Value* start, llvm::Value* count, llvm::Value* pc,
                              llvm::Value* kc, llvm::Value* dst, bool pairs) {
  int64_t r = pack_a ? plan.mr : plan.nr;
  const ir::SymExpr& limit = pack_a ? plan.m : plan.n;
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* panels = b_.CreateUDiv(b_.CreateAdd(count, i64(r - 1)), i64(r));
  // A strided view is packed with plain loads: one vector load where the panel's elements are
  // adjacent in memory (a row-major B), else r loads at a constant stride (a transposed B).
  const std::optional<StridedView>& view = pack_a ? plan.a_view : plan.b_view;
  const ir::Shape& vs = dims(pack_a ? plan.a : plan.b);
  // One panel q at K offset p: r values at `at` (null: the panel's place), clamped and zeroed
  // past the edge only where needed.
  auto pack_one = [&](llvm::Value* q, llvm::Value* p, llvm::Value* at = nullptr) {
    llvm::Value* base = b_.CreateAdd(start, b_.CreateMul(q, i64(r)));
    llvm::Value* full = b_.CreateICmpSLE(b_.CreateAdd(base, i64(r)), size(limit));
    if (at == nullptr) {
      llvm::Value* stride = pack_a ? b_.CreateMul(kc, i64(r)) : local_b_stride(b_, kc, r);
      at = b_.CreateInBoundsGEP(f32, dst, panel_offset(b_, q, p, stride, r));
    }
    llvm::Value* k = b_.CreateAdd(pc, p);
    // The per-element path: zero past the edge, or every element through the operand's index map.
    auto each = [&](bool at_edge) {
      memo_.emplace_back();
      for (int64_t i = 0; i < r; ++i) {
        llvm::Value* pos = b_.CreateAdd(base, i64(i));
        llvm::Value* valid = nullptr;
        if (at_edge) {
          valid = in_range(pos, limit);
          pos = clamp(pos, limit);
        }
        llvm::Value* v = pack_a ? gemm_a(plan, batch, pos, k) : gemm_b(plan, batch, k, pos);
        if (valid != nullptr) v = b_.CreateSelect(valid, v, llvm::ConstantFP::get(f32, 0.0));
        b_.CreateAlignedStore(v, b_.CreateConstInBoundsGEP1_64(f32, at, static_cast<uint64_t>(i)), llvm::Align(4));
      }
      memo_.pop_back();
    };
    if_else(full, [&] {
      if (!view || plan.is_conv) return each(false);
      Index vi = broadcast(ir::Shape(vs.begin(), vs.end() - 2), batch.size(), batch);
      vi.push_back(pack_a ? base : k);
      vi.push_back(pack_a ? k : base);
      llvm::Value* from = strided_address(*view, vi);
      const ir::SymExpr& step = view->strides[vs.size() - (pack_a ? 2 : 1)];
      // f16/bf16 elements are loaded as their bits and widened (a vector at a time).
      const ir::DType t = dtype(view->buffer);
      if (is_one(step)) {
        b_.CreateAlignedStore(load_widened(t, from, i64(0), r), at, llvm::Align(4));
        return;
      }
      for (int64_t i = 0; i < r; ++i)
        b_.CreateAlignedStore(load_widened(t, from, size(step * i), 1),
                              b_.CreateConstInBoundsGEP1_64(f32, at, static_cast<uint64_t>(i)), llvm::Align(4));
    }, [&] { each(true); });
  };
  // An f16/bf16 A read along K (GemmPlan::a_rows: a linear layer's activations, a half conv's
  // W) packs a panel 16 steps of K at a time: its r rows' next 16 elements loaded as vectors of
  // bits, widened, and transposed in registers into the panel's 16·r contiguous floats
  // (p-major). One element at a time, LLVM vectorised along K with scatter stores: a bf16 linear
  // layer of 128 × 768 by 768 × 3072 spent a third of its time there.
  if (pack_a && plan.a_rows) {
    constexpr int64_t kChunk = 16;
    std::vector<int> transpose;  // element i·16 + j (row i, step j) to j·r + i
    for (int64_t j = 0; j < kChunk; ++j)
      for (int64_t i = 0; i < r; ++i) transpose.push_back(static_cast<int>(i * kChunk + j));
    llvm::Value* chunks = b_.CreateUDiv(kc, i64(kChunk));
    range_loop(i64(0), panels, [&](llvm::Value* q) {
      llvm::Value* base = b_.CreateAdd(start, b_.CreateMul(q, i64(r)));
      llvm::Value* full = b_.CreateICmpSLE(b_.CreateAdd(base, i64(r)), size(limit));
      if_else(full, [&] {
        range_loop(i64(0), chunks, [&](llvm::Value* c) {
          llvm::Value* p = b_.CreateMul(c, i64(kChunk));
          llvm::Value* k = b_.CreateAdd(pc, p);
          std::vector<llvm::Value*> rows;
          for (int64_t i = 0; i < r; ++i)
            rows.push_back(load_widened(dtype(plan.a), a_row_address(plan, batch, b_.CreateAdd(base, i64(i)), k), i64(0), kChunk));
          llvm::Value* panel = b_.CreateShuffleVector(llvm::concatenateVectors(b_, rows), transpose);
          llvm::Value* at = b_.CreateInBoundsGEP(f32, dst, panel_offset(b_, q, p, b_.CreateMul(kc, i64(r)), r));
          b_.CreateAlignedStore(panel, at, llvm::Align(4));
        });
        range_loop(b_.CreateMul(chunks, i64(kChunk)), kc, [&](llvm::Value* p) { pack_one(q, p); });
      }, [&] { range_loop(i64(0), kc, [&](llvm::Value* p) { pack_one(q, p); }); });
    });
    return;
  }
  if (pack_a)
    range_loop(i64(0), panels, [&](llvm::Value* q) { range_loop(i64(0), kc, [&](llvm::Value* p) { pack_one(q, p); }); });
  else
    pack_b_rows(plan, pairs, kc, panels, dst, [&](llvm::Value* p, llvm::Value* q, llvm::Value* at) { pack_one(q, p, at); });
}

// Packs rows [0, kc) of a B block into `panels` panels at `dst`: `row(p, q, at)` stores row p
// of panel q, NR floats, at `at`. f32 panels take each row at its place (KC·NR + pad floats
// apart); `pairs` (a bf16 conv's im2col for the dot) put rows 2s and 2s + 1 (zeros past
// kc) through a scratch and store them as the words of pair s, their bf16 bits the low and the
// high halves (⌈KC/2⌉·NR + pad words apart), the layout of pack_weights' pairs.
void KernelEmitter::pack_b_rows(const GemmPlan& plan, bool pairs, llvm::Value* kc, llvm::Value* panels, llvm::Value* dst,
                                const std::function<void(llvm::Value*, llvm::Value*, llvm::Value*)>& row) {
  llvm::Type* f32 = b_.getFloatTy();
  if (!pairs) {
    range_loop(i64(0), kc, [&](llvm::Value* p) {
      range_loop(i64(0), panels, [&](llvm::Value* q) {
        row(p, q, b_.CreateInBoundsGEP(f32, dst, panel_offset(b_, q, p, local_b_stride(b_, kc, plan.nr), plan.nr)));
      });
    });
    return;
  }
  auto* words = llvm::FixedVectorType::get(b_.getInt32Ty(), static_cast<unsigned>(plan.nr));
  llvm::Value* scratch = stack_array(f32, 2 * plan.nr);
  llvm::Value* odd = b_.CreateConstInBoundsGEP1_64(f32, scratch, static_cast<uint64_t>(plan.nr));
  llvm::Value* count = b_.CreateLShr(b_.CreateAdd(kc, i64(1)), 1);
  range_loop(i64(0), count, [&](llvm::Value* s) {
    llvm::Value* p = b_.CreateShl(s, 1);
    range_loop(i64(0), panels, [&](llvm::Value* q) {
      row(p, q, scratch);
      if_else(b_.CreateICmpSLT(b_.CreateAdd(p, i64(1)), kc), [&] { row(b_.CreateAdd(p, i64(1)), q, odd); },
              [&] { b_.CreateAlignedStore(llvm::Constant::getNullValue(words), odd, llvm::Align(4)); });
      llvm::Value* lo = b_.CreateAlignedLoad(words, scratch, llvm::Align(4));
      llvm::Value* hi = b_.CreateAlignedLoad(words, odd, llvm::Align(4));
      llvm::Value* word = b_.CreateOr(b_.CreateLShr(lo, 16), b_.CreateAnd(hi, llvm::ConstantInt::get(words, 0xffff0000u)));
      b_.CreateAlignedStore(word, b_.CreateInBoundsGEP(f32, dst, panel_offset(b_, q, s, local_b_stride(b_, count, plan.nr), plan.nr)),
                            llvm::Align(4));
    });
  });
}

void KernelEmitter::gemm_widen_f16_b(const GemmPlan& plan, llvm::Value* panels16, llvm::Value* jc, llvm::Value* nc,
                                     llvm::Value* pc, llvm::Value* kc, llvm::Value* dst) {
  llvm::Value* first = b_.CreateUDiv(jc, i64(plan.nr));  // jc is a multiple of NR
  llvm::Value* panel_stride = b_.CreateMul(size(plan.k), i64(plan.nr));
  pack_b_rows(plan, false, kc, ceil_div(nc, plan.nr), dst, [&](llvm::Value* p, llvm::Value* q, llvm::Value* at) {
    llvm::Value* from = panel_offset(b_, b_.CreateAdd(first, q), b_.CreateAdd(pc, p), panel_stride, plan.nr);
    b_.CreateAlignedStore(load_widened(ir::DType::f16, panels16, from, plan.nr), at, llvm::Align(4));
  });
}

// B of a wide conv (see GemmPlan): for each k = (ci, kh, kw), the columns [jc, jc + nc) are
// x_flat[batch, ci, kh·dilation, kw·dilation] + n: NR of them are one vector load. Only the last
// panels, near the end of N or of the buffer, take the per-element clamped path.
void KernelEmitter::gemm_pack_wide_b(const GemmPlan& plan, bool pairs, const Index& batch, llvm::Value* jc,
                                     llvm::Value* nc, llvm::Value* pc, llvm::Value* kc,
                                     llvm::Value* dst) {
  const ir::SymExpr total = g_.type(plan.b).numel();
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* src = buffers_[static_cast<size_t>(read_arg_.at(plan.b))];
  llvm::Value* panels = b_.CreateUDiv(b_.CreateAdd(nc, i64(plan.nr - 1)), i64(plan.nr));
  pack_b_rows(plan, pairs, kc, panels, dst, [&](llvm::Value* p, llvm::Value* q, llvm::Value* at) {
    llvm::Value* off = conv_input_base(plan, batch, b_.CreateAdd(pc, p));
    llvm::Value* flat = b_.CreateAdd(off, b_.CreateAdd(jc, b_.CreateMul(q, i64(plan.nr))));
    // Columns past N are computed and dropped: only the end of the buffer needs the edge path,
    // where the elements past it read 0.
    if_else(b_.CreateICmpSLE(b_.CreateAdd(flat, i64(plan.nr)), size(total)), [&] {
      b_.CreateAlignedStore(load_widened(dtype(plan.b), src, flat, plan.nr), at, llvm::Align(4));
    }, [&] {
      for (int64_t j = 0; j < plan.nr; ++j) {
        llvm::Value* f = b_.CreateAdd(flat, i64(j));
        llvm::Value* v = load_widened(dtype(plan.b), src, clamp(f, total), 1);
        v = b_.CreateSelect(in_range(f, total), v, llvm::ConstantFP::get(f32, 0.0));
        b_.CreateAlignedStore(v, b_.CreateConstInBoundsGEP1_64(f32, at, static_cast<uint64_t>(j)), llvm::Align(4));
      }
    });
  });
}

// The offset in the conv input of batch `batch`, the input channel of k and its window position
// (dilation included) at output position 0: where B[k, ·] starts (wide and gathered convs).
llvm::Value* KernelEmitter::conv_input_base(const GemmPlan& plan, const Index& batch, llvm::Value* k) {
  const ir::Shape& xs = dims(plan.b);
  std::vector<int64_t> ws = static_dims(g_, plan.a), dilation = int_list(g_.nodes[static_cast<size_t>(plan.node)].attrs, "dilation");
  Index window = unflatten(k, to_shape(std::vector<int64_t>(ws.begin() + 1, ws.end())));
  ir::SymExpr x_stride = 1;  // of spatial dim s, walking from the innermost
  llvm::Value* base = i64(0);
  for (size_t s = xs.size(); s-- > 2;) {
    base = b_.CreateAdd(base, b_.CreateMul(window[s - 1], size(x_stride * dilation[s - 2])));
    x_stride = x_stride * xs[s];
  }
  base = b_.CreateAdd(base, b_.CreateMul(b_.CreateAdd(group_input_channels(plan, batch), window[0]), size(x_stride)));
  return b_.CreateAdd(base, b_.CreateMul(batch[0], size(xs[1] * x_stride)));
}

// Brings part `part` of `parts` of the source of the B block [pc, pc + kc) × [jc, jc + nc) of
// batch `batch` into L2, for a B packed here from contiguous lines: a wide conv's input rows
// (one per k, nc elements long), a gathered conv's input (one span per input channel, from its
// first tap at the block's first column to its last tap at the last column: the rows the
// block's windows cover), a strided-view matmul B's rows (row-major: one per k) or columns
// (transposed: one per n, kc long). Other B (a merged conv's images, B evaluated through index
// maps, pre-packed weights) emit nothing. gemm_task_loop spreads the parts over a task's
// microkernel calls for the task that follows it: packing then reads L2 instead of waiting on
// L3 or memory for each of its lines (a 1×1 conv's B is a few hundred lines 10-50 KB apart,
// too many streams for the hardware prefetcher).
void KernelEmitter::prefetch_b_source(const GemmPlan& plan, const Index& batch, llvm::Value* jc, llvm::Value* nc,
                                      llvm::Value* pc, llvm::Value* kc, llvm::Value* part, llvm::Value* parts) {
  // Line r: the address of its first element and its length in elements.
  std::function<std::pair<llvm::Value*, llvm::Value*>(llvm::Value*)> line;
  llvm::Value* lines = kc;
  ir::ValueId buffer = plan.b;
  auto input_at = [&](llvm::Value* offset) {
    return b_.CreateGEP(storage_type(ctx_, dtype(plan.b)), buffers_[static_cast<size_t>(read_arg_.at(plan.b))], offset);
  };
  if (plan.widen_b) {
    // The block's f16 panels (K·NR halves apart, kc·NR of them from row pc), in lines of 16 rows
    // (512 bytes): a whole panel per call came in bursts of 128 prefetches.
    constexpr int64_t kRows = 16;
    llvm::Value* chunks = ceil_div(kc, kRows);
    lines = b_.CreateMul(ceil_div(nc, plan.nr), chunks);
    llvm::Value* panels16 = packed_weight(plan.b, plan.nr, false, ir::DType::f16);
    line = [&, panels16, chunks](llvm::Value* r) {
      llvm::Value* q = b_.CreateAdd(b_.CreateUDiv(jc, i64(plan.nr)), b_.CreateUDiv(r, chunks));
      llvm::Value* row = b_.CreateMul(b_.CreateURem(r, chunks), i64(kRows));
      llvm::Value* at = panel_offset(b_, q, b_.CreateAdd(pc, row), b_.CreateMul(size(plan.k), i64(plan.nr)), plan.nr);
      return std::pair{b_.CreateGEP(b_.getInt16Ty(), panels16, at),
                       b_.CreateMul(smin(b_.CreateSub(kc, row), i64(kRows)), i64(plan.nr))};
    };
  } else if (plan.wide) {
    line = [&](llvm::Value* r) {
      return std::pair{input_at(b_.CreateAdd(conv_input_base(plan, batch, b_.CreateAdd(pc, r)), jc)), nc};
    };
  } else if (plan.gathered && !plan.merged) {
    const std::vector<int64_t> ws = static_dims(g_, plan.a);
    int64_t taps = 1;
    for (size_t d = 2; d < ws.size(); ++d) taps *= ws[d];
    llvm::Value* c0 = b_.CreateUDiv(pc, i64(taps));
    lines = b_.CreateSub(b_.CreateAdd(b_.CreateUDiv(b_.CreateSub(b_.CreateAdd(pc, kc), i64(1)), i64(taps)), i64(1)), c0);
    llvm::Value* first = conv_column_offset(plan, jc);
    llvm::Value* last = conv_column_offset(plan, b_.CreateSub(b_.CreateAdd(jc, nc), i64(1)));
    line = [&, taps, c0, first, last](llvm::Value* r) {
      llvm::Value* k = b_.CreateMul(b_.CreateAdd(c0, r), i64(taps));
      llvm::Value* start = b_.CreateAdd(conv_input_base(plan, batch, k), first);
      llvm::Value* end = b_.CreateAdd(conv_input_base(plan, batch, b_.CreateAdd(k, i64(taps - 1))), last);
      return std::pair{input_at(start), b_.CreateAdd(b_.CreateSub(end, start), i64(1))};
    };
  } else if (!plan.is_conv && plan.b_view) {
    const StridedView& view = *plan.b_view;
    buffer = view.buffer;
    const ir::Shape& bs = dims(plan.b);
    const bool row_major = is_one(view.strides[bs.size() - 1]);
    if (!row_major && !is_one(view.strides[bs.size() - 2])) return;
    if (!row_major) lines = nc;
    line = [&, row_major](llvm::Value* r) {
      Index vi = broadcast(ir::Shape(bs.begin(), bs.end() - 2), batch.size(), batch);
      vi.push_back(row_major ? b_.CreateAdd(pc, r) : pc);
      vi.push_back(row_major ? jc : b_.CreateAdd(jc, r));
      return std::pair{strided_address(view, vi), row_major ? nc : kc};
    };
  } else {
    return;
  }
  const int64_t bytes = static_cast<int64_t>(storage_type(ctx_, dtype(buffer))->getPrimitiveSizeInBits() / 8);
  llvm::Value* per = b_.CreateUDiv(b_.CreateAdd(lines, b_.CreateSub(parts, i64(1))), parts);
  llvm::Value* first = smin(b_.CreateMul(part, per), lines);
  range_loop(first, smin(b_.CreateAdd(first, per), lines), [&](llvm::Value* r) {
    auto [at, length] = line(r);
    // Every 64-byte line the elements touch: one per 64 bytes from the first, and the last.
    llvm::Value* span = b_.CreateMul(length, i64(bytes));
    auto fetch = [&](llvm::Value* offset) {
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                         {b_.CreateGEP(b_.getInt8Ty(), at, offset), b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
    };
    range_loop(i64(0), b_.CreateUDiv(b_.CreateAdd(span, i64(63)), i64(64)), [&](llvm::Value* l) { fetch(b_.CreateMul(l, i64(64))); });
    fetch(b_.CreateSub(span, i64(1)));
  });
}

// The offsets into the conv input of output columns [jc, jc + count) (GemmPlan::gathered): for
// column n at output position (o_1, ..), Σ o_s·stride_s·(input stride of spatial dim s); columns
// past N get 0 (a valid address: their results are never stored).
void KernelEmitter::gemm_conv_offsets(const GemmPlan& plan, llvm::Value* jc, int64_t count, llvm::Value* table) {
  range_loop(i64(0), i64(count), [&](llvm::Value* j) {
    llvm::Value* n = b_.CreateAdd(jc, j);
    b_.CreateAlignedStore(b_.CreateSelect(in_range(n, plan.n), conv_column_offset(plan, clamp(n, plan.n)), i64(0)),
                          b_.CreateInBoundsGEP(b_.getInt64Ty(), table, j), llvm::Align(8));
  });
}

// The offset into the conv input of output column n < N of a gathered conv (gemm_conv_offsets).
llvm::Value* KernelEmitter::conv_column_offset(const GemmPlan& plan, llvm::Value* n) {
  const ir::Shape &xs = dims(plan.b), &out = dims(k_.reduction);
  std::vector<int64_t> stride = int_list(g_.nodes[static_cast<size_t>(plan.node)].attrs, "stride");
  ir::Shape spatial_out(out.begin() + 2, out.end());
  if (plan.merged) spatial_out.insert(spatial_out.begin(), plan.images);  // [image, Ho, Wo]
  Index pos = unflatten(n, spatial_out);
  llvm::Value* off = i64(0);
  if (plan.merged) {  // the image's start in the input
    ir::SymExpr image = 1;
    for (size_t d = 1; d < xs.size(); ++d) image = image * xs[d];
    off = b_.CreateMul(pos[0], size(image));
    pos.erase(pos.begin());
  }
  ir::SymExpr x_stride = 1;
  for (size_t s = xs.size(); s-- > 2;) {
    off = b_.CreateAdd(off, b_.CreateMul(pos[s - 2], size(x_stride * stride[s - 2])));
    x_stride = x_stride * xs[s];
  }
  return off;
}

// B of a gathered conv: B[k, n] = x_flat[base(k) + table[n - jc]], with base(k) the input channel
// and window position of k (dilation included) in batch `batch`. A panel whose NR columns are
// adjacent in the input is one vector load; one whose columns are s apart (a stride-s conv's
// row, s = 2..4) is one vector of NR·s elements, every s-th kept; others take a table read and
// a load per element, for any stride, dilation, output width, and the image boundaries of a
// merged batch. (With equal strides s >= 2 along every spatial dim, a step between adjacent
// valid columns is s within an output row and at least s across rows or images, so a panel
// whose first and last offsets differ by (NR - 1)·s steps by exactly s: its offsets are
// first + j·s. Columns past N have offset 0, a step back.)
void KernelEmitter::gemm_pack_gathered_b(const GemmPlan& plan, bool pairs, const Index& batch, llvm::Value* nc,
                                         llvm::Value* pc, llvm::Value* kc, llvm::Value* table,
                                         llvm::Value* dst) {
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* src = buffers_[static_cast<size_t>(read_arg_.at(plan.b))];
  llvm::Value* panels = b_.CreateUDiv(b_.CreateAdd(nc, i64(plan.nr - 1)), i64(plan.nr));
  // The stride of a strided row's columns, where every spatial stride is the same s in 2..4.
  std::vector<int64_t> strides = int_list(g_.nodes[static_cast<size_t>(plan.node)].attrs, "stride");
  int64_t s = strides.empty() ? 1 : strides[0];
  for (int64_t v : strides) s = v == s ? s : 1;
  if (s > 4) s = 1;
  const ir::SymExpr total = g_.type(plan.b).numel();
  pack_b_rows(plan, pairs, kc, panels, dst, [&](llvm::Value* p, llvm::Value* q, llvm::Value* at) {
    llvm::Value* base = conv_input_base(plan, batch, b_.CreateAdd(pc, p));
    llvm::Value* from = b_.CreateInBoundsGEP(storage_type(ctx_, dtype(plan.b)), src, base);  // loaded widened
    llvm::Value* offsets = b_.CreateInBoundsGEP(b_.getInt64Ty(), table, b_.CreateMul(q, i64(plan.nr)));
    auto offset = [&](int64_t j) {
      return b_.CreateAlignedLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), offsets, static_cast<uint64_t>(j)),
                                  llvm::Align(8));
    };
    // A panel whose columns are adjacent in the input (a stride-1 row, within one image) is
    // one vector load.
    llvm::Value* first = offset(0);
    llvm::Value* span = b_.CreateSub(offset(plan.nr - 1), first);
    llvm::Value* adjacent = b_.CreateICmpEQ(span, i64(plan.nr - 1));
    auto per_element = [&] {
      for (int64_t j = 0; j < plan.nr; ++j) {
        llvm::Value* v = load_widened(dtype(plan.b), from, offset(j), 1);
        b_.CreateAlignedStore(v, b_.CreateConstInBoundsGEP1_64(f32, at, static_cast<uint64_t>(j)), llvm::Align(4));
      }
    };
    if_else(adjacent, [&] {
      b_.CreateAlignedStore(load_widened(dtype(plan.b), from, first, plan.nr), at, llvm::Align(4));
    }, [&] {
      if (s == 1) return per_element();
      // Columns s apart in one row, whose NR·s elements stay in the buffer.
      llvm::Value* strided = b_.CreateAnd(
          b_.CreateICmpEQ(span, i64((plan.nr - 1) * s)),
          b_.CreateICmpSLE(b_.CreateAdd(b_.CreateAdd(base, first), i64(plan.nr * s)), size(total)));
      if_else(strided, [&] {
        std::vector<int> every;
        for (int64_t j = 0; j < plan.nr; ++j) every.push_back(static_cast<int>(j * s));
        llvm::Value* v = load_widened(dtype(plan.b), from, first, plan.nr * s);
        b_.CreateAlignedStore(b_.CreateShuffleVector(v, every), at, llvm::Align(4));
      }, per_element);
    });
  });
}

// void ukernel(i64 kc, const float* a, const float* b, float* c, i64 ldc, i1 first,
//              const float* prefetch, i64 lda, i64 valid_rows, i64 b_stride):
// c[i*ldc + j] (+)= sum_p A(i, p) * B(p, j) for `rows` rows of A and the `panels`·NR columns of
// `panels` adjacent B panels, panel q at b + q·b_stride (B(p, q·NR + j) = b[q·b_stride + p*NR + j]);
// kc >= 1. A(i, p) is a[(i / MR)*lda + p*MR + i % MR] in packed MR-row panels (`rows` may span two
// adjacent panels, lda apart), or with `direct_a` a[min(i, valid_rows - 1)*lda + p]: A read in
// place, row by row (rows past the matrix repeat its last row; their results are never stored).
// Step p also prefetches each panel's prefetch[q·b_stride + p*NR ..) into L2: the caller points
// it at the next B panels, which then arrive while these are in use. rows × panels·NR/lanes
// accumulators stay in registers: 6 × 2 with AVX2 (16 registers); 12 × 2 with AVX-512 (two A and
// two 16-wide B panels per call: 24 of its 32 registers, so that each step's 14 loads feed 24
// FMAs: with 6 × 2, the loads and prefetches alone kept the load ports busy); 3 × 4 with
// SSE/NEON (then two calls per panel). `static_lda` > 0: two A panels read in place whose row
// stride is that constant (lda is then unused): every row is a constant offset from a.
// `b_row` > 0: B's rows are that many floats apart instead of NR (B(p, q·NR + j) =
// b[q·b_stride + p·b_row + j]): a row-major K × N matrix with b_stride = NR (the fused Winograd
// conv's transformed tiles, emit_winograd.cpp).
//
// `pairs` (GemmPlan::b_pairs): B is bf16 in K pairs, B(2s, j) and B(2s + 1, j) the low and high
// halves of the 32-bit word b[q·b_stride + s·NR + j] (b_stride and the prefetch in words), and
// a step takes a pair of K (an odd kc's last pair: its first half only). `widen`: the words'
// halves are widened to f32 by a shift and a mask and multiplied by A's f32 panels as above, in
// the same order (the same numbers). `dot`: A is bf16 read in place (direct_a, lda and the row
// offsets in elements), a row's pair one 32-bit word, and each step is one vdpbf16ps per
// accumulator (its products exact, its sums rounded to f32, bf16 subnormals read as 0).
llvm::Function* KernelEmitter::gemm_microkernel(const GemmPlan& plan, int64_t rows, bool direct_a, int64_t panels,
                                               int64_t static_lda, int64_t b_row, GemmPairs pairs) {
  int64_t lanes = std::min<int64_t>(target_.f32_lanes, plan.nr), nv = plan.nr / lanes * panels;
  const bool dot = pairs == GemmPairs::dot, paired = dot || pairs == GemmPairs::widen, f16 = pairs == GemmPairs::f16;
  AOT_CHECK(rows <= plan.mr || rows == 2 * plan.mr, "a microkernel spans one or two A panels");
  AOT_CHECK(static_lda == 0 || (direct_a && rows > plan.mr), "a static row stride is for two A panels read in place");
  AOT_CHECK(!dot || (direct_a && lanes == 16), "the bf16 dot reads A in place, 16 lanes at a time");
  AOT_CHECK(!paired || b_row == 0, "B in K pairs is in panels (b_row is for Winograd's row-major tiles)");
  std::string name = "aotrace.sgemm." + std::to_string(rows) + "x" + std::to_string(plan.nr * panels) +
                     (direct_a ? ".rows" : "") + (static_lda > 0 ? "." + std::to_string(static_lda) : "") +
                     (b_row > 0 ? ".b" + std::to_string(b_row) : "") + (dot ? ".bf16dot" : paired ? ".pairs" : f16 ? ".f16" : "");
  if (llvm::Function* f = module_.getFunction(name)) return f;
  auto* ptr = b_.getPtrTy();
  auto* i64t = b_.getInt64Ty();
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), {i64t, ptr, ptr, ptr, i64t, b_.getInt1Ty(), ptr, i64t, i64t, i64t, ptr}, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::InternalLinkage, name, module_);
  fn->setDoesNotThrow();
  // Never inlined into a caller without the feature (LLVM's rule), so the CPUID test guards it.
  if (dot && !target_.bf16_dot) fn->addFnAttr("target-features", target_.bf16_dot_features);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx_, "entry", fn));
  llvm::Value *kc = fn->getArg(0), *a = fn->getArg(1), *bp = fn->getArg(2), *c = fn->getArg(3),
              *ldc = fn->getArg(4), *first = fn->getArg(5), *prefetch = fn->getArg(6), *lda = fn->getArg(7),
              *valid_rows = fn->getArg(8), *b_stride = fn->getArg(9), *a_next = fn->getArg(10);
  llvm::Type* f32 = b.getFloatTy();
  llvm::Type* a_elem = dot ? b.getInt16Ty() : f32;  // A's elements (in place: bf16 bits)
  llvm::Type* b_elem = f16 ? b.getInt16Ty() : f32;  // B's (f16 bits; a bf16 pair's word is f32's size)
  auto* halves = llvm::FixedVectorType::get(b.getInt16Ty(), static_cast<unsigned>(lanes));
  auto* vec = llvm::FixedVectorType::get(f32, static_cast<unsigned>(lanes));
  auto* words = llvm::FixedVectorType::get(b.getInt32Ty(), static_cast<unsigned>(lanes));
  // The dot's operands: 32 bf16 (a pair per f32 lane). A's pair is splat as two bf16, not as
  // an i32 bitcast after: LLVM 16's VectorCombine loops forever on that bitcast of a shuffle.
  auto* bf16s = llvm::FixedVectorType::get(b.getBFloatTy(), static_cast<unsigned>(2 * lanes));
  std::vector<int> pair_splat;
  for (int64_t l = 0; l < 2 * lanes; ++l) pair_splat.push_back(static_cast<int>(l % 2));
  auto c64 = [&](int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); };
  llvm::Value* zero = llvm::Constant::getNullValue(vec);
  auto c_at = [&](int64_t i, int64_t j) {
    llvm::Value* row = b.CreateInBoundsGEP(f32, c, b.CreateMul(ldc, c64(i)));
    return b.CreateConstInBoundsGEP1_64(f32, row, static_cast<uint64_t>(j * lanes));
  };
  std::vector<llvm::Value*> init;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < nv; ++j)
      init.push_back(b.CreateSelect(first, zero, b.CreateAlignedLoad(vec, c_at(i, j), llvm::Align(4))));
  std::vector<llvm::Value*> a_rows;  // direct_a: the row pointers
  for (int64_t i = 0; direct_a && rows <= plan.mr && i < rows; ++i) {
    llvm::Value* last = b.CreateSub(valid_rows, c64(1));
    llvm::Value* r = b.CreateSelect(b.CreateICmpSLT(c64(i), last), c64(i), last);
    a_rows.push_back(b.CreateGEP(a_elem, a, b.CreateMul(r, lda)));
  }
  // Where A(i, k) is. Two panels read in place: every row is there (the caller's promise), at
  // a + i·lda: offsets from a few base registers, where 12 row pointers would not all stay in
  // registers.
  auto a_at = [&](int64_t i, llvm::Value* k) -> llvm::Value* {
    if (!direct_a)
      return b.CreateGEP(f32, a, b.CreateAdd(b.CreateMul(k, c64(plan.mr)), b.CreateAdd(b.CreateMul(lda, c64(i / plan.mr)), c64(i % plan.mr))));
    if (static_lda > 0) return b.CreateGEP(a_elem, a, b.CreateAdd(c64(i * static_lda), k));
    if (rows > plan.mr) return b.CreateGEP(a_elem, a, b.CreateAdd(b.CreateMul(lda, c64(i)), k));
    return b.CreateGEP(a_elem, a_rows[static_cast<size_t>(i)], k);
  };
  // One step at p (a K pair where paired; `half`: an odd kc's last, its first element only):
  // the accumulators after it.
  auto step = [&](llvm::Value* p, const std::vector<llvm::Value*>& acc, bool half) {
    std::vector<llvm::Value*> bv;  // per vector: f32, or (paired) words, or (dot) bf16 pairs
    llvm::Value* at0 = b.CreateMul(p, c64(b_row > 0 ? b_row : plan.nr));
    for (int64_t q = 0; q < panels; ++q) {
      llvm::Value* at = q == 0 ? at0 : b.CreateAdd(at0, b.CreateMul(b_stride, c64(q)));
      llvm::Value* brow = b.CreateInBoundsGEP(b_elem, bp, at);
      for (int64_t j = 0; j < plan.nr / lanes; ++j) {
        llvm::Value* from = b.CreateConstInBoundsGEP1_64(b_elem, brow, static_cast<uint64_t>(j * lanes));
        bv.push_back(f16 ? from_storage(b, b.CreateAlignedLoad(halves, from, llvm::Align(2)), ir::DType::f16)
                         : b.CreateAlignedLoad(dot ? bf16s : paired ? words : vec, from, llvm::Align(4)));
      }
      // Not inbounds: the next panel may lie past the end of its buffer (a prefetch never faults).
      llvm::Value* pf = b.CreateGEP(b_elem, prefetch, at);
      b.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr}, {pf, b.getInt32(0), b.getInt32(2), b.getInt32(1)});
    }
    llvm::Value* k = paired ? b.CreateShl(p, 1) : p;  // A's column
    for (int64_t i = 0; !direct_a && i < rows; i += plan.mr) {  // the next A panels too (pre-packed
      // weights stream from memory)
      llvm::Value* pa = b.CreateGEP(f32, a_next, b.CreateAdd(b.CreateMul(k, c64(plan.mr)), b.CreateMul(lda, c64(i / plan.mr))));
      b.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr}, {pa, b.getInt32(0), b.getInt32(2), b.getInt32(1)});
    }
    // widen: the f32 B rows of K steps 2p (the words' low halves), then 2p + 1 (their high
    // ones), each used by every row before the next is made: with 16 registers (AVX2), 12
    // accumulators leave room for one half's B vectors only. Each accumulator adds its two
    // products in K order, as the f32 panels' steps do.
    std::vector<llvm::Value*> next(acc.begin(), acc.end());
    if (pairs == GemmPairs::widen) {
      for (int64_t h = 0; h < (half ? 1 : 2); ++h) {
        std::vector<llvm::Value*> bh;
        for (llvm::Value* w : bv)
          bh.push_back(b.CreateBitCast(h == 0 ? b.CreateShl(w, 16) : b.CreateAnd(w, llvm::ConstantInt::get(words, 0xffff0000u)), vec));
        for (int64_t i = 0; i < rows; ++i) {
          llvm::Value* ai = b.CreateAlignedLoad(f32, a_at(i, h == 0 ? k : b.CreateAdd(k, c64(1))), llvm::Align(4));
          llvm::Value* splat = b.CreateVectorSplat(static_cast<unsigned>(lanes), ai);
          for (int64_t j = 0; j < nv; ++j) {
            size_t s = static_cast<size_t>(i * nv + j);
            next[s] = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec}, {splat, bh[static_cast<size_t>(j)], next[s]});
          }
        }
      }
      return next;
    }
    for (int64_t i = 0; i < rows; ++i) {
      if (dot) {  // A(i, k) and A(i, k + 1) as one word
        llvm::Value* word = half ? b.CreateZExt(b.CreateAlignedLoad(b.getInt16Ty(), a_at(i, k), llvm::Align(2)), b.getInt32Ty())
                                 : b.CreateAlignedLoad(b.getInt32Ty(), a_at(i, k), llvm::Align(2));
        llvm::Value* pair = b.CreateBitCast(word, llvm::FixedVectorType::get(b.getBFloatTy(), 2));
        llvm::Value* splat = b.CreateShuffleVector(pair, pair_splat);
        for (int64_t j = 0; j < nv; ++j) {
          size_t s = static_cast<size_t>(i * nv + j);
          next[s] = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512, {}, {acc[s], bv[static_cast<size_t>(j)], splat});
        }
        continue;
      }
      llvm::Value* splat = b.CreateVectorSplat(static_cast<unsigned>(lanes), b.CreateAlignedLoad(f32, a_at(i, k), llvm::Align(4)));
      for (int64_t j = 0; j < nv; ++j) {
        size_t s = static_cast<size_t>(i * nv + j);
        next[s] = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec}, {splat, bv[static_cast<size_t>(j)], acc[s]});
      }
    }
    return next;
  };
  // The loop over steps (K, or its whole pairs: none where kc is 1), then an odd kc's last pair.
  llvm::Value* steps = paired ? b.CreateLShr(kc, 1) : kc;
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "k", fn);
  auto* after = llvm::BasicBlock::Create(ctx_, "after", fn);
  if (paired) b.CreateCondBr(b.CreateICmpNE(steps, c64(0)), loop, after);
  else b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* p = b.CreatePHI(i64t, 2, "p");
  p->addIncoming(c64(0), pre);
  std::vector<llvm::Value*> acc;
  for (llvm::Value* v : init) {
    acc.push_back(b.CreatePHI(vec, 2));
    llvm::cast<llvm::PHINode>(acc.back())->addIncoming(v, pre);
  }
  std::vector<llvm::Value*> next = step(p, acc, false);
  llvm::Value* p_next = b.CreateNUWAdd(p, c64(1));
  p->addIncoming(p_next, b.GetInsertBlock());
  for (size_t s = 0; s < acc.size(); ++s) llvm::cast<llvm::PHINode>(acc[s])->addIncoming(next[s], b.GetInsertBlock());
  llvm::BasicBlock* loop_end = b.GetInsertBlock();
  llvm::BranchInst* back = b.CreateCondBr(b.CreateICmpULT(p_next, steps), loop, after);
  // Unrolled by 4 (2 for pairs): the loop's own add/compare/branch are spread over 48 FMAs.
  llvm::MDNode* count = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
                                                 llvm::ConstantAsMetadata::get(b.getInt32(pairs == GemmPairs::widen ? 2 : 4))});
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, {nullptr, count});
  loop_id->replaceOperandWith(0, loop_id);
  back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  b.SetInsertPoint(after);
  // The accumulators where control meets: from each incoming block, its values.
  auto merge = [&](const std::vector<std::pair<llvm::BasicBlock*, std::vector<llvm::Value*>>>& from) {
    std::vector<llvm::Value*> out;
    for (size_t s = 0; s < init.size(); ++s) {
      llvm::PHINode* phi = b.CreatePHI(vec, static_cast<unsigned>(from.size()));
      for (const auto& [block, values] : from) phi->addIncoming(values[s], block);
      out.push_back(phi);
    }
    return out;
  };
  std::vector<llvm::Value*> out = paired ? merge({{pre, init}, {loop_end, next}}) : next;
  if (paired) {
    llvm::BasicBlock* whole = b.GetInsertBlock();
    auto* tail = llvm::BasicBlock::Create(ctx_, "odd", fn);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", fn);
    b.CreateCondBr(b.CreateICmpNE(b.CreateAnd(kc, c64(1)), c64(0)), tail, done);
    b.SetInsertPoint(tail);
    std::vector<llvm::Value*> last = step(steps, out, true);
    llvm::BasicBlock* tail_end = b.GetInsertBlock();
    b.CreateBr(done);
    b.SetInsertPoint(done);
    out = merge({{whole, out}, {tail_end, last}});
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < nv; ++j)
      b.CreateAlignedStore(out[static_cast<size_t>(i * nv + j)], c_at(i, j), llvm::Align(4));
  b.CreateRetVoid();
  return fn;
}

// Prefetches into L1 `floats` contiguous elements from index `first` of the output and of
// every f32 input of the output's shape (a residual added in the epilogue). The epilogue runs
// this kEpiloguePrefetchAhead rows ahead: each row of a block (a channel's rows of a conv in
// NCHW, a matmul row of a few hundred columns) starts a new page, where the hardware
// prefetchers stop, so the epilogue waited on every row's first lines (resnet50 at batch 4,
// whose activations are 3-13 MB: 5-8% faster at 1 thread).
void KernelEmitter::prefetch_epilogue(Index first, llvm::Value* floats) {
  const ir::Shape& out = dims(k_.root);
  if (dtype(k_.root) != ir::DType::f32) return;
  for (size_t d = 0; d < out.size(); ++d)
    if (is_one(out[d])) first[d] = i64(0);
  auto lines = [&](ir::ValueId v, int arg, bool write) {
    llvm::Value* at = address(v, arg, first);
    range_loop(i64(0), b_.CreateUDiv(b_.CreateAdd(floats, i64(31)), i64(16)), [&](llvm::Value* l) {
      llvm::Value* p = b_.CreateGEP(b_.getFloatTy(), at, b_.CreateMul(l, i64(16)));
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                         {p, b_.getInt32(write ? 1 : 0), b_.getInt32(3), b_.getInt32(1)});
    });
  };
  lines(k_.root, 0, true);
  for (const auto& [v, arg] : read_arg_)
    if (v != k_.root && dtype(v) == ir::DType::f32 && dims(v) == out) lines(v, arg, false);
}

void KernelEmitter::store_gemm_root(const GemmPlan& plan, Index idx, llvm::Value* sum) {
  const ir::Node& n = g_.nodes[static_cast<size_t>(plan.node)];
  const ir::Shape& out = dims(k_.root);
  for (size_t d = 0; d < out.size(); ++d)
    if (is_one(out[d])) idx[d] = b_.getInt64(0);  // what broadcast() gives every size-1 dim
  if (plan.is_conv && n.operands.size() > 2) sum = b_.CreateFAdd(sum, emit(n.operands[2], Index{idx[1]}));
  memo_.back()[{k_.reduction, idx}] = round_to_type(sum, dtype(k_.reduction));  // f16, bf16
  store(k_.root, 0, idx, emit(k_.root, idx));
}

// Stores the root for rows [ic, ic + mc) and columns [jc, jc + nc) of C, the matmul/conv value
// taken from `tile` (row stride ldc) instead of being recomputed.
void KernelEmitter::gemm_epilogue(const GemmPlan& plan, const Index& batch, llvm::Value* ic,
                                  llvm::Value* mc, llvm::Value* jc, llvm::Value* nc,
                                  llvm::Value* tile, int64_t ldc) {
  const ir::Shape& out = dims(k_.root);
  llvm::Type* f32 = b_.getFloatTy();
  auto finish = [&](const Index& idx, llvm::Value* i, llvm::Value* j) {
    llvm::Value* at = b_.CreateInBoundsGEP(f32, tile, b_.CreateAdd(b_.CreateMul(i, i64(ldc)), j));
    store_gemm_root(plan, idx, b_.CreateAlignedLoad(f32, at, llvm::Align(4)));
  };
  // The row kEpiloguePrefetchAhead ahead (clamped to the last row): its first element.
  auto ahead = [&](llvm::Value* m) {
    return smin(b_.CreateAdd(m, i64(kEpiloguePrefetchAhead)), b_.CreateSub(size(plan.m), i64(1)));
  };
  range_loop(i64(0), mc, [&](llvm::Value* i) {
    llvm::Value* m = b_.CreateAdd(ic, i);
    if (!plan.is_conv) {
      Index first = batch;
      first.push_back(ahead(m));
      first.push_back(jc);
      prefetch_epilogue(first, nc);
      range_loop(i64(0), nc, [&](llvm::Value* j) {
        Index idx = batch;
        idx.push_back(m);
        idx.push_back(b_.CreateAdd(jc, j));
        finish(idx, i, j);
      });
      return;
    }
    // Conv: whole rows per block, so the innermost loop is a static, contiguous output row.
    llvm::Value* rows = b_.CreateUDiv(nc, size(plan.row));
    llvm::Value* first_row = b_.CreateUDiv(jc, size(plan.row));
    // The output index of channel `c`'s row R, but its column: a merged conv's rows run over
    // every image (image R / Ho, its row R % Ho).
    llvm::Value* first_channel = group_rows(plan, batch);
    auto row_index = [&](llvm::Value* row, llvm::Value* c) {
      Index idx = {plan.merged ? b_.CreateUDiv(row, size(out[2])) : batch[0], b_.CreateAdd(first_channel, c)};
      if (out.size() == 4) idx.push_back(plan.merged ? b_.CreateURem(row, size(out[2])) : row);
      return idx;
    };
    Index first = row_index(first_row, ahead(m));
    first.push_back(i64(0));
    prefetch_epilogue(first, b_.CreateMul(rows, size(out.back())));
    range_loop(i64(0), rows, [&](llvm::Value* r) {
      const Index head = row_index(b_.CreateAdd(first_row, r), m);
      row_loop(plan.out_w, [&](llvm::Value* w) {
        Index idx = head;
        idx.push_back(w);
        finish(idx, i, b_.CreateAdd(b_.CreateMul(r, size(plan.row)), w));
      });
    });
  });
}

// The buffer of the packed weight behind `view` (pack_weights' permute/reshape/slice chain):
// [batch..., panels, K, width] f32 (or f16: an f16 matmul's B), or [panels, ⌈K/2⌉, width, 2]
// bf16.
llvm::Value* KernelEmitter::packed_weight(ir::ValueId view, int64_t width, bool pairs, ir::DType type) {
  ir::ValueId v = view;
  while (read_arg_.count(v) == 0) v = producer(v).operands[0];
  std::vector<int64_t> d = static_dims(g_, v);
  const bool ok = pairs ? d.size() == 4 && d[2] == width && d[3] == 2 && dtype(v) == ir::DType::bf16
                        : d.size() >= 3 && d.back() == width && dtype(v) == type;
  AOT_CHECK(ok, "a packed GEMM operand is not a panel weight");
  return buffers_[static_cast<size_t>(read_arg_.at(v))];
}

KernelEmitter::Microkernels KernelEmitter::gemm_microkernels(const GemmPlan& plan, bool direct_a, int64_t static_lda,
                                                             int64_t b_row, GemmPairs pairs) {
  Microkernels mk;
  // Rows per microkernel call: a whole MR panel, or half of it where 6 rows would not fit the
  // registers (4-lane targets: 16 SSE registers).
  mk.rows = target_.f32_lanes == 4 ? plan.mr / 2 : plan.mr;
  // B panels per call (the last panel of an odd count takes the one-panel kernel).
  mk.b_pair = panels_per_call(target_, plan.nr);
  // A panels per call: two where a 16-lane register file holds 12 × 2 accumulators (AVX-512).
  mk.a_pair = target_.f32_lanes >= 16 ? 2 : 1;
  for (int64_t a = 0; a < mk.a_pair; ++a)
    for (int64_t q = 0; q < mk.b_pair; ++q)
      mk.uk[a][q] = gemm_microkernel(plan, mk.rows * (a + 1), direct_a, q + 1, a == 1 ? static_lda : 0, b_row, pairs);
  return mk;
}

llvm::Value* KernelEmitter::ceil_div(llvm::Value* x, int64_t y) {
  return b_.CreateUDiv(b_.CreateAdd(x, i64(y - 1)), i64(y));
}

void KernelEmitter::gemm_block_calls(llvm::Value* m_panels, llvm::Value* n_panels, int64_t a_pair, int64_t b_pair,
                                     const std::function<llvm::Value*(llvm::Value*)>& rows_there,
                                     const std::function<void(llvm::Value*, int64_t, llvm::Value*, int64_t)>& call) {
  // B panels [jr, jr + count) against every A panel of the block, a_pair of them per call where
  // they are there.
  auto against_a = [&](llvm::Value* jr, int64_t count) {
    range_loop(i64(0), ceil_div(m_panels, a_pair), [&](llvm::Value* qa) {
      llvm::Value* ir = b_.CreateMul(qa, i64(a_pair));
      if (a_pair == 1) return call(jr, count, ir, 1);
      llvm::Value* both = b_.CreateICmpULT(b_.CreateAdd(ir, i64(1)), m_panels);
      if (rows_there) both = b_.CreateAnd(both, rows_there(ir));
      if_else(both,
              [&] { call(jr, count, ir, 2); },
              [&] {  // the last panel, or two panels not all of whose rows are there
                call(jr, count, ir, 1);
                llvm::Value* second = b_.CreateAdd(ir, i64(1));
                if_else(b_.CreateICmpULT(second, m_panels), [&] { call(jr, count, second, 1); }, [] {});
              });
    });
  };
  range_loop(i64(0), ceil_div(n_panels, b_pair), [&](llvm::Value* q) {
    llvm::Value* jr = b_.CreateMul(q, i64(b_pair));
    if (b_pair == 1) return against_a(jr, 1);
    if_else(b_.CreateICmpULT(b_.CreateAdd(jr, i64(b_pair - 1)), n_panels),
            [&] { against_a(jr, b_pair); }, [&] { against_a(jr, 1); });
  });
}

// i1 of CPUID leaf 7, sub-leaf 1: EAX bit 5 is AVX512-BF16 (an invalid sub-leaf reads 0). The
// answer is kept in a global of the library (0: not asked yet, 1: no, 2: yes), so that each
// call costs a load: CPUID is slow, and in a virtual machine a trap to the hypervisor.
llvm::Value* KernelEmitter::cpu_has_avx512_bf16() {
  const char* name = "aotrace.has_avx512_bf16";
  llvm::Function* fn = module_.getFunction(name);
  if (fn == nullptr) {
    fn = llvm::Function::Create(llvm::FunctionType::get(b_.getInt1Ty(), false), llvm::Function::InternalLinkage, name,
                                module_);
    auto* known = new llvm::GlobalVariable(module_, b_.getInt8Ty(), false, llvm::GlobalValue::InternalLinkage,
                                           b_.getInt8(0), "aotrace.avx512_bf16");
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx_, "entry", fn));
    auto* ask = llvm::BasicBlock::Create(ctx_, "ask", fn);
    auto* answer = llvm::BasicBlock::Create(ctx_, "answer", fn);
    // Relaxed atomics: threads may ask at once, and all store the same answer.
    auto* state = b.CreateAlignedLoad(b.getInt8Ty(), known, llvm::Align(1));
    state->setAtomic(llvm::AtomicOrdering::Monotonic);
    b.CreateCondBr(b.CreateICmpEQ(state, b.getInt8(0)), ask, answer);
    b.SetInsertPoint(ask);
    auto* regs = llvm::StructType::get(ctx_, {b.getInt32Ty(), b.getInt32Ty(), b.getInt32Ty(), b.getInt32Ty()});
    auto* cpuid = llvm::InlineAsm::get(llvm::FunctionType::get(regs, {b.getInt32Ty(), b.getInt32Ty()}, false), "cpuid",
                                       "={ax},={bx},={cx},={dx},0,2", /*hasSideEffects=*/true);
    llvm::Value* eax = b.CreateExtractValue(b.CreateCall(cpuid, {b.getInt32(7), b.getInt32(1)}), 0);
    llvm::Value* has = b.CreateICmpNE(b.CreateAnd(eax, b.getInt32(1u << 5)), b.getInt32(0));
    llvm::Value* asked = b.CreateSelect(has, b.getInt8(2), b.getInt8(1));
    b.CreateAlignedStore(asked, known, llvm::Align(1))->setAtomic(llvm::AtomicOrdering::Monotonic);
    b.CreateBr(answer);
    b.SetInsertPoint(answer);
    llvm::PHINode* result = b.CreatePHI(b.getInt8Ty(), 2);
    result->addIncoming(state, &fn->getEntryBlock());
    result->addIncoming(asked, ask);
    b.CreateRet(b.CreateICmpEQ(result, b.getInt8(2)));
  }
  return b_.CreateCall(fn);
}

// A GEMM of bf16 K pairs (GemmPlan::b_pairs) takes vdpbf16ps where it can: always on a CPU
// with AVX512-BF16, after CPUID's answer on one that may have it (both paths are emitted), never
// elsewhere. There a pre-packed weight's pairs are widened, and a B packed here is packed as
// f32 panels, which the plain microkernel reads (A's bf16 rows packed as any bf16 A's).
void KernelEmitter::emit_gemm_tasks(const GemmPlan& plan, llvm::Value* begin, llvm::Value* end) {
  if (!plan.b_pairs) return gemm_task_loop(plan, begin, end, plan.b_f16 && !plan.widen_b ? GemmPairs::f16 : GemmPairs::none);
  const GemmPairs other = g_.nodes[static_cast<size_t>(plan.node)].attrs.has("packed_b") ? GemmPairs::widen : GemmPairs::none;
  if (!plan.bf16_dot() || !(target_.bf16_dot || target_.bf16_dot_at_run_time)) return gemm_task_loop(plan, begin, end, other);
  if (target_.bf16_dot) return gemm_task_loop(plan, begin, end, GemmPairs::dot);
  if_else(cpu_has_avx512_bf16(), [&] { gemm_task_loop(plan, begin, end, GemmPairs::dot); },
          [&] { gemm_task_loop(plan, begin, end, other); });
}

void KernelEmitter::gemm_task_loop(const GemmPlan& plan, llvm::Value* begin, llvm::Value* end, GemmPairs pairs) {
  AOT_CHECK(plan.mc % plan.mr == 0 && plan.mt % plan.mc == 0, "GEMM blocks must nest");
  const bool paired = pairs == GemmPairs::widen || pairs == GemmPairs::dot;
  // A pre-packed B's elements: f16 panels' halves, else 32 bits (f32, or a bf16 pair's word).
  llvm::Type* b_elem = pairs == GemmPairs::f16 ? b_.getInt16Ty() : b_.getFloatTy();
  // A read in place: f32 rows, or bf16 rows by the dot.
  const bool direct_a = plan.direct_a || pairs == GemmPairs::dot;
  llvm::Type* a_elem = pairs == GemmPairs::dot ? b_.getInt16Ty() : b_.getFloatTy();
  // The tile's row stride and the B panel's width: NC's bound in whole NR panels.
  int64_t ncp = (plan.nc_bound + plan.nr - 1) / plan.nr * plan.nr;
  llvm::Type* f32 = b_.getFloatTy();
  const ir::Node& node = g_.nodes[static_cast<size_t>(plan.node)];
  // Packing buffers only for operands packed here (not pre-packed weights, not A read in place).
  llvm::Value* ap = node.attrs.has("packed_a") || direct_a ? nullptr : stack_array(f32, plan.mc * plan.kc);
  // An f16 weight's panels (GemmPlan::b_f16) read by many rows (widen_b) are widened into bp
  // once per task and K panel, as a B packed here: converting them in the microkernel repeated
  // that for every pair of A panels (an f16 linear layer of 128 rows 8% slower with F16C, 2.5x
  // with x86-64-v2's integer conversions).
  llvm::Value* f16_panels = plan.widen_b ? packed_weight(plan.b, plan.nr, false, ir::DType::f16) : nullptr;
  const bool b_in_place = node.attrs.has("packed_b") && !plan.widen_b;
  llvm::Value* bp = b_in_place ? nullptr : stack_array(f32, plan.kc * ncp + ncp / plan.nr * kBPanelPad);
  llvm::Value* tile = stack_array(f32, plan.mt * ncp);
  llvm::Value* offsets = plan.gathered ? stack_array(b_.getInt64Ty(), ncp) : nullptr;
  // A read in place at a static row stride: two panels' rows are constant offsets from one
  // pointer. With the stride in a register, LLVM walked the 12 rows with a chain of 11 dependent
  // adds per K step, which took ALU slots from the FMAs.
  int64_t static_lda = 0;
  if (direct_a) {
    const int64_t v = a_row_stride(plan).as_constant().value_or(0);
    if (v > 0 && v * plan.mr * 2 < (int64_t{1} << 28)) static_lda = v;
  }
  const Microkernels mk = gemm_microkernels(plan, direct_a, static_lda, 0, pairs);
  // Weights pre-packed by pack_weights: their panels are read in place, never packed here.
  llvm::Value* packed_a = node.attrs.has("packed_a") ? packed_weight(plan.a, plan.mr) : nullptr;
  llvm::Value* packed_b =
      b_in_place ? packed_weight(plan.b, plan.nr, paired, plan.b_f16 ? ir::DType::f16 : ir::DType::f32) : nullptr;

  // A pre-packed B's K in its rows (words for pairs: ⌈K/2⌉), and a K offset or count in them.
  const ir::SymExpr b_k = paired ? floordiv(plan.k + 1, 2) : plan.k;
  auto b_rows = [&](llvm::Value* k) { return paired ? b_.CreateLShr(b_.CreateAdd(k, i64(1)), 1) : k; };
  const ir::Shape& out = dims(k_.reduction);
  ir::Shape batch_extents(out.begin(), out.end() - (plan.is_conv ? static_cast<std::ptrdiff_t>(out.size() - 1) : 2));
  if (plan.groups > 1) {  // [image, group]; a merged conv's images are in N
    if (plan.merged) batch_extents = {ir::SymExpr(1)};
    batch_extents.push_back(plan.groups);
  }
  auto min = [&](llvm::Value* x, int64_t y) { return b_.CreateSelect(b_.CreateICmpSLT(x, i64(y)), x, i64(y)); };
  // Task t: column block jb (fastest), row block, then the batch index (flat and unflattened).
  struct Task {
    llvm::Value *jb, *batch_flat, *it, *jc, *nc;
    Index batch;
  };
  auto task_at = [&](llvm::Value* t) {
    Task k;
    k.jb = b_.CreateURem(t, size(plan.n_blocks()));
    llvm::Value* rest = b_.CreateUDiv(t, size(plan.n_blocks()));
    k.it = b_.CreateMul(b_.CreateURem(rest, size(plan.m_tasks())), i64(plan.mt));
    k.batch_flat = b_.CreateUDiv(rest, size(plan.m_tasks()));
    k.batch = unflatten(k.batch_flat, batch_extents);
    k.jc = b_.CreateMul(k.jb, size(plan.nc));
    k.nc = smin(b_.CreateSub(size(plan.n), k.jc), size(plan.nc));
    return k;
  };
  range_loop(begin, end, [&](llvm::Value* t) {
    const Task task = task_at(t);
    llvm::Value *batch_flat = task.batch_flat, *it = task.it, *jc = task.jc, *nc = task.nc;
    const Index& batch = task.batch;
    llvm::Value* mt = min(b_.CreateSub(size(plan.m), it), plan.mt);
    llvm::Value* n_panels = ceil_div(nc, plan.nr);
    ir::SymExpr k_panels = floordiv(plan.k + (plan.kc - 1), plan.kc);
    if (plan.gathered) gemm_conv_offsets(plan, jc, ncp, offsets);
    // The task that follows on this thread, whose B source its microkernel calls bring into L2
    // (prefetch_b_source): none after the last, nor where it packs the same B (the next rows).
    llvm::Value* t_next = b_.CreateAdd(t, i64(1));
    const Task next = task_at(t_next);
    llvm::Value* fetch_next = b_.CreateAnd(
        b_.CreateICmpULT(t_next, end),
        b_.CreateOr(b_.CreateICmpNE(next.jb, task.jb), b_.CreateICmpNE(next.batch_flat, batch_flat)));
    const int64_t sub_blocks = plan.mt / plan.mc;
    range_loop(i64(0), size(k_panels), [&](llvm::Value* pi) {
      llvm::Value* pc = b_.CreateMul(pi, i64(plan.kc));
      llvm::Value* kc = min(b_.CreateSub(size(plan.k), pc), plan.kc);
      llvm::Value* first = b_.CreateICmpEQ(pi, i64(0));
      if (plan.wide) gemm_pack_wide_b(plan, paired, batch, jc, nc, pc, kc, bp);
      else if (plan.gathered) gemm_pack_gathered_b(plan, paired, batch, nc, pc, kc, offsets, bp);
      else if (f16_panels) gemm_widen_f16_b(plan, f16_panels, jc, nc, pc, kc, bp);
      else if (!packed_b) gemm_pack(plan, false, batch, jc, nc, pc, kc, bp, paired);
      range_loop(i64(0), ceil_div(mt, plan.mc), [&](llvm::Value* sub) {
        llvm::Value* row0 = b_.CreateMul(sub, i64(plan.mc));  // within the task
        llvm::Value* mc = min(b_.CreateSub(mt, row0), plan.mc);
        if (!packed_a && !direct_a) gemm_pack(plan, true, batch, b_.CreateAdd(it, row0), mc, pc, kc, ap);
        llvm::Value* m_panels = ceil_div(mc, plan.mr);
        // Distance between adjacent B panels: K·NR in a pre-packed weight (in words: also for
        // pairs), KC·NR + pad when packed here.
        llvm::Value* b_stride = packed_b ? b_.CreateMul(size(b_k), i64(plan.nr)) : local_b_stride(b_, b_rows(kc), plan.nr);
        auto b_panel_at = [&](llvm::Value* q) {
          if (!packed_b) return b_.CreateInBoundsGEP(f32, bp, b_.CreateMul(q, b_stride));
          llvm::Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateUDiv(jc, i64(plan.nr)), q), size(b_k)), b_rows(pc));
          return b_.CreateInBoundsGEP(b_elem, packed_b, b_.CreateMul(at, i64(plan.nr)));
        };
        // A panels [ir, ir + a_count) against B panels [jr, jr + count), with one microkernel call.
        auto call = [&](llvm::Value* jr, int64_t count, llvm::Value* ir, int64_t a_count) {
          llvm::Function* uk = mk.uk[a_count - 1][count - 1];
          llvm::Value* m0 = b_.CreateAdd(b_.CreateAdd(it, row0), b_.CreateMul(ir, i64(plan.mr)));  // in C
          // lda: the row stride of A read in place, else the distance between A panels.
          llvm::Value *a_panel, *a_next, *lda, *valid = i64(plan.mr * a_count);
          if (direct_a) {
            a_panel = a_next = a_row_address(plan, batch, m0, pc);
            lda = size(a_row_stride(plan));
            valid = b_.CreateSub(size(plan.m), m0);
          } else if (packed_a) {
            // A pre-packed weight's panel q at K offset pc: weight + (q·K + pc)·MR, in the
            // batch's panels (a matmul's A has the result's batch dims: pack_weights).
            llvm::Value* q = b_.CreateUDiv(m0, i64(plan.mr));
            llvm::Value* panels = size(floordiv(plan.m + (plan.mr - 1), plan.mr));
            if (!plan.is_conv) q = b_.CreateAdd(q, b_.CreateMul(batch_flat, panels));
            else if (plan.groups > 1) q = b_.CreateAdd(q, b_.CreateMul(batch[1], panels));  // the group's
            llvm::Value* at = b_.CreateAdd(b_.CreateMul(q, size(plan.k)), pc);
            a_panel = b_.CreateInBoundsGEP(f32, packed_a, b_.CreateMul(at, i64(plan.mr)));
            lda = b_.CreateMul(size(plan.k), i64(plan.mr));
            a_next = b_.CreateGEP(f32, a_panel, b_.CreateMul(lda, i64(a_count)));
          } else {
            a_panel = b_.CreateInBoundsGEP(f32, ap, b_.CreateMul(b_.CreateMul(ir, kc), i64(plan.mr)));
            lda = b_.CreateMul(kc, i64(plan.mr));
            a_next = b_.CreateGEP(f32, a_panel, b_.CreateMul(lda, i64(a_count)));
          }
          if (!packed_b) {  // call `index` of the task's `calls` on this K panel: its part of the next B
            llvm::Value* pair_rows = ceil_div(m_panels, mk.a_pair);
            llvm::Value* index = b_.CreateAdd(b_.CreateMul(sub, b_.CreateMul(ceil_div(n_panels, mk.b_pair), pair_rows)),
                                              b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(jr, i64(mk.b_pair)), pair_rows),
                                                           b_.CreateUDiv(ir, i64(mk.a_pair))));
            llvm::Value* calls = b_.CreateMul(i64(sub_blocks), b_.CreateMul(ceil_div(n_panels, mk.b_pair), pair_rows));
            if_else(fetch_next, [&] { prefetch_b_source(plan, next.batch, next.jc, next.nc, pc, kc, index, calls); }, [] {});
          }
          llvm::Value* b_panel = b_panel_at(jr);
          // The first A panels' call brings the next B panels (pre-packed weights come from
          // memory); the others prefetch their own B panels, already in L1: a no-op. After
          // the block's last panels come a pre-packed B's first panels of the next K block,
          // or after the last K block those of the next column block (the task that usually
          // follows on this thread): without them every K block began with a miss to memory,
          // which cost bert's GEMMs about a quarter of their time once the weights no longer
          // stayed in cache.
          llvm::Value* next_jr = b_.CreateAdd(jr, i64(count));
          llvm::Value* after_last = b_panel;
          if (packed_b) {
            llvm::Value* next_k = b_.CreateGEP(b_elem, b_panel_at(i64(0)), b_.CreateMul(b_rows(kc), i64(plan.nr)));
            llvm::Value* next_n = b_.CreateGEP(
                b_elem, packed_b, b_.CreateMul(b_.CreateMul(b_.CreateUDiv(b_.CreateAdd(jc, nc), i64(plan.nr)), size(b_k)),
                                            i64(plan.nr)));
            after_last = b_.CreateSelect(b_.CreateICmpSLT(b_.CreateAdd(pc, kc), size(plan.k)), next_k, next_n);
          }
          llvm::Value* prefetch = b_.CreateSelect(
              b_.CreateICmpEQ(ir, i64(0)), b_.CreateSelect(b_.CreateICmpULT(next_jr, n_panels), b_panel_at(next_jr), after_last),
              b_panel);
          llvm::Value* c_row = b_.CreateAdd(row0, b_.CreateMul(ir, i64(plan.mr)));
          llvm::Value* c_at = b_.CreateInBoundsGEP(
              f32, tile, b_.CreateAdd(b_.CreateMul(c_row, i64(ncp)), b_.CreateMul(jr, i64(plan.nr))));
          for (int64_t r0 = 0; r0 < plan.mr * a_count; r0 += mk.rows * a_count) {
            llvm::Value* a_rows = direct_a ? b_.CreateGEP(a_elem, a_panel, b_.CreateMul(lda, i64(r0)))
                                                : b_.CreateConstInBoundsGEP1_64(f32, a_panel, static_cast<uint64_t>(r0));
            llvm::Value* rows_left = b_.CreateSub(valid, i64(r0));
            if (direct_a && r0 > 0) {  // no valid row left: read the panel's first row
              llvm::Value* none = b_.CreateICmpSLT(rows_left, i64(1));
              a_rows = b_.CreateSelect(none, a_panel, a_rows);
              rows_left = b_.CreateSelect(none, i64(1), rows_left);
            }
            b_.CreateCall(uk, {kc, a_rows, b_panel,
                               b_.CreateConstInBoundsGEP1_64(f32, c_at, static_cast<uint64_t>(r0 * ncp)),
                               i64(ncp), first, prefetch, lda, rows_left, b_stride, a_next});
          }
        };
        // Two A panels read in place only where all their rows are there (see gemm_microkernel).
        std::function<llvm::Value*(llvm::Value*)> rows_there;
        if (direct_a)
          rows_there = [&](llvm::Value* ir) {
            llvm::Value* end = b_.CreateAdd(b_.CreateAdd(b_.CreateAdd(it, row0), b_.CreateMul(ir, i64(plan.mr))),
                                            i64(2 * plan.mr));
            return b_.CreateICmpSLE(end, size(plan.m));
          };
        gemm_block_calls(m_panels, n_panels, mk.a_pair, mk.b_pair, rows_there, call);
      });
    });
    gemm_epilogue(plan, batch, it, mt, jc, nc, tile, ncp);
  });
}

}  // namespace aotrace::lowering::cpu
