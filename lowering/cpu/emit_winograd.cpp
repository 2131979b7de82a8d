// Winograd F(2×2, 3×3) kernels (ir/winograd.h, lowering/winograd.cpp), in vectors of `lanes`
// tiles along a row of tiles:
//
//   winograd_input  (the kernel's root): one task per plane (n, c), c-major, its tile rows th in order
//     (a row's last vector may spill into the next rows: they overwrite it). A row's four
//     input rows are read as two vectors of 2·lanes columns each (at the tiles' first column and
//     two further), split into even and odd columns: d[i][j] for the lanes' tiles. BT·d·B is 16
//     vectors of adds, stored along T into a stack buffer of the plane's 16 rows of V, copied
//     out when the plane is done: 16 sequential runs, where storing each vector straight into
//     V's 16 planes (T·C floats apart) bound the kernel (resnet18's 56×56×64: 0.34 → 0.25 ms;
//     7×7×512: 0.10 → 0.04 ms). A plane too big for the buffer stores straight into V (the last
//     partial vector through a small tile). Columns and rows outside the input read 0: vector
//     loads that stay in the buffer are masked by select; at the buffer's two ends, per lane,
//     clamped.
//   winograd_output (the kernel's reduction, with its elementwise consumers as epilogue): one
//     task per plane (n, o), row by row. The 16 vectors m[4a + b] of `lanes` tiles give AT·m·A, the 2×2
//     outputs of each tile, interleaved into two output rows in a row tile; then, per row, the
//     root is evaluated with the output taken from the tile (bias, batch norm, activation,
//     residual) and stored once, as in the depthwise kernels. Lanes past the last tile read
//     the buffer's next elements (never stored); at the buffer's end, clamped.
// Test: lowering_tests Winograd.* (against the direct conv: odd and even sizes, padding,
// batch, epilogues; on every CPU of expect_on_every_cpu).
#include "ir/winograd.h"
#include "lowering/cpu/kernel_emitter.h"

namespace aotrace::lowering::cpu {

bool KernelEmitter::plan_winograd(WinogradPlan& p) const {
  if (k_.reduction < 0) return false;
  const ir::Node& n = producer(k_.reduction);
  if (n.op != ir::OpKind::WinogradInput && n.op != ir::OpKind::WinogradOutput) return false;
  p.node = &n;
  p.input = n.op == ir::OpKind::WinogradInput;
  std::vector<int64_t> out = int_list(n.attrs, "out");
  p.out_h = out[0];
  p.out_w = out[1];
  p.tiles_h = ir::winograd::tiles(p.out_h);
  p.tiles_w = ir::winograd::tiles(p.out_w);
  // Vectors no wider than a row of tiles needs (at least 4 lanes): 7×7 outputs (4 tiles a row)
  // use 4 lanes, not 16.
  p.lanes = 4;
  while (p.lanes < target_.f32_lanes && p.lanes < p.tiles_w) p.lanes *= 2;
  p.vectors = (p.tiles_w + p.lanes - 1) / p.lanes;
  std::vector<int64_t> in = static_dims(g_, n.operands[0]);
  if (p.input) {
    std::vector<int64_t> pad = int_list(n.attrs, "pad_low");
    p.batches = in[0];
    p.channels = in[1];
    p.in_h = in[2];
    p.in_w = in[3];
    p.pad_h = pad[0];
    p.pad_w = pad[1];
  } else {
    p.channels = in[1];
    p.batches = in[2] / (p.tiles_h * p.tiles_w);
  }
  return true;
}

namespace {

// Floats of V staged per task at most (128 KB of stack, as much as a GEMM tile).
constexpr int64_t kWinogradMaxBuffer = 32 * 1024;

// Lanes first, first + step, ...: a shuffle mask.
std::vector<int> lane_mask(int64_t count, int64_t first, int64_t step) {
  std::vector<int> m;
  for (int64_t e = 0; e < count; ++e) m.push_back(static_cast<int>(first + e * step));
  return m;
}

}  // namespace

void KernelEmitter::emit_winograd_input(const WinogradPlan& p, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* f32 = b_.getFloatTy();
  const auto L = static_cast<unsigned>(p.lanes);
  auto* wide = llvm::FixedVectorType::get(f32, 2 * L);
  const int64_t T = p.tiles_h * p.tiles_w, plane = p.in_h * p.in_w, total = p.batches * p.channels * plane;
  llvm::Value* x = buffers_[static_cast<size_t>(read_arg_.at(p.node->operands[0]))];
  llvm::Value* v_out = buffers_[0];
  // A plane's 16 rows of V gathered in a stack buffer and copied out once the plane is done:
  // 16 sequential runs of T floats instead of 16 stores of one vector, T floats apart, per
  // vector of tiles (those stores bound the kernel). Planes too big for it store directly,
  // the last partial vector of a row through `tail`.
  const int64_t pitch = T + p.lanes;
  const bool buffered = 16 * pitch <= kWinogradMaxBuffer;
  llvm::Value* staged = buffered ? stack_array(f32, 16 * pitch) : nullptr;
  llvm::Value* tail = buffered ? nullptr : stack_array(f32, 16 * p.lanes);
  std::vector<uint64_t> iota;
  for (unsigned e = 0; e < 2 * L; ++e) iota.push_back(e);
  llvm::Value* lane_cols = llvm::ConstantDataVector::get(ctx_, llvm::ArrayRef<uint64_t>(iota));
  llvm::Value* zero = llvm::Constant::getNullValue(wide);
  // Task c·N + n: consecutive tasks fill one row of V per (a, b) and channel, [n·T, (n+1)·T),
  // so the threads' shares end on whole rows. In n·C + c order two threads wrote the two halves
  // of each row and shared the cache line between (resnet50_b4's 14×14 layer at 2 threads).
  range_loop(begin, end, [&](llvm::Value* task) {
    llvm::Value* c = b_.CreateUDiv(task, i64(p.batches));
    llvm::Value* n = b_.CreateURem(task, i64(p.batches));
    llvm::Value* nc = b_.CreateAdd(b_.CreateMul(n, i64(p.channels)), c);
    range_loop(i64(0), i64(p.tiles_h), [&](llvm::Value* th) {
    std::vector<llvm::Value*> row_off, row_ok;
    for (int64_t i = 0; i < 4; ++i) {
      llvm::Value* ih = b_.CreateSub(b_.CreateAdd(b_.CreateMul(th, i64(2)), i64(i)), i64(p.pad_h));
      row_ok.push_back(in_range(ih, p.in_h));
      row_off.push_back(b_.CreateAdd(b_.CreateMul(nc, i64(plane)), b_.CreateMul(clamp(ih, p.in_h), i64(p.in_w))));
    }
    llvm::Value* out_base = b_.CreateAdd(b_.CreateMul(n, i64(T)), b_.CreateMul(th, i64(p.tiles_w)));
    range_loop(i64(0), i64(p.vectors), [&](llvm::Value* q) {
      llvm::Value* tw0 = b_.CreateMul(q, i64(p.lanes));
      llvm::Value* col0 = b_.CreateSub(b_.CreateMul(tw0, i64(2)), i64(p.pad_w));
      // The two vectors of each input row: columns [col0, col0 + 2L) and [col0 + 2, col0 + 2L + 2).
      auto row_vectors = [&](bool in_buffer) {
        std::vector<llvm::Value*> rows;
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t shift : {0, 2}) {
            llvm::Value* col = b_.CreateAdd(col0, i64(shift));
            llvm::Value* r;
            if (in_buffer) {
              r = b_.CreateAlignedLoad(wide, b_.CreateGEP(f32, x, b_.CreateAdd(row_off[static_cast<size_t>(i)], col)), llvm::Align(4));
              llvm::Value* cols = b_.CreateAdd(b_.CreateVectorSplat(2 * L, col), lane_cols);
              llvm::Value* ok = b_.CreateAnd(b_.CreateICmpSGE(cols, llvm::Constant::getNullValue(cols->getType())),
                                             b_.CreateICmpSLT(cols, b_.CreateVectorSplat(2 * L, i64(p.in_w))));
              ok = b_.CreateAnd(ok, b_.CreateVectorSplat(2 * L, row_ok[static_cast<size_t>(i)]));
              r = b_.CreateSelect(ok, r, zero);
            } else {
              r = zero;
              for (unsigned e = 0; e < 2 * L; ++e) {
                llvm::Value* ce = b_.CreateAdd(col, i64(e));
                llvm::Value* ok = b_.CreateAnd(row_ok[static_cast<size_t>(i)], in_range(ce, p.in_w));
                llvm::Value* v = b_.CreateAlignedLoad(
                    f32, b_.CreateInBoundsGEP(f32, x, b_.CreateAdd(row_off[static_cast<size_t>(i)], clamp(ce, p.in_w))), llvm::Align(4));
                r = b_.CreateInsertElement(r, b_.CreateSelect(ok, v, llvm::ConstantFP::get(f32, 0.0)), e);
              }
            }
            rows.push_back(r);
          }
        return rows;
      };
      auto transform = [&](bool in_buffer) {
        std::vector<llvm::Value*> rows = row_vectors(in_buffer);
        const std::vector<int> even = lane_mask(p.lanes, 0, 2), odd = lane_mask(p.lanes, 1, 2);
        // d[i][j]: column j of the lanes' tiles in input row i.
        llvm::Value* d[4][4];
        for (size_t i = 0; i < 4; ++i) {
          d[i][0] = b_.CreateShuffleVector(rows[2 * i], even);
          d[i][1] = b_.CreateShuffleVector(rows[2 * i], odd);
          d[i][2] = b_.CreateShuffleVector(rows[2 * i + 1], even);
          d[i][3] = b_.CreateShuffleVector(rows[2 * i + 1], odd);
        }
        // BT·d·B: rows of BT are (d0 - d2, d1 + d2, d2 - d1, d1 - d3), on the columns, then rows.
        auto bt = [&](llvm::Value* v0, llvm::Value* v1, llvm::Value* v2, llvm::Value* v3, int a) {
          switch (a) {
            case 0: return b_.CreateFSub(v0, v2);
            case 1: return b_.CreateFAdd(v1, v2);
            case 2: return b_.CreateFSub(v2, v1);
            default: return b_.CreateFSub(v1, v3);
          }
        };
        llvm::Value* cols[4][4];
        for (size_t i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) cols[i][j] = bt(d[i][0], d[i][1], d[i][2], d[i][3], j);
        std::vector<llvm::Value*> v;
        for (int a = 0; a < 4; ++a)
          for (size_t j = 0; j < 4; ++j) v.push_back(bt(cols[0][j], cols[1][j], cols[2][j], cols[3][j], a));
        return v;
      };
      llvm::Value* lowest = b_.CreateAdd(row_off[0], col0);
      llvm::Value* highest = b_.CreateAdd(row_off[3], b_.CreateAdd(col0, i64(2 * p.lanes + 2)));
      llvm::Value* in_buffer = b_.CreateAnd(b_.CreateICmpSGE(lowest, i64(0)), b_.CreateICmpSLE(highest, i64(total)));
      // A vector past the row's last tile is stored whole where its extra lanes stay in this
      // plane: the later rows, stored afterwards by this task, overwrite them. At the plane's
      // end only the row's own lanes are stored.
      llvm::Value* full = b_.CreateICmpSLE(b_.CreateAdd(b_.CreateMul(th, i64(p.tiles_w)), b_.CreateAdd(tw0, i64(p.lanes))),
                                           i64(T));
      llvm::Value* first = b_.CreateAdd(out_base, tw0);  // position along N·T
      auto store_all = [&](const std::vector<llvm::Value*>& v) {
        if (buffered) {  // the extra lanes of a row's last vector land in the next row, or the slack
          llvm::Value* t0 = b_.CreateAdd(b_.CreateMul(th, i64(p.tiles_w)), tw0);
          for (int64_t ab = 0; ab < 16; ++ab)
            b_.CreateAlignedStore(v[static_cast<size_t>(ab)],
                                  b_.CreateInBoundsGEP(f32, staged, b_.CreateAdd(i64(ab * pitch), t0)), llvm::Align(4));
          return;
        }
        if_else(full, [&] {
          for (int64_t ab = 0; ab < 16; ++ab) {
            llvm::Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i64(ab * p.channels), c), i64(p.batches * T)), first);
            b_.CreateAlignedStore(v[static_cast<size_t>(ab)], b_.CreateInBoundsGEP(f32, v_out, at), llvm::Align(4));
          }
        }, [&] {
          for (int64_t ab = 0; ab < 16; ++ab)
            b_.CreateAlignedStore(v[static_cast<size_t>(ab)], b_.CreateInBoundsGEP(f32, tail, i64(ab * p.lanes)), llvm::Align(4));
          range_loop(i64(0), b_.CreateSub(i64(p.tiles_w), tw0), [&](llvm::Value* e) {
            for (int64_t ab = 0; ab < 16; ++ab) {
              llvm::Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i64(ab * p.channels), c), i64(p.batches * T)),
                                             b_.CreateAdd(first, e));
              llvm::Value* s = b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, tail, b_.CreateAdd(i64(ab * p.lanes), e)), llvm::Align(4));
              b_.CreateAlignedStore(s, b_.CreateInBoundsGEP(f32, v_out, at), llvm::Align(4));
            }
          });
        });
      };
      if_else(in_buffer, [&] { store_all(transform(true)); }, [&] { store_all(transform(false)); });
    });
    });
    if (buffered) {
      auto* vec = llvm::FixedVectorType::get(f32, L);
      llvm::Value* first = b_.CreateMul(n, i64(T));
      for (int64_t ab = 0; ab < 16; ++ab) {
        llvm::Value* row = b_.CreateInBoundsGEP(
            f32, v_out, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i64(ab * p.channels), c), i64(p.batches * T)), first));
        llvm::Value* from = b_.CreateConstInBoundsGEP1_64(f32, staged, static_cast<uint64_t>(ab * pitch));
        range_loop(i64(0), i64(T / p.lanes), [&](llvm::Value* q) {
          llvm::Value* at = b_.CreateMul(q, i64(p.lanes));
          b_.CreateAlignedStore(b_.CreateAlignedLoad(vec, b_.CreateInBoundsGEP(f32, from, at), llvm::Align(4)),
                                b_.CreateInBoundsGEP(f32, row, at), llvm::Align(4));
        });
        for (int64_t e = T / p.lanes * p.lanes; e < T; ++e)
          b_.CreateAlignedStore(b_.CreateAlignedLoad(f32, b_.CreateConstInBoundsGEP1_64(f32, from, static_cast<uint64_t>(e)), llvm::Align(4)),
                                b_.CreateConstInBoundsGEP1_64(f32, row, static_cast<uint64_t>(e)), llvm::Align(4));
      }
    }
  });
}

void KernelEmitter::emit_winograd_output(const WinogradPlan& p, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* f32 = b_.getFloatTy();
  const auto L = static_cast<unsigned>(p.lanes);
  auto* vec = llvm::FixedVectorType::get(f32, L);
  const int64_t T = p.tiles_h * p.tiles_w, total = 16 * p.channels * p.batches * T;
  const int64_t row_tile = 2 * p.lanes * p.vectors;
  const ir::Shape& out = dims(k_.reduction);
  llvm::Value* m = buffers_[static_cast<size_t>(read_arg_.at(p.node->operands[0]))];
  llvm::Value* tile = stack_array(f32, 2 * row_tile);
  range_loop(begin, end, [&](llvm::Value* no) {  // n·O + o
    llvm::Value* o = b_.CreateURem(no, i64(p.channels));
    llvm::Value* n = b_.CreateUDiv(no, i64(p.channels));
    range_loop(i64(0), i64(p.tiles_h), [&](llvm::Value* th) {
    llvm::Value* row_base = b_.CreateAdd(b_.CreateMul(n, i64(T)), b_.CreateMul(th, i64(p.tiles_w)));
    range_loop(i64(0), i64(p.vectors), [&](llvm::Value* q) {
      llvm::Value* tw0 = b_.CreateMul(q, i64(p.lanes));
      llvm::Value* first = b_.CreateAdd(row_base, tw0);
      auto at = [&](int64_t ab) {
        return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i64(ab * p.channels), o), i64(p.batches * T)), first);
      };
      auto transform = [&](bool in_buffer) {
        llvm::Value* mv[16];
        for (int64_t ab = 0; ab < 16; ++ab) {
          if (in_buffer) {
            mv[ab] = b_.CreateAlignedLoad(vec, b_.CreateInBoundsGEP(f32, m, at(ab)), llvm::Align(4));
            continue;
          }
          llvm::Value* v = llvm::Constant::getNullValue(vec);
          for (unsigned e = 0; e < L; ++e) {
            llvm::Value* pos = clamp(b_.CreateAdd(at(ab), i64(e)), total);
            v = b_.CreateInsertElement(v, b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, m, pos), llvm::Align(4)), e);
          }
          mv[ab] = v;
        }
        // AT·m·A: rows of AT are (m0 + m1 + m2, m1 - m2 - m3), on the rows a, then columns b.
        auto at_row = [&](llvm::Value* v0, llvm::Value* v1, llvm::Value* v2, llvm::Value* v3, int r) {
          return r == 0 ? b_.CreateFAdd(b_.CreateFAdd(v0, v1), v2) : b_.CreateFSub(b_.CreateFSub(v1, v2), v3);
        };
        for (int r = 0; r < 2; ++r) {
          llvm::Value* rows[4];
          for (int j = 0; j < 4; ++j) rows[j] = at_row(mv[j], mv[4 + j], mv[8 + j], mv[12 + j], r);
          llvm::Value* y0 = at_row(rows[0], rows[1], rows[2], rows[3], 0);
          llvm::Value* y1 = at_row(rows[0], rows[1], rows[2], rows[3], 1);
          std::vector<int> zip;
          for (unsigned e = 0; e < L; ++e) zip.insert(zip.end(), {static_cast<int>(e), static_cast<int>(L + e)});
          llvm::Value* both = b_.CreateShuffleVector(y0, y1, zip);
          llvm::Value* dst = b_.CreateInBoundsGEP(f32, tile, b_.CreateAdd(i64(r * row_tile), b_.CreateMul(tw0, i64(2))));
          b_.CreateAlignedStore(both, dst, llvm::Align(4));
        }
      };
      llvm::Value* in_buffer = b_.CreateICmpSLE(b_.CreateAdd(at(15), i64(p.lanes)), i64(total));
      if_else(in_buffer, [&] { transform(true); }, [&] { transform(false); });
    });
    range_loop(i64(0), smin(i64(2), b_.CreateSub(i64(p.out_h), b_.CreateMul(th, i64(2)))), [&](llvm::Value* r) {
      llvm::Value* y = b_.CreateAdd(b_.CreateMul(th, i64(2)), r);
      llvm::Value* row = b_.CreateInBoundsGEP(f32, tile, b_.CreateMul(r, i64(row_tile)));
      row_loop(p.out_w, [&](llvm::Value* xw) {
        Index idx = {n, o, y, xw};
        for (size_t d = 0; d < out.size(); ++d)
          if (is_one(out[d])) idx[d] = i64(0);  // what broadcast() gives every size-1 dim
        memo_.back()[{k_.reduction, idx}] =
            b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, row, xw), llvm::Align(4));
        store(k_.root, 0, idx, emit(k_.root, idx));
      });
    });
    });
  });
}

}  // namespace aotrace::lowering::cpu
