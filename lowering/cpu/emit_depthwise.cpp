// Depthwise conv kernels (groups > 1, one input channel per group: mobilenet's and
// efficientnet's 3x3 and 5x5 convs), and 2-D max pools (resnet's 3x3 stride-2 pool: the same
// windows, taps combined by max and -inf outside the input), vectorised along the output width:
//
//   per task = `channels` output channels × `rows` output rows of one batch index:
//     for each channel: its kh×kw weights, loaded once and splatted
//       for each group of 4 output rows: the window's input row pointers (clamped; a flag per
//                            row says whether it lies inside the input: vertical zero padding)
//         for each vector of L outputs: the taps unrolled, acc = fma(x, w, acc), for the 4 rows
//                            at once (two partial sums each: 8 independent chains of fma), into
//                            a tile of 4 rows
//         epilogue: for each element of those rows, the kernel's root evaluated with the conv
//                   value taken from the tile (bias, batch-norm, activation, residual add...)
//                   and stored once, as emit_gemm.cpp does from its tile.
//
// A tap of an output vector starting at input column `col` reads L·stride_w contiguous inputs
// from col + kw·dilation_w (for stride 2, the even ones are picked by a shuffle). A vector whose
// window rows and columns all lie inside the input (the interior) uses plain loads; the others
// (the first and last vectors of a row, rows near the top and bottom) load the same span from
// the buffer and replace the lanes outside the input by 0 with a select (a blend): zero padding
// costs no per-element branch and no padded copy of the input (pad_conv_inputs leaves these
// convs alone). Only a vector whose span leaves the buffer itself (the first and last rows of
// the tensor) loads lane by lane from clamped positions. No masked loads: with masks LLVM 16
// could fold to constants, a 16-lane masked load became a plain load on AVX2 (reading the
// padding's neighbours). Lanes past the output width are computed into the tile's slack and
// never stored.
//
// Taken: every conv is_depthwise_conv accepts (f32, 2-D, width stride 1 or 2, at most 64 taps)
// and every f32 2-D max pool with such a window, that is its kernel's reduction, evaluated at
// the root's index. Dynamic dims: batch, H and W
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

// Multiply-adds per task (at the sizes' maxima), and the fewest tasks wanted where the conv
// allows: the runtime groups tasks into a few chunks per thread, so small tasks cost little.
constexpr int64_t kDepthwiseTaskWork = 8192;
constexpr int64_t kDepthwiseMinTasks = 16;
constexpr int64_t kDepthwiseRowGroup = 4;

// A 2-D f32 max pool whose window the depthwise kernel can take: at most 64 taps, width stride
// 1 or 2 (resnet's 3×3 stride-2 pool).
static bool is_depthwise_max_pool(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::OpKind::Pool || n.attrs.s("kind") != "max") return false;
  if (g.type(n.operands[0]).dtype != ir::DType::f32 || g.type(n.results[0]).dtype != ir::DType::f32) return false;
  if (g.type(n.operands[0]).shape.size() != 4) return false;
  std::vector<int64_t> kernel = n.attrs.ints("kernel"), stride = n.attrs.ints("stride");
  return kernel.size() == 2 && kernel[0] * kernel[1] <= 64 && stride.size() == 2 && stride[0] >= 1 &&
         stride[1] >= 1 && stride[1] <= 2;
}

bool KernelEmitter::plan_depthwise(DepthwisePlan& p) const {
  if (k_.reduction < 0 || dims(k_.root) != dims(k_.reduction)) return false;
  const ir::Node& n = producer(k_.reduction);
  p.max_pool = is_depthwise_max_pool(g_, n);
  if (!(p.max_pool || is_depthwise_conv(g_, n)) || read_arg_.count(n.operands[0]) == 0) return false;
  for (const ir::SymExpr& d : dims(k_.reduction))
    if (is_zero(d)) return false;
  p.node = &n;
  p.x = n.operands[0];
  std::vector<int64_t> ws;  // the conv weight's sizes; a pool's window as [C, 1, kh, kw]
  std::vector<int64_t> stride = int_list(n.attrs, "stride"), dilation = {1, 1}, pad;
  if (p.max_pool) {
    std::vector<int64_t> kernel = int_list(n.attrs, "kernel");
    ws = {planned(dims(p.x)[1]), 1, kernel[0], kernel[1]};
    pad = int_list(n.attrs, "padding");
    if (n.attrs.has("dilation")) dilation = int_list(n.attrs, "dilation");
  } else {
    p.w = n.operands[1];
    ws = static_dims(g_, p.w);
    dilation = int_list(n.attrs, "dilation");
    pad = int_list(n.attrs, "pad_low");
  }
  p.kh = ws[2];
  p.kw = ws[3];
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  p.pad_h = pad[0];
  p.pad_w = pad[1];
  p.multiplier = p.max_pool ? 1 : ws[0] / n.attrs.i("groups");
  const ir::Shape& out = dims(k_.reduction);
  p.batches = out[0];
  p.out_c = out[1];
  p.out_h = out[2];
  p.out_w = out[3];
  const int64_t ow = planned(p.out_w), oh = planned(p.out_h), c = ws[0], batches = planned(p.batches);
  // The target's vector, halved while a row would fill at most half of it (7-wide rows: 8 lanes).
  p.lanes = target_.f32_lanes;
  while (p.lanes > 4 && 2 * ow <= p.lanes) p.lanes /= 2;
  p.tile = (ow + p.lanes - 1) / p.lanes * p.lanes;
  // Whole channels per task where a channel is small (7×7 rows), else row blocks of one channel.
  const int64_t per_row = std::max<int64_t>(1, ow * p.kh * p.kw);
  p.rows = std::clamp<int64_t>((kDepthwiseTaskWork + per_row - 1) / per_row, 1, std::max<int64_t>(1, oh));
  p.channels = p.rows < oh ? 1 : std::clamp<int64_t>(kDepthwiseTaskWork / (per_row * std::max<int64_t>(1, oh)), 1, c);
  auto tasks = [&] { return batches * ((c + p.channels - 1) / p.channels) * ((oh + p.rows - 1) / p.rows); };
  while (tasks() < kDepthwiseMinTasks && p.channels > 1) p.channels = (p.channels + 1) / 2;
  while (tasks() < kDepthwiseMinTasks && p.rows > 1) p.rows = (p.rows + 1) / 2;
  // Rows computed together: independent chains of fma (their latency, not the loads, would
  // bound a single row); row blocks in whole groups.
  p.group = std::min<int64_t>(kDepthwiseRowGroup, p.rows);
  if (p.rows < oh) p.rows = (p.rows + p.group - 1) / p.group * p.group;
  return true;
}

std::vector<llvm::Value*> KernelEmitter::depthwise_vectors(const DepthwisePlan& p, llvm::Value* col,
                                                        const std::vector<std::vector<llvm::Value*>>& rows,
                                                        const std::vector<std::vector<llvm::Value*>>& row_ok,
                                                        const std::vector<llvm::Value*>& weights,
                                                        DepthwiseLoads loads) {
  llvm::Type* f32 = b_.getFloatTy();
  const auto lanes = static_cast<unsigned>(p.lanes), wide = static_cast<unsigned>(p.lanes * p.stride_w);
  auto* vec = llvm::FixedVectorType::get(f32, lanes);
  auto* wide_vec = llvm::FixedVectorType::get(f32, wide);
  // What a lane outside the input holds: 0 (zero padding), or -inf for a max pool.
  llvm::Value* zero = p.max_pool ? llvm::ConstantFP::getInfinity(wide_vec, true) : llvm::Constant::getNullValue(wide_vec);
  const ir::SymExpr& width = dims(p.x)[3];
  std::vector<int> pick;  // every stride_w-th input: the outputs' own columns
  for (unsigned j = 0; j < lanes; ++j) pick.push_back(static_cast<int>(j * p.stride_w));
  // Border: which of the `wide` columns from each tap's start lie inside the input (0 <= c < W,
  // one unsigned compare on 32 bits).
  std::vector<llvm::Value*> col_mask;
  if (loads != DepthwiseLoads::interior) {
    std::vector<llvm::Constant*> iota;
    for (unsigned j = 0; j < wide; ++j) iota.push_back(b_.getInt32(j));
    llvm::Value* offsets = llvm::ConstantVector::get(iota);
    llvm::Value* w32 = b_.CreateVectorSplat(wide, b_.CreateTrunc(size(width), b_.getInt32Ty()));
    for (int64_t j = 0; j < p.kw; ++j) {
      llvm::Value* start = b_.CreateTrunc(b_.CreateAdd(col, i64(j * p.dilation_w)), b_.getInt32Ty());
      col_mask.push_back(b_.CreateICmpULT(b_.CreateAdd(b_.CreateVectorSplat(wide, start), offsets), w32));
    }
  }
  // Two partial sums per output row (taps alternating), so that 2·group chains of fma
  // are in flight.
  std::vector<llvm::Value*> out;
  for (size_t r = 0; r < rows.size(); ++r) {
    llvm::Value* init = p.max_pool ? llvm::ConstantFP::getInfinity(vec, true) : llvm::Constant::getNullValue(vec);
    llvm::Value* acc[2] = {init, init};
    int64_t tap = 0;
    for (int64_t i = 0; i < p.kh; ++i) {
      llvm::Value* row = rows[r][static_cast<size_t>(i)];
      llvm::Value* row_mask = loads == DepthwiseLoads::interior ? nullptr : b_.CreateVectorSplat(wide, row_ok[r][static_cast<size_t>(i)]);
      for (int64_t j = 0; j < p.kw; ++j, ++tap) {
        llvm::Value* start = b_.CreateAdd(col, i64(j * p.dilation_w));
        llvm::Value* v;
        if (loads == DepthwiseLoads::interior) {
          v = b_.CreateAlignedLoad(wide_vec, b_.CreateInBoundsGEP(f32, row, start), llvm::Align(4));
        } else {
          if (loads == DepthwiseLoads::in_buffer) {
            // The columns outside the row are elements of the same buffer (the neighbouring
            // rows): loaded, then replaced by 0.
            v = b_.CreateAlignedLoad(wide_vec, b_.CreateGEP(f32, row, start), llvm::Align(4));
          } else {
            v = zero;
            for (unsigned e = 0; e < wide; ++e) {
              llvm::Value* c = clamp(b_.CreateAdd(start, i64(e)), width);
              v = b_.CreateInsertElement(v, b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, row, c), llvm::Align(4)), e);
            }
          }
          v = b_.CreateSelect(b_.CreateAnd(col_mask[static_cast<size_t>(j)], row_mask), v, zero);
        }
        if (p.stride_w > 1) v = b_.CreateShuffleVector(v, pick);
        llvm::Value*& a = acc[tap % 2];
        a = p.max_pool ? emit_max(b_, v, a, ir::DType::f32)  // NaN propagates, as torch's
                       : b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec}, {v, weights[static_cast<size_t>(i * p.kw + j)], a});
      }
    }
    if (p.kh * p.kw == 1) out.push_back(acc[0]);
    else out.push_back(p.max_pool ? emit_max(b_, acc[0], acc[1], ir::DType::f32) : b_.CreateFAdd(acc[0], acc[1]));
  }
  return out;
}

void KernelEmitter::emit_depthwise_tasks(const DepthwisePlan& p, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* f32 = b_.getFloatTy();
  const ir::Node& n = *p.node;
  const ir::Shape &xs = dims(p.x), &out = dims(k_.reduction);
  llvm::Value* tile = stack_array(f32, p.group * p.tile);
  llvm::Value* x = buffers_[static_cast<size_t>(read_arg_.at(p.x))];
  // The reads of a vector starting at input column col: [col, col + span) of each window row.
  const int64_t span = (p.kw - 1) * p.dilation_w + p.lanes * p.stride_w;
  ir::SymExpr total = 1;
  for (const ir::SymExpr& d : xs) total = total * d;
  range_loop(begin, end, [&](llvm::Value* t) {
    llvm::Value* rb = b_.CreateURem(t, size(p.r_blocks()));
    llvm::Value* rest = b_.CreateUDiv(t, size(p.r_blocks()));
    llvm::Value* cb = b_.CreateURem(rest, size(p.c_blocks()));
    llvm::Value* batch = b_.CreateUDiv(rest, size(p.c_blocks()));
    llvm::Value* oh0 = b_.CreateMul(rb, i64(p.rows));
    llvm::Value* oh1 = smin(b_.CreateAdd(oh0, i64(p.rows)), size(p.out_h));
    llvm::Value* c0 = b_.CreateMul(cb, i64(p.channels));
    llvm::Value* c1 = smin(b_.CreateAdd(c0, i64(p.channels)), size(p.out_c));
    range_loop(c0, c1, [&](llvm::Value* co) {
      llvm::Value* ci = p.multiplier == 1 ? co : b_.CreateUDiv(co, i64(p.multiplier));
      llvm::Value* plane = b_.CreateMul(b_.CreateAdd(b_.CreateMul(batch, size(xs[1])), ci), size(xs[2] * xs[3]));
      std::vector<llvm::Value*> weights;
      for (int64_t i = 0; i < p.kh && !p.max_pool; ++i)
        for (int64_t j = 0; j < p.kw; ++j)
          weights.push_back(b_.CreateVectorSplat(static_cast<unsigned>(p.lanes), emit(p.w, Index{co, i64(0), i64(i), i64(j)})));
      // Output rows in groups of `group` (the last group repeats the task's last row).
      llvm::Value* groups = b_.CreateUDiv(b_.CreateAdd(b_.CreateSub(oh1, oh0), i64(p.group - 1)), i64(p.group));
      range_loop(i64(0), groups, [&](llvm::Value* gi) {
        llvm::Value* first = b_.CreateAdd(oh0, b_.CreateMul(gi, i64(p.group)));
        std::vector<std::vector<llvm::Value*>> rows(static_cast<size_t>(p.group)), row_ok(rows.size());
        llvm::Value* all_rows = b_.getTrue();
        llvm::Value *lowest = nullptr, *highest = nullptr;  // offsets of the first and last window rows
        for (int64_t r = 0; r < p.group; ++r) {
          llvm::Value* oh = smin(b_.CreateAdd(first, i64(r)), b_.CreateSub(oh1, i64(1)));
          for (int64_t i = 0; i < p.kh; ++i) {
            llvm::Value* ih = b_.CreateSub(b_.CreateAdd(b_.CreateMul(oh, i64(p.stride_h)), i64(i * p.dilation_h)), i64(p.pad_h));
            llvm::Value* ok = in_range(ih, xs[2]);
            all_rows = b_.CreateAnd(all_rows, ok);
            llvm::Value* off = b_.CreateAdd(plane, b_.CreateMul(clamp(ih, xs[2]), size(xs[3])));
            if (lowest == nullptr) lowest = off;
            highest = off;
            row_ok[static_cast<size_t>(r)].push_back(ok);
            rows[static_cast<size_t>(r)].push_back(b_.CreateInBoundsGEP(f32, x, off));
          }
        }
        llvm::Value* vectors = b_.CreateUDiv(b_.CreateAdd(size(p.out_w), i64(p.lanes - 1)), i64(p.lanes));
        range_loop(i64(0), vectors, [&](llvm::Value* q) {
          llvm::Value* ow0 = b_.CreateMul(q, i64(p.lanes));
          llvm::Value* col = b_.CreateSub(b_.CreateMul(ow0, i64(p.stride_w)), i64(p.pad_w));
          llvm::Value* end_col = b_.CreateAdd(col, i64(span));
          llvm::Value* inside = b_.CreateAnd(all_rows, b_.CreateAnd(b_.CreateICmpSGE(col, i64(0)),
                                                                    b_.CreateICmpSLE(end_col, size(xs[3]))));
          llvm::Value* in_buffer = b_.CreateAnd(b_.CreateICmpSGE(b_.CreateAdd(lowest, col), i64(0)),
                                                b_.CreateICmpSLE(b_.CreateAdd(highest, end_col), size(total)));
          auto compute = [&](DepthwiseLoads loads) {
            std::vector<llvm::Value*> v = depthwise_vectors(p, col, rows, row_ok, weights, loads);
            for (int64_t r = 0; r < p.group; ++r)
              b_.CreateAlignedStore(v[static_cast<size_t>(r)], b_.CreateInBoundsGEP(f32, tile, b_.CreateAdd(ow0, i64(r * p.tile))),
                                    llvm::Align(4));
          };
          if_else(inside, [&] { compute(DepthwiseLoads::interior); }, [&] {
            if_else(in_buffer, [&] { compute(DepthwiseLoads::in_buffer); }, [&] { compute(DepthwiseLoads::clamped); });
          });
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
            memo_.back()[{k_.reduction, idx}] = v;
            store(k_.root, 0, idx, emit(k_.root, idx));
          });
        });
      });
    });
  });
}

}  // namespace aotrace::lowering::cpu
