// Depthwise conv kernels (groups > 1, one input channel per group: mobilenet's and
// efficientnet's 3x3 and 5x5 convs), and 2-D max pools (resnet's 3x3 stride-2 pool: the same
// windows, taps combined by max and -inf outside the input), vectorised along the output width:
//
//   per task = `channels` output channels × `rows` output rows of one batch index:
//     fill a scratch of the task's input rows with the padding value (0, or -inf for a pool)
//     for each channel: copy its input rows into the scratch, each row at its padded position
//                       and, for width stride 2, split into its even and odd columns (phase rows)
//       its kh×kw weights, loaded once and splatted
//       for each group of 4 output rows:
//         for each vector of L outputs: the taps unrolled, each one plain load from the scratch
//                       (phase (j·dilation) % stride, offset (j·dilation) / stride) and
//                       acc = fma(x, w, acc), for the 4 rows at once (two partial sums each: 8
//                       independent chains of fma), into a tile of 4 rows
//         epilogue: for each element of those rows, the kernel's root evaluated with the conv
//                   value taken from the tile (bias, batch-norm, activation, residual add...)
//                   and stored once, as emit_gemm.cpp does from its tile.
//
// The scratch makes zero padding, the borders and stride 2 cost nothing in the inner loop: no
// per-lane masks, blends or shuffles there (those made 7- and 14-wide rows, all border, 2-3x
// slower). Its fill is written once per task: each channel's copy writes the same positions, so
// rows outside the input and the padding columns keep it. The copy moves a vector (a shuffle per
// phase at stride 2) at a time, narrowed for narrow rows, the last one overlapping the one before.
// Lanes past the output width are computed into the tile's slack and never stored.
//
// Taken: every conv is_depthwise_conv accepts (f32, f16 or bf16, 2-D, width stride 1 or 2, at
// most 64 taps) and every such 2-D max pool with such a window, that is its kernel's reduction, evaluated at
// the root's index, where the scratch fits kDepthwiseMaxScratch (else the per-element conv
// loops of emit_reductions.cpp, which handle padding too). That choice and the blocking
// (DepthwisePlan) are made before codegen, by plan.cpp. Dynamic dims: batch, H and W
// (and so the output's) may be symbolic; the vector width and the task blocking are chosen from
// the sizes at their maxima, the counts are computed at run time, the tile is sized for the
// output width's bound.
//
// Test: lowering_tests Depthwise.* (max pools: MaxPoolsOverWidths1To33WithCeilModeDilationAndNaN; 3x3 and 5x5, stride 1 and 2, padding 0/1/2, dilation 2,
// widths 1 to 33, channel multiplier 2, bias + ReLU6, residual add, symbolic sizes), Ops.Conv*,
// Dynamic.ConvReluMaxPoolWithSymbolicBatchAndSize, and every model test.
#include "lowering/cpu/kernel_emitter.h"

#include <algorithm>

#include <llvm/IR/Intrinsics.h>

namespace aotrace::lowering::cpu {

void KernelEmitter::depthwise_copy_row(const DepthwisePlan& p, llvm::Value* src, llvm::Value* dst, llvm::Value* count) {
  llvm::Type* f32 = b_.getFloatTy();
  const ir::DType t = dtype(p.x);  // f16/bf16 rows are widened as they are copied
  // Chunks of `wide` columns, `wide / stride_w` per phase: the vector, narrowed for narrow rows
  // (14 columns at stride 2: chunks of 8), so that few columns are copied one by one.
  int64_t wide = p.lanes * p.stride_w;
  while (wide > 2 * p.stride_w && wide > planned(dims(p.x)[3])) wide /= 2;
  // Column c of the input lands at padded position s = c + pad_w: phase s % stride_w, index
  // s / stride_w.
  auto copy_one = [&](llvm::Value* c) {
    llvm::Value* s = b_.CreateAdd(c, i64(p.pad_w));
    llvm::Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateURem(s, i64(p.stride_w)), i64(p.phase_w)),
                                   b_.CreateUDiv(s, i64(p.stride_w)));
    b_.CreateAlignedStore(load_widened(t, src, c, 1), b_.CreateInBoundsGEP(f32, dst, at), llvm::Align(4));
  };
  // A chunk starts where the padded position starts phase 0; each phase's columns are one
  // shuffle of the load (none for stride 1).
  auto copy_chunk = [&](llvm::Value* c) {
    llvm::Value* v = load_widened(t, src, c, wide);
    llvm::Value* index = b_.CreateUDiv(b_.CreateAdd(c, i64(p.pad_w)), i64(p.stride_w));
    for (int64_t phase = 0; phase < p.stride_w; ++phase) {
      llvm::Value* part = v;
      if (p.stride_w > 1) {
        std::vector<int> pick;
        for (int64_t j = 0; j < wide / p.stride_w; ++j) pick.push_back(static_cast<int>(j * p.stride_w + phase));
        part = b_.CreateShuffleVector(v, pick);
      }
      b_.CreateAlignedStore(part, b_.CreateInBoundsGEP(f32, dst, b_.CreateAdd(index, i64(phase * p.phase_w))),
                            llvm::Align(4));
    }
  };
  // [0, start) one by one, whole chunks, then one more chunk ending within stride_w - 1 columns
  // of the end (overlapping the previous one: the same values), the rest one by one.
  const int64_t first = (p.stride_w - p.pad_w % p.stride_w) % p.stride_w;
  llvm::Value* start = smin(i64(first), count);
  llvm::Value* left = b_.CreateSub(count, start);
  llvm::Value* chunks = b_.CreateUDiv(left, i64(wide));
  range_loop(i64(0), start, copy_one);
  range_loop(i64(0), chunks, [&](llvm::Value* q) { copy_chunk(b_.CreateAdd(start, b_.CreateMul(q, i64(wide)))); });
  llvm::Value* done = b_.CreateAdd(start, b_.CreateMul(chunks, i64(wide)));
  llvm::Value* last = b_.CreateAdd(start, b_.CreateMul(b_.CreateUDiv(b_.CreateSub(left, i64(wide)), i64(p.stride_w)),
                                                       i64(p.stride_w)));
  llvm::Value* has_last = b_.CreateAnd(b_.CreateICmpSGE(left, i64(wide)), b_.CreateICmpSLT(done, count));
  if_else(has_last, [&] { copy_chunk(last); }, [] {});
  llvm::Value* end_of_last = b_.CreateSelect(has_last, b_.CreateAdd(last, i64(wide)), done);
  range_loop(end_of_last, count, copy_one);
}

std::vector<llvm::Value*> KernelEmitter::depthwise_vectors(const DepthwisePlan& p, llvm::Value* ow0,
                                                        const std::vector<std::vector<llvm::Value*>>& rows,
                                                        const std::vector<llvm::Value*>& weights) {
  llvm::Type* f32 = b_.getFloatTy();
  auto* vec = llvm::FixedVectorType::get(f32, static_cast<unsigned>(p.lanes));
  // Two partial sums per output row (taps alternating), so that 2·group chains of fma
  // are in flight.
  std::vector<llvm::Value*> out;
  for (size_t r = 0; r < rows.size(); ++r) {
    llvm::Value* init = p.max_pool ? llvm::ConstantFP::getInfinity(vec, true) : llvm::Constant::getNullValue(vec);
    llvm::Value* acc[2] = {init, init};
    int64_t tap = 0;
    for (int64_t i = 0; i < p.kh; ++i)
      for (int64_t j = 0; j < p.kw; ++j, ++tap) {
        // Output column ow0 + l reads padded position (ow0 + l)·stride_w + j·dilation_w.
        const int64_t at = j * p.dilation_w;
        llvm::Value* from = b_.CreateAdd(ow0, i64(at % p.stride_w * p.phase_w + at / p.stride_w));
        llvm::Value* v = b_.CreateAlignedLoad(vec, b_.CreateInBoundsGEP(f32, rows[r][static_cast<size_t>(i)], from),
                                              llvm::Align(4));
        llvm::Value*& a = acc[tap % 2];
        a = p.max_pool ? emit_max(b_, v, a, ir::DType::f32)  // NaN propagates, as torch's
                       : b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec}, {v, weights[static_cast<size_t>(tap)], a});
      }
    if (p.kh * p.kw == 1) out.push_back(acc[0]);
    else out.push_back(p.max_pool ? emit_max(b_, acc[0], acc[1], ir::DType::f32) : b_.CreateFAdd(acc[0], acc[1]));
  }
  return out;
}

void KernelEmitter::emit_depthwise_tasks(const DepthwisePlan& p, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* f32 = b_.getFloatTy();
  const ir::Node& n = g_.nodes[static_cast<size_t>(p.node)];
  const ir::Shape &xs = dims(p.x), &out = dims(k_.reduction);
  llvm::Value* tile = stack_array(f32, p.group * p.tile);
  const int64_t pitch = p.stride_w * p.phase_w;  // floats per scratch row
  llvm::Value* scratch = stack_array(f32, p.in_rows * pitch);
  llvm::Value* x = buffers_[static_cast<size_t>(read_arg_.at(p.x))];
  auto* vec = llvm::FixedVectorType::get(f32, static_cast<unsigned>(p.lanes));
  // What lies outside the input: 0 (zero padding), or -inf for a max pool.
  llvm::Value* outside = p.max_pool ? llvm::ConstantFP::getInfinity(vec, true) : llvm::Constant::getNullValue(vec);
  // The input columns a scratch row holds (the rest of a wide row is never read).
  llvm::Value* columns = smin(size(xs[3]), i64(pitch - p.pad_w));
  range_loop(begin, end, [&](llvm::Value* t) {
    llvm::Value* rb = b_.CreateURem(t, size(p.r_blocks()));
    llvm::Value* rest = b_.CreateUDiv(t, size(p.r_blocks()));
    llvm::Value* cb = b_.CreateURem(rest, size(p.c_blocks()));
    llvm::Value* batch = b_.CreateUDiv(rest, size(p.c_blocks()));
    llvm::Value* oh0 = b_.CreateMul(rb, i64(p.rows));
    llvm::Value* oh1 = smin(b_.CreateAdd(oh0, i64(p.rows)), size(p.out_h));
    llvm::Value* c0 = b_.CreateMul(cb, i64(p.channels));
    llvm::Value* c1 = smin(b_.CreateAdd(c0, i64(p.channels)), size(p.out_c));
    // Scratch row r holds input row ih0 + r; rows outside the input and the padding columns
    // keep the fill: each channel's copy writes the same positions.
    llvm::Value* ih0 = b_.CreateSub(b_.CreateMul(oh0, i64(p.stride_h)), i64(p.pad_h));
    range_loop(i64(0), i64(p.in_rows * pitch / p.lanes), [&](llvm::Value* v) {
      b_.CreateAlignedStore(outside, b_.CreateInBoundsGEP(f32, scratch, b_.CreateMul(v, i64(p.lanes))), llvm::Align(4));
    });
    llvm::Value* r_lo = smin(b_.CreateSelect(b_.CreateICmpSLT(ih0, i64(0)), b_.CreateNeg(ih0), i64(0)), i64(p.in_rows));
    llvm::Value* r_hi = smin(i64(p.in_rows), b_.CreateSub(size(xs[2]), ih0));
    range_loop(c0, c1, [&](llvm::Value* co) {
      llvm::Value* ci = p.multiplier == 1 ? co : b_.CreateUDiv(co, i64(p.multiplier));
      llvm::Value* plane = b_.CreateMul(b_.CreateAdd(b_.CreateMul(batch, size(xs[1])), ci), size(xs[2] * xs[3]));
      range_loop(r_lo, r_hi, [&](llvm::Value* r) {
        llvm::Value* src = b_.CreateInBoundsGEP(storage_type(ctx_, dtype(p.x)), x,
                                                b_.CreateAdd(plane, b_.CreateMul(b_.CreateAdd(ih0, r), size(xs[3]))));
        depthwise_copy_row(p, src, b_.CreateInBoundsGEP(f32, scratch, b_.CreateMul(r, i64(pitch))), columns);
      });
      std::vector<llvm::Value*> weights;
      for (int64_t i = 0; i < p.kh && !p.max_pool; ++i)
        for (int64_t j = 0; j < p.kw; ++j)
          weights.push_back(b_.CreateVectorSplat(static_cast<unsigned>(p.lanes), emit(p.w, Index{co, i64(0), i64(i), i64(j)})));
      // Output rows in groups of `group` (the last group repeats the task's last row).
      llvm::Value* groups = b_.CreateUDiv(b_.CreateAdd(b_.CreateSub(oh1, oh0), i64(p.group - 1)), i64(p.group));
      range_loop(i64(0), groups, [&](llvm::Value* gi) {
        llvm::Value* first = b_.CreateAdd(oh0, b_.CreateMul(gi, i64(p.group)));
        std::vector<std::vector<llvm::Value*>> rows(static_cast<size_t>(p.group));
        for (int64_t r = 0; r < p.group; ++r) {
          llvm::Value* oh = smin(b_.CreateAdd(first, i64(r)), b_.CreateSub(oh1, i64(1)));
          llvm::Value* base = b_.CreateMul(b_.CreateSub(oh, oh0), i64(p.stride_h));
          for (int64_t i = 0; i < p.kh; ++i)
            rows[static_cast<size_t>(r)].push_back(
                b_.CreateInBoundsGEP(f32, scratch, b_.CreateMul(b_.CreateAdd(base, i64(i * p.dilation_h)), i64(pitch))));
        }
        llvm::Value* vectors = b_.CreateUDiv(b_.CreateAdd(size(p.out_w), i64(p.lanes - 1)), i64(p.lanes));
        range_loop(i64(0), vectors, [&](llvm::Value* q) {
          llvm::Value* ow0 = b_.CreateMul(q, i64(p.lanes));
          std::vector<llvm::Value*> v = depthwise_vectors(p, ow0, rows, weights);
          for (int64_t r = 0; r < p.group; ++r)
            b_.CreateAlignedStore(v[static_cast<size_t>(r)], b_.CreateInBoundsGEP(f32, tile, b_.CreateAdd(ow0, i64(r * p.tile))),
                                  llvm::Align(4));
        });
        range_loop(i64(0), smin(i64(p.group), b_.CreateSub(oh1, first)), [&](llvm::Value* r) {
          llvm::Value* oh = b_.CreateAdd(first, r);
          llvm::Value* row_tile = b_.CreateInBoundsGEP(f32, tile, b_.CreateMul(r, i64(p.tile)));
          row_loop(p.out_w, [&](llvm::Value* w) {
            Index idx = {batch, co, oh, w};
            for (size_t d = 0; d < out.size(); ++d)
              if (is_one(out[d])) idx[d] = i64(0);  // what broadcast() gives every size-1 dim
            llvm::Value* v = b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, row_tile, w), llvm::Align(4));
            if (!p.max_pool && n.operands.size() > 2) v = b_.CreateFAdd(v, emit(n.operands[2], Index{idx[1]}));
            // An f16/bf16 conv's sum rounded to its type (a pool's maximum is one of its inputs).
            memo_.back()[{k_.reduction, idx}] = p.max_pool ? v : round_to_type(v, dtype(k_.reduction));
            store(k_.root, 0, idx, emit(k_.root, idx));
          });
        });
      });
    });
  });
}

}  // namespace aotrace::lowering::cpu
