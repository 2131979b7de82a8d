// The GPU's block-tiled GEMM (TiledGemmPlan, chosen by cuda-plan): matmul and conv kernels as
// the classic shared-memory SGEMM, one thread block per bm × bn tile of C:
//
//   per task (a thread block; batch index, tile row, tile column):
//     every thread zeroes its tm × tn accumulators
//     for each bk-deep step of K:
//       load:    the block's threads copy A[tile rows, step] and B[step, tile columns] into
//                shared memory, K-major (As[k][m], Bs[k][n], rows padded by kTilePad floats),
//                zeros past the edges; consecutive threads walk each operand's unit-stride dim
//       barrier
//       compute: thread (ty, tx) adds As[k][ty·tm ..] ⊗ Bs[k][tx·tn ..] for every k of the step
//                (one tm- and one tn-wide vector load per k: ld.shared.v4)
//       barrier
//     the threads write their accumulators into a bm × bn tile of C in shared memory (the
//     same memory; barrier), then
//     epilogue: the threads walk the tile, consecutive threads on consecutive columns
//               (coalesced stores), evaluating the kernel's root with the matmul/conv value
//               taken from the tile (bias, activation, residual add...), as the CPU's GEMM
//               epilogue does.
//
// Operands are read through gemm_a / gemm_b (emit_gemm.cpp): views, broadcast batch dims,
// fused elementwise producers and a conv's im2col (padding, stride, dilation) cost nothing
// beyond the load.
//
// Grid emulation (cuda/codegen.cpp) runs lane 0 of each block only, so there the body runs the
// block's threads itself, phase by phase: each phase is a loop over the threads, the barriers
// fall between the loops, the shared tiles are a stack array and each thread's accumulators a
// row of a stack array (Triton's interpreter and POCL's work-group loops run barriers alike).
// Test: lowering_tests Cuda.TiledGemm* (emulated against the reference interpreter; PTX through
// ptxas), the e2e models on the fake GPU.
#include "lowering/cpu/kernel_emitter.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace aotrace::lowering::cpu {

void KernelEmitter::emit_tiled_gemm(const TiledGemmPlan& plan, llvm::Value* begin, llvm::Value* end) {
  const GemmPlan& gp = plan.gemm;
  const int64_t threads = plan.threads(), cols = plan.bn / plan.tn, outputs = plan.tm * plan.tn;
  AOT_CHECK(threads == plan_.lanes, "a tiled GEMM's block is its plan's lanes");
  AOT_CHECK(plan.bm % plan.tm == 0 && plan.bn % plan.tn == 0 && plan.bm * plan.bk % threads == 0 &&
                plan.bk * plan.bn % threads == 0 && threads % plan.bm == 0 && threads % plan.bn == 0 &&
                threads % plan.bk == 0 && plan.bm % 4 == 0 && plan.bn % 4 == 0,
            "a tiled GEMM's tiles must split evenly over its threads (and keep rows 16-byte aligned)");
  const int64_t lda = plan.bm + kTilePad, ldb = plan.bn + kTilePad, ldc = plan.bn + kTilePad;
  const int64_t shared_floats = plan.shared_floats();
  // The alignment of a vector of `width` floats at a multiple of its width (up to 16 bytes).
  auto vector_align = [](int64_t width) {
    int64_t align = 4;
    while (align < 16 && width * 4 % (align * 2) == 0) align *= 2;
    return align;
  };
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* zero = llvm::ConstantFP::get(f32, 0.0);
  // Shared memory: As [bk][lda] then Bs [bk][ldb] during the K loop, the C tile [bm][ldc] after
  // it; every row starts 16 bytes aligned (bm, bn and kTilePad are multiples of 4 floats).
  llvm::Value* tiles = nullptr;
  if (target_.nvptx) {
    auto* type = llvm::ArrayType::get(f32, static_cast<uint64_t>(shared_floats));
    auto* shared = new llvm::GlobalVariable(module_, type, false, llvm::GlobalValue::InternalLinkage,
                                            llvm::UndefValue::get(type), k_.symbol + ".tiles", nullptr,
                                            llvm::GlobalValue::NotThreadLocal, /*shared*/ 3);
    shared->setAlignment(llvm::Align(16));
    tiles = shared;
  } else {
    tiles = stack_array(f32, shared_floats);
  }
  auto tile_at = [&](bool a, llvm::Value* k, llvm::Value* i) {
    llvm::Value* base = a ? i64(0) : i64(plan.bk * lda);
    return b_.CreateInBoundsGEP(f32, tiles, b_.CreateAdd(base, b_.CreateAdd(b_.CreateMul(k, i64(a ? lda : ldb)), i)));
  };
  // Accumulators: the thread's (GPU: registers after SROA), or a row per thread (emulation).
  llvm::Value* acc = stack_array(f32, (target_.nvptx ? 1 : threads) * outputs);
  auto acc_at = [&](llvm::Value* tid, int64_t c) {
    llvm::Value* at = target_.nvptx ? i64(c) : b_.CreateAdd(b_.CreateMul(tid, i64(outputs)), i64(c));
    return b_.CreateInBoundsGEP(f32, acc, at);
  };
  // Thread tid's first output row and column within the tile.
  auto origin = [&](llvm::Value* tid) {
    return std::pair{b_.CreateMul(b_.CreateUDiv(tid, i64(cols)), i64(plan.tm)),
                     b_.CreateMul(b_.CreateURem(tid, i64(cols)), i64(plan.tn))};
  };
  // Row i of thread tid's accumulators as a vector of tn floats.
  auto* row_type = llvm::FixedVectorType::get(f32, static_cast<unsigned>(plan.tn));
  auto acc_row = [&](llvm::Value* tid, int64_t i) {
    llvm::Value* v = llvm::UndefValue::get(row_type);
    for (int64_t j = 0; j < plan.tn; ++j)
      v = b_.CreateInsertElement(v, b_.CreateAlignedLoad(f32, acc_at(tid, i * plan.tn + j), llvm::Align(4)),
                                 static_cast<uint64_t>(j));
    return v;
  };
  // A phase: every thread of the block runs `body(tid)`, then (barrier) waits for the others.
  auto phase = [&](bool barrier, const std::function<void(llvm::Value*)>& body) {
    if (!target_.nvptx) {
      range_loop(i64(0), i64(threads), body);
      return;
    }
    memo_.emplace_back();
    body(lane_);
    memo_.pop_back();
    if (barrier) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  };
  // The vector of `width` floats at `at` (aligned to it, up to 16 bytes).
  auto load_vector = [&](llvm::Value* at, int64_t width) {
    auto* type = llvm::FixedVectorType::get(f32, static_cast<unsigned>(width));
    return b_.CreateAlignedLoad(type, at, llvm::Align(static_cast<uint64_t>(vector_align(width))));
  };
  const ir::Shape& out = dims(k_.reduction);
  const size_t batch_rank = gp.is_conv ? 1 : out.size() - 2;
  const ir::Shape batch_extents(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(batch_rank));

  range_loop(begin, end, [&](llvm::Value* t) {
    llvm::Value* jb = b_.CreateURem(t, size(plan.n_tiles()));
    llvm::Value* rest = b_.CreateUDiv(t, size(plan.n_tiles()));
    llvm::Value* ib = b_.CreateURem(rest, size(plan.m_tiles()));
    const Index batch = unflatten(b_.CreateUDiv(rest, size(plan.m_tiles())), batch_extents);
    llvm::Value* m0 = b_.CreateMul(ib, i64(plan.bm));
    llvm::Value* n0 = b_.CreateMul(jb, i64(plan.bn));
    phase(false, [&](llvm::Value* tid) {
      for (int64_t c = 0; c < outputs; ++c) b_.CreateAlignedStore(zero, acc_at(tid, c), llvm::Align(4));
    });
    range_loop(i64(0), size(floordiv(gp.k + (plan.bk - 1), plan.bk)), [&](llvm::Value* step) {
      llvm::Value* k0 = b_.CreateMul(step, i64(plan.bk));
      phase(true, [&](llvm::Value* tid) {
        // The element of A (rows × bk) or B (bk × columns) that copy r of thread tid loads,
        // (k, i) within the step's slices: element tid + r·threads of the slice walked along
        // its fastest dim (bk, bm and bn divide the block, so the fastest index is the same
        // for every copy: a conv's im2col offsets of k are computed once per thread and step).
        auto element = [&](int64_t r, int64_t along, bool k_fastest) {
          const int64_t fastest = k_fastest ? plan.bk : along;
          llvm::Value* f = b_.CreateURem(tid, i64(fastest));
          llvm::Value* slow = b_.CreateAdd(b_.CreateUDiv(tid, i64(fastest)), i64(r * (threads / fastest)));
          return k_fastest ? std::pair{f, slow} : std::pair{slow, f};
        };
        for (int64_t r = 0; r < plan.bm * plan.bk / threads; ++r) {
          auto [k, i] = element(r, plan.bm, !plan.a_m_fastest);
          llvm::Value* m = b_.CreateAdd(m0, i);
          llvm::Value* kk = b_.CreateAdd(k0, k);
          llvm::Value* inside = b_.CreateAnd(in_range(m, gp.m), in_range(kk, gp.k));
          llvm::Value* v = gemm_a(gp, batch, clamp(m, gp.m), clamp(kk, gp.k));
          b_.CreateAlignedStore(b_.CreateSelect(inside, v, zero), tile_at(true, k, i), llvm::Align(4));
        }
        for (int64_t r = 0; r < plan.bk * plan.bn / threads; ++r) {
          auto [k, i] = element(r, plan.bn, plan.b_k_fastest);
          llvm::Value* n = b_.CreateAdd(n0, i);
          llvm::Value* kk = b_.CreateAdd(k0, k);
          llvm::Value* inside = b_.CreateAnd(in_range(n, gp.n), in_range(kk, gp.k));
          llvm::Value* v = gemm_b(gp, batch, clamp(kk, gp.k), clamp(n, gp.n));
          b_.CreateAlignedStore(b_.CreateSelect(inside, v, zero), tile_at(false, k, i), llvm::Align(4));
        }
      });
      phase(true, [&](llvm::Value* tid) {
        auto [row, col] = origin(tid);
        // Row i of the thread's outputs as a vector of tn sums: per k, tm vector multiply-adds
        // of a broadcast A element by B's row (the emulation's SIMD; scalar FMAs on the GPU).
        std::vector<llvm::Value*> sums;
        for (int64_t i = 0; i < plan.tm; ++i) sums.push_back(acc_row(tid, i));
        for (int64_t k = 0; k < plan.bk; ++k) {
          llvm::Value* a = load_vector(tile_at(true, i64(k), row), plan.tm);
          llvm::Value* bv = load_vector(tile_at(false, i64(k), col), plan.tn);
          for (int64_t i = 0; i < plan.tm; ++i) {
            llvm::Value* ai = b_.CreateVectorSplat(static_cast<unsigned>(plan.tn),
                                                   b_.CreateExtractElement(a, static_cast<uint64_t>(i)));
            llvm::Value*& s = sums[static_cast<size_t>(i)];
            s = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {row_type}, {ai, bv, s});
          }
        }
        for (int64_t i = 0; i < plan.tm; ++i)
          for (int64_t j = 0; j < plan.tn; ++j)
            b_.CreateAlignedStore(b_.CreateExtractElement(sums[static_cast<size_t>(i)], static_cast<uint64_t>(j)),
                                  acc_at(tid, i * plan.tn + j), llvm::Align(4));
      });
    });
    // The accumulators into the C tile in shared memory, then the epilogue over it with
    // consecutive threads on consecutive columns (coalesced stores, one copy of its code).
    phase(true, [&](llvm::Value* tid) {
      auto [row, col] = origin(tid);
      for (int64_t i = 0; i < plan.tm; ++i) {
        llvm::Value* at = b_.CreateInBoundsGEP(f32, tiles, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(row, i64(i)), i64(ldc)), col));
        b_.CreateAlignedStore(acc_row(tid, i), at, llvm::Align(static_cast<uint64_t>(vector_align(plan.tn))));
      }
    });
    phase(true, [&](llvm::Value* tid) {
      range_loop(i64(0), i64(plan.bm * plan.bn / threads), [&](llvm::Value* r) {
        llvm::Value* e = b_.CreateAdd(tid, b_.CreateMul(r, i64(threads)));
        llvm::Value* mi = b_.CreateUDiv(e, i64(plan.bn));
        llvm::Value* ni = b_.CreateURem(e, i64(plan.bn));
        llvm::Value* m = b_.CreateAdd(m0, mi);
        llvm::Value* n = b_.CreateAdd(n0, ni);
        if_else(b_.CreateAnd(in_range(m, gp.m), in_range(n, gp.n)), [&] {
          memo_.emplace_back();
          Index idx = batch;
          idx.push_back(m);
          if (gp.is_conv) {
            Index spatial = unflatten(n, ir::Shape(out.begin() + 2, out.end()));
            idx.insert(idx.end(), spatial.begin(), spatial.end());
          } else {
            idx.push_back(n);
          }
          store_gemm_root(gp, idx, b_.CreateAlignedLoad(f32, b_.CreateInBoundsGEP(f32, tiles, b_.CreateAdd(b_.CreateMul(mi, i64(ldc)), ni)),
                                                       llvm::Align(4)));
          memo_.pop_back();
        }, [] {});
      });
    });
  });
}

}  // namespace aotrace::lowering::cpu
