// Winograd F(m×m, 3×3) kernels, m = 2 or 4 (ir/winograd.h, lowering/winograd.cpp), in vectors of
// `lanes` tiles along a row of tiles; n = m + 2 is the input tile's side, P = n² its points:
//
//   winograd_input  (the kernel's root): one task per plane (n, c), c-major, its tile rows th in order
//     (a row's last vector may spill into the next rows: they overwrite it). A row's n input
//     rows are read as two vectors of m·lanes columns each (at the tiles' first column and m
//     further), whose every m-th lane from 0 .. m-1 is a column of the lanes' tiles: d[i][j].
//     BT·d·B is P vectors of adds and multiply-adds (winograd_row), stored along T into a stack
//     buffer of the plane's P rows of V, copied out when the plane is done: P sequential runs,
//     where storing each vector straight into V's P planes (T·C floats apart) bound the kernel
//     (F(2×2): resnet18's 56×56×64: 0.34 → 0.25 ms; 7×7×512: 0.10 → 0.04 ms). A plane too big
//     for the buffer stores straight into V (the last partial vector through a small tile).
//     Columns and rows outside the input read 0: vector loads that stay in the buffer are masked
//     by select; at the buffer's two ends, per lane, clamped.
//   winograd_output (the kernel's reduction, with its elementwise consumers as epilogue): one
//     task per plane (n, o), row by row. The P vectors m[n·a + b] of `lanes` tiles give AT·m·A,
//     the m×m outputs of each tile, interleaved into m output rows in a row tile; then, per row,
//     the root is evaluated with the output taken from the tile (bias, batch norm, activation,
//     residual) and stored once, as in the depthwise kernels. Lanes past the last tile read
//     the buffer's next elements (never stored); at the buffer's end, clamped.
//   fused (a whole conv: the output transform's kernel with its GEMMs and input tiles inlined,
//     fuse.cpp): one task per block of output channels × whole rows of tiles (WinogradPlan).
//     Per step of input channels, the input transform above writes the block's tiles into P
//     row-major B matrices on the stack (a row's last vector runs into the next row, written
//     after it), the GEMM microkernel (emit_gemm.cpp, B read by rows) accumulates the P
//     products with U's pre-packed panels into P tiles, and the output transform above reads
//     the tiles. V and M never reach memory: F(2×2) took resnet50_b4's 56×56×64 layers 6.0 →
//     3.1 ms each at 1 thread, resnet18 15% faster.
// Test: lowering_tests Winograd.* (against the direct conv: sizes that are not whole tiles,
// padding, batch, epilogues, the fused kernel's blocks and steps, F(2×2) and F(4×4); on every
// CPU of expect_on_every_cpu).
#include "ir/winograd.h"
#include "lowering/cpu/kernel_emitter.h"

namespace aotrace::lowering::cpu {

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

llvm::Value* KernelEmitter::winograd_row(const double* coefficients, const std::vector<llvm::Value*>& values) {
  llvm::Value* sum = nullptr;
  for (size_t j = 0; j < values.size(); ++j) {
    const double c = coefficients[j];
    if (c == 0) continue;
    llvm::Value* v = values[j];
    if (sum == nullptr) {
      sum = c == 1 ? v : c == -1 ? b_.CreateFNeg(v) : b_.CreateFMul(llvm::ConstantFP::get(v->getType(), c), v);
    } else if (c == 1 || c == -1) {
      sum = c == 1 ? b_.CreateFAdd(sum, v) : b_.CreateFSub(sum, v);
    } else {
      llvm::Value* coefficient = llvm::ConstantFP::get(v->getType(), c);
      sum = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {v->getType()}, {coefficient, v, sum});
    }
  }
  AOT_CHECK(sum != nullptr, "a Winograd transform row of zeros");
  return sum;
}

void KernelEmitter::winograd_input_tiles(const WinogradPlan& p, llvm::Value* x, llvm::Value* plane, llvm::Value* th,
                                         llvm::Value* tw0,
                                         const std::function<void(const std::vector<llvm::Value*>&)>& use) {
  llvm::Type* f32 = b_.getFloatTy();
  const ir::winograd::Transform& f = ir::winograd::transform(p.tile);
  const int64_t m = f.m, n = f.n;
  const auto L = static_cast<unsigned>(p.lanes);
  const auto width = static_cast<unsigned>(m) * L;  // a row vector: m columns per tile
  auto* wide = llvm::FixedVectorType::get(f32, width);
  const int64_t plane_size = p.in_h * p.in_w, total = p.batches * p.in_channels * plane_size;
  std::vector<llvm::Value*> row_off, row_ok;
  for (int64_t i = 0; i < n; ++i) {
    llvm::Value* ih = b_.CreateSub(b_.CreateAdd(b_.CreateMul(th, i64(m)), i64(i)), i64(p.pad_h));
    row_ok.push_back(in_range(ih, p.in_h));
    row_off.push_back(b_.CreateAdd(b_.CreateMul(plane, i64(plane_size)), b_.CreateMul(clamp(ih, p.in_h), i64(p.in_w))));
  }
  std::vector<uint64_t> iota;
  for (unsigned e = 0; e < width; ++e) iota.push_back(e);
  llvm::Value* lane_cols = llvm::ConstantDataVector::get(ctx_, llvm::ArrayRef<uint64_t>(iota));
  llvm::Value* zero = llvm::Constant::getNullValue(wide);
  llvm::Value* col0 = b_.CreateSub(b_.CreateMul(tw0, i64(m)), i64(p.pad_w));
  // The two vectors of each input row: columns [col0, col0 + m·L) and [col0 + m, col0 + m·L + m)
  // (a tile's columns 0 .. m-1 in the first, m and m + 1 in the second).
  auto row_vectors = [&](bool in_buffer) {
    std::vector<llvm::Value*> rows;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      for (int64_t shift : {int64_t{0}, m}) {
        llvm::Value* col = b_.CreateAdd(col0, i64(shift));
        llvm::Value* r;
        if (in_buffer) {
          r = b_.CreateAlignedLoad(wide, b_.CreateGEP(f32, x, b_.CreateAdd(row_off[i], col)), llvm::Align(4));
          llvm::Value* cols = b_.CreateAdd(b_.CreateVectorSplat(width, col), lane_cols);
          llvm::Value* ok = b_.CreateAnd(b_.CreateICmpSGE(cols, llvm::Constant::getNullValue(cols->getType())),
                                         b_.CreateICmpSLT(cols, b_.CreateVectorSplat(width, i64(p.in_w))));
          ok = b_.CreateAnd(ok, b_.CreateVectorSplat(width, row_ok[i]));
          r = b_.CreateSelect(ok, r, zero);
        } else {
          r = zero;
          for (unsigned e = 0; e < width; ++e) {
            llvm::Value* ce = b_.CreateAdd(col, i64(e));
            llvm::Value* ok = b_.CreateAnd(row_ok[i], in_range(ce, p.in_w));
            llvm::Value* v = b_.CreateAlignedLoad(
                f32, b_.CreateInBoundsGEP(f32, x, b_.CreateAdd(row_off[i], clamp(ce, p.in_w))), llvm::Align(4));
            r = b_.CreateInsertElement(r, b_.CreateSelect(ok, v, llvm::ConstantFP::get(f32, 0.0)), e);
          }
        }
        rows.push_back(r);
      }
    return rows;
  };
  auto transform = [&](bool in_buffer) {
    std::vector<llvm::Value*> rows = row_vectors(in_buffer);
    // d[i][j]: column j of the lanes' tiles in input row i, every m-th lane of a row vector.
    std::vector<std::vector<llvm::Value*>> d(static_cast<size_t>(n));
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      for (int64_t j = 0; j < n; ++j)
        d[i].push_back(b_.CreateShuffleVector(rows[2 * i + static_cast<size_t>(j / m)], lane_mask(p.lanes, j % m, m)));
    // BT·d·B: BT's rows on each input row's columns, then on the rows.
    std::vector<std::vector<llvm::Value*>> cols(static_cast<size_t>(n));  // [b][i]
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      for (size_t b = 0; b < static_cast<size_t>(n); ++b) cols[b].push_back(winograd_row(f.BT[b], d[i]));
    std::vector<llvm::Value*> v;
    for (int64_t a = 0; a < n; ++a)
      for (size_t b = 0; b < static_cast<size_t>(n); ++b) v.push_back(winograd_row(f.BT[a], cols[b]));
    use(v);
  };
  llvm::Value* lowest = b_.CreateAdd(row_off[0], col0);
  llvm::Value* highest = b_.CreateAdd(row_off[static_cast<size_t>(n - 1)], b_.CreateAdd(col0, i64(m * p.lanes + m)));
  llvm::Value* in_buffer = b_.CreateAnd(b_.CreateICmpSGE(lowest, i64(0)), b_.CreateICmpSLE(highest, i64(total)));
  if_else(in_buffer, [&] { transform(true); }, [&] { transform(false); });
}

void KernelEmitter::emit_winograd_input(const WinogradPlan& p, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* f32 = b_.getFloatTy();
  const auto L = static_cast<unsigned>(p.lanes);
  const int64_t T = p.tiles_h * p.tiles_w, P = p.points();
  llvm::Value* x = buffers_[static_cast<size_t>(read_arg_.at(g_.nodes[static_cast<size_t>(p.node)].operands[0]))];
  llvm::Value* v_out = buffers_[0];
  // A plane's P rows of V gathered in a stack buffer and copied out once the plane is done:
  // P sequential runs of T floats instead of P stores of one vector, T floats apart, per
  // vector of tiles (those stores bound the kernel). Planes too big for it store directly,
  // the last partial vector of a row through `tail`.
  const int64_t pitch = T + p.lanes;
  const bool buffered = P * pitch <= kWinogradMaxBuffer;
  llvm::Value* staged = buffered ? stack_array(f32, P * pitch) : nullptr;
  llvm::Value* tail = buffered ? nullptr : stack_array(f32, P * p.lanes);
  // Task c·N + n: consecutive tasks fill one row of V per (a, b) and channel, [n·T, (n+1)·T),
  // so the threads' shares end on whole rows. In n·C + c order two threads wrote the two halves
  // of each row and shared the cache line between (resnet50_b4's 14×14 layer at 2 threads).
  range_loop(begin, end, [&](llvm::Value* task) {
    llvm::Value* c = b_.CreateUDiv(task, i64(p.batches));
    llvm::Value* n = b_.CreateURem(task, i64(p.batches));
    llvm::Value* plane = b_.CreateAdd(b_.CreateMul(n, i64(p.channels)), c);
    range_loop(i64(0), i64(p.tiles_h), [&](llvm::Value* th) {
      llvm::Value* out_base = b_.CreateAdd(b_.CreateMul(n, i64(T)), b_.CreateMul(th, i64(p.tiles_w)));
      range_loop(i64(0), i64(p.vectors), [&](llvm::Value* q) {
        llvm::Value* tw0 = b_.CreateMul(q, i64(p.lanes));
        // A vector past the row's last tile is stored whole where its extra lanes stay in this
        // plane: the later rows, stored afterwards by this task, overwrite them. At the plane's
        // end only the row's own lanes are stored.
        llvm::Value* full = b_.CreateICmpSLE(
            b_.CreateAdd(b_.CreateMul(th, i64(p.tiles_w)), b_.CreateAdd(tw0, i64(p.lanes))), i64(T));
        llvm::Value* first = b_.CreateAdd(out_base, tw0);  // position along N·T
        winograd_input_tiles(p, x, plane, th, tw0, [&](const std::vector<llvm::Value*>& v) {
          if (buffered) {  // the extra lanes of a row's last vector land in the next row, or the slack
            llvm::Value* t0 = b_.CreateAdd(b_.CreateMul(th, i64(p.tiles_w)), tw0);
            for (int64_t ab = 0; ab < P; ++ab)
              b_.CreateAlignedStore(v[static_cast<size_t>(ab)],
                                    b_.CreateInBoundsGEP(f32, staged, b_.CreateAdd(i64(ab * pitch), t0)), llvm::Align(4));
            return;
          }
          if_else(full, [&] {
            for (int64_t ab = 0; ab < P; ++ab) {
              llvm::Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i64(ab * p.channels), c), i64(p.batches * T)), first);
              b_.CreateAlignedStore(v[static_cast<size_t>(ab)], b_.CreateInBoundsGEP(f32, v_out, at), llvm::Align(4));
            }
          }, [&] {
            for (int64_t ab = 0; ab < P; ++ab)
              b_.CreateAlignedStore(v[static_cast<size_t>(ab)], b_.CreateInBoundsGEP(f32, tail, i64(ab * p.lanes)), llvm::Align(4));
            range_loop(i64(0), b_.CreateSub(i64(p.tiles_w), tw0), [&](llvm::Value* e) {
              for (int64_t ab = 0; ab < P; ++ab) {
                llvm::Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i64(ab * p.channels), c), i64(p.batches * T)),
                                               b_.CreateAdd(first, e));
                llvm::Value* s = b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, tail, b_.CreateAdd(i64(ab * p.lanes), e)), llvm::Align(4));
                b_.CreateAlignedStore(s, b_.CreateInBoundsGEP(f32, v_out, at), llvm::Align(4));
              }
            });
          });
        });
      });
    });
    if (buffered) {
      auto* vec = llvm::FixedVectorType::get(f32, L);
      llvm::Value* first = b_.CreateMul(n, i64(T));
      for (int64_t ab = 0; ab < P; ++ab) {
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

void KernelEmitter::winograd_output_tiles(const WinogradPlan& p, const std::vector<llvm::Value*>& mv, llvm::Value* tile,
                                          llvm::Value* tw0) {
  const ir::winograd::Transform& f = ir::winograd::transform(p.tile);
  const auto L = static_cast<unsigned>(p.lanes);
  const int64_t row_tile = p.row_floats();
  // Output element t·m + s of a row: lane t of y[s], in y's concatenation at s·L + t.
  std::vector<int> zip;
  for (unsigned t = 0; t < L; ++t)
    for (int64_t s = 0; s < f.m; ++s) zip.push_back(static_cast<int>(static_cast<unsigned>(s) * L + t));
  std::vector<int> concat;  // two vectors of L lanes as one of 2L
  for (unsigned e = 0; e < 2 * L; ++e) concat.push_back(static_cast<int>(e));
  for (int64_t r = 0; r < f.m; ++r) {
    // AT·m·A: AT's row r on the rows a, then AT's rows on the columns b.
    std::vector<llvm::Value*> rows;
    for (int64_t j = 0; j < f.n; ++j) {
      std::vector<llvm::Value*> column;
      for (int64_t a = 0; a < f.n; ++a) column.push_back(mv[static_cast<size_t>(a * f.n + j)]);
      rows.push_back(winograd_row(f.AT[r], column));
    }
    std::vector<llvm::Value*> y;
    for (int64_t s = 0; s < f.m; ++s) y.push_back(winograd_row(f.AT[s], rows));
    llvm::Value* all = f.m == 2 ? b_.CreateShuffleVector(y[0], y[1], zip)
                                : b_.CreateShuffleVector(b_.CreateShuffleVector(y[0], y[1], concat),
                                                         b_.CreateShuffleVector(y[2], y[3], concat), zip);
    llvm::Value* at = b_.CreateAdd(i64(r * row_tile), b_.CreateMul(tw0, i64(f.m)));
    llvm::Value* dst = b_.CreateInBoundsGEP(b_.getFloatTy(), tile, at);
    b_.CreateAlignedStore(all, dst, llvm::Align(4));
  }
}

void KernelEmitter::winograd_store_rows(const WinogradPlan& p, llvm::Value* n, llvm::Value* o, llvm::Value* th,
                                        llvm::Value* tile) {
  const int64_t m = p.tile, row_tile = p.row_floats();
  const ir::Shape& out = dims(k_.reduction);
  range_loop(i64(0), smin(i64(m), b_.CreateSub(i64(p.out_h), b_.CreateMul(th, i64(m)))), [&](llvm::Value* r) {
    llvm::Value* y = b_.CreateAdd(b_.CreateMul(th, i64(m)), r);
    llvm::Value* row = b_.CreateInBoundsGEP(b_.getFloatTy(), tile, b_.CreateMul(r, i64(row_tile)));
    row_loop(p.out_w, [&](llvm::Value* xw) {
      Index idx = {n, o, y, xw};
      for (size_t d = 0; d < out.size(); ++d)
        if (is_one(out[d])) idx[d] = i64(0);  // what broadcast() gives every size-1 dim
      memo_.back()[{k_.reduction, idx}] =
          b_.CreateAlignedLoad(b_.getFloatTy(), b_.CreateInBoundsGEP(b_.getFloatTy(), row, xw), llvm::Align(4));
      store(k_.root, 0, idx, emit(k_.root, idx));
    });
  });
}

void KernelEmitter::emit_winograd_output(const WinogradPlan& p, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* f32 = b_.getFloatTy();
  const auto L = static_cast<unsigned>(p.lanes);
  auto* vec = llvm::FixedVectorType::get(f32, L);
  const int64_t T = p.tiles_h * p.tiles_w, P = p.points(), total = P * p.channels * p.batches * T;
  llvm::Value* m = buffers_[static_cast<size_t>(read_arg_.at(g_.nodes[static_cast<size_t>(p.node)].operands[0]))];
  llvm::Value* tile = stack_array(f32, p.tile * p.row_floats());
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
          std::vector<llvm::Value*> mv;
          for (int64_t ab = 0; ab < P; ++ab) {
            if (in_buffer) {
              mv.push_back(b_.CreateAlignedLoad(vec, b_.CreateInBoundsGEP(f32, m, at(ab)), llvm::Align(4)));
              continue;
            }
            llvm::Value* v = llvm::Constant::getNullValue(vec);
            for (unsigned e = 0; e < L; ++e) {
              llvm::Value* pos = clamp(b_.CreateAdd(at(ab), i64(e)), total);
              v = b_.CreateInsertElement(v, b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, m, pos), llvm::Align(4)), e);
            }
            mv.push_back(v);
          }
          winograd_output_tiles(p, mv, tile, tw0);
        };
        llvm::Value* in_buffer = b_.CreateICmpSLE(b_.CreateAdd(at(P - 1), i64(p.lanes)), i64(total));
        if_else(in_buffer, [&] { transform(true); }, [&] { transform(false); });
      });
      winograd_store_rows(p, n, o, th, tile);
    });
  });
}

void KernelEmitter::emit_winograd_fused(const WinogradPlan& p, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* f32 = b_.getFloatTy();
  GemmPlan g;  // the microkernels' panel shapes
  g.mr = kPackedMR;
  g.nr = kPackedNR;
  const int64_t C = p.in_channels, O = p.channels, rows_total = p.batches * p.tiles_h, P = p.points();
  const int64_t o_panels = (O + g.mr - 1) / g.mr;  // U's panels per point
  auto* vec = llvm::FixedVectorType::get(f32, static_cast<unsigned>(p.lanes));
  llvm::Value* x = buffers_[static_cast<size_t>(read_arg_.at(p.x))];
  llvm::Value* u = packed_weight(p.u, g.mr);  // [P, ⌈O/MR⌉, C, MR]
  // The P B matrices and tiles, a cache line more than their size apart: at 4 KB multiples
  // (32 × 64 floats) the transform's P stores per vector all fell in one L1 set.
  const int64_t b_pitch = p.kc * p.ldb + 16, c_pitch = p.mt * p.ncp + 16;
  llvm::Value* bt = stack_array(f32, P * b_pitch);
  llvm::Value* ct = stack_array(f32, P * c_pitch + p.lanes);  // + a last vector's lanes past it
  llvm::Value* row_tile = stack_array(f32, p.tile * p.row_floats());
  // The GEMM microkernels, reading B by rows of ldb floats.
  const Microkernels mk = gemm_microkernels(g, false, 0, p.ldb);
  auto* panel = llvm::FixedVectorType::get(f32, static_cast<unsigned>(g.nr));
  range_loop(begin, end, [&](llvm::Value* t) {
    llvm::Value* it = b_.CreateMul(b_.CreateURem(t, i64(p.m_tasks())), i64(p.mt));
    llvm::Value* r0 = b_.CreateMul(b_.CreateUDiv(t, i64(p.m_tasks())), i64(p.block_rows));
    llvm::Value* mt = smin(b_.CreateSub(i64(O), it), i64(p.mt));
    llvm::Value* rows = smin(b_.CreateSub(i64(rows_total), r0), i64(p.block_rows));
    llvm::Value* n_panels = ceil_div(b_.CreateMul(rows, i64(p.tiles_w)), g.nr);
    llvm::Value* m_panels = ceil_div(mt, g.mr);
    // Image n and tile row th of the block's row r.
    auto image_row = [&](llvm::Value* r) {
      llvm::Value* row = b_.CreateAdd(r0, r);
      return std::pair{b_.CreateUDiv(row, i64(p.tiles_h)), b_.CreateURem(row, i64(p.tiles_h))};
    };
    range_loop(i64(0), i64((C + p.kc - 1) / p.kc), [&](llvm::Value* pi) {
      llvm::Value* pc = b_.CreateMul(pi, i64(p.kc));
      llvm::Value* kc = smin(b_.CreateSub(i64(C), pc), i64(p.kc));
      // B[ab] (kc × ldb): row c holds the tiles' point ab of input channel pc + c. The GEMMs read
      // the last panel whole: zeros past the tiles, which the transform then overwrites.
      llvm::Value* last = b_.CreateMul(b_.CreateSub(n_panels, i64(1)), i64(g.nr));
      range_loop(i64(0), kc, [&](llvm::Value* c) {
        // Column `col` of B[ab]'s row c.
        auto b_at = [&](int64_t ab, llvm::Value* col) {
          return b_.CreateInBoundsGEP(f32, bt, b_.CreateAdd(b_.CreateAdd(i64(ab * b_pitch), b_.CreateMul(c, i64(p.ldb))), col));
        };
        for (int64_t ab = 0; ab < P; ++ab)
          b_.CreateAlignedStore(llvm::Constant::getNullValue(panel), b_at(ab, last), llvm::Align(4));
        range_loop(i64(0), rows, [&](llvm::Value* r) {
          auto [n, th] = image_row(r);
          llvm::Value* plane = b_.CreateAdd(b_.CreateMul(n, i64(C)), b_.CreateAdd(pc, c));
          llvm::Value* col = b_.CreateMul(r, i64(p.tiles_w));
          range_loop(i64(0), i64(p.vectors), [&](llvm::Value* q) {
            llvm::Value* tw0 = b_.CreateMul(q, i64(p.lanes));
            // A row's last vector runs into the next row's first tiles, stored after it.
            winograd_input_tiles(p, x, plane, th, tw0, [&](const std::vector<llvm::Value*>& v) {
              for (int64_t ab = 0; ab < P; ++ab)
                b_.CreateAlignedStore(v[static_cast<size_t>(ab)], b_at(ab, b_.CreateAdd(col, tw0)), llvm::Align(4));
            });
          });
        });
      });
      // The P GEMMs: tile[ab] (+)= U[ab][it .. it + mt, pc .. pc + kc] · B[ab].
      llvm::Value* first = b_.CreateICmpEQ(pi, i64(0));
      llvm::Value* lda = i64(C * g.mr);  // between U's panels
      range_loop(i64(0), i64(P), [&](llvm::Value* ab) {
        llvm::Value* a0 = b_.CreateInBoundsGEP(
            f32, u, b_.CreateMul(b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(ab, i64(o_panels)), b_.CreateUDiv(it, i64(g.mr))), i64(C)), pc),
                                 i64(g.mr)));
        llvm::Value* b0 = b_.CreateInBoundsGEP(f32, bt, b_.CreateMul(ab, i64(b_pitch)));
        llvm::Value* c0 = b_.CreateInBoundsGEP(f32, ct, b_.CreateMul(ab, i64(c_pitch)));
        auto call = [&](llvm::Value* jr, int64_t count, llvm::Value* ir, int64_t a_count) {
          llvm::Value* a_panel = b_.CreateInBoundsGEP(f32, a0, b_.CreateMul(ir, lda));
          llvm::Value* a_next = b_.CreateGEP(f32, a_panel, b_.CreateMul(lda, i64(a_count)));
          llvm::Value* b_panel = b_.CreateInBoundsGEP(f32, b0, b_.CreateMul(jr, i64(g.nr)));
          llvm::Value* c_at = b_.CreateInBoundsGEP(
              f32, c0, b_.CreateAdd(b_.CreateMul(b_.CreateMul(ir, i64(g.mr)), i64(p.ncp)), b_.CreateMul(jr, i64(g.nr))));
          for (int64_t r = 0; r < g.mr * a_count; r += mk.rows * a_count)
            b_.CreateCall(mk.uk[a_count - 1][count - 1],
                          {kc, b_.CreateConstInBoundsGEP1_64(f32, a_panel, static_cast<uint64_t>(r)), b_panel,
                           b_.CreateConstInBoundsGEP1_64(f32, c_at, static_cast<uint64_t>(r * p.ncp)), i64(p.ncp), first,
                           b_panel, lda, i64(g.mr * a_count), i64(g.nr), a_next});
        };
        gemm_block_calls(m_panels, n_panels, mk.a_pair, mk.b_pair, nullptr, call);
      });
    });
    // The output transform of every channel's tiles, with the kernel's epilogue.
    range_loop(i64(0), mt, [&](llvm::Value* o) {
      range_loop(i64(0), rows, [&](llvm::Value* r) {
        auto [n, th] = image_row(r);
        range_loop(i64(0), i64(p.vectors), [&](llvm::Value* q) {
          llvm::Value* tw0 = b_.CreateMul(q, i64(p.lanes));
          llvm::Value* at = b_.CreateAdd(b_.CreateMul(o, i64(p.ncp)), b_.CreateAdd(b_.CreateMul(r, i64(p.tiles_w)), tw0));
          std::vector<llvm::Value*> mv;
          for (int64_t ab = 0; ab < P; ++ab)
            mv.push_back(b_.CreateAlignedLoad(vec, b_.CreateInBoundsGEP(f32, ct, b_.CreateAdd(at, i64(ab * c_pitch))), llvm::Align(4)));
          winograd_output_tiles(p, mv, row_tile, tw0);
        });
        winograd_store_rows(p, n, b_.CreateAdd(it, o), th, row_tile);
      });
    });
  });
}

}  // namespace aotrace::lowering::cpu
