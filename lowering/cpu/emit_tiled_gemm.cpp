// The GPU's block-tiled GEMM (TiledGemmPlan, chosen by cuda-plan): matmul and conv kernels as
// the classic shared-memory SGEMM, one thread block per bm × bn tile of C:
//
//   per task (a thread block; batch index, tile row, tile column):
//     every thread zeroes its tm × tn accumulators
//     for each bk-deep step of K (stages = 1; with 2 see below):
//       load:    the block's threads copy A[tile rows, step] and B[step, tile columns] into
//                shared memory, K-major (As[k][m], Bs[k][n], rows padded by `pad` floats),
//                zeros past the edges; consecutive threads walk each operand's unit-stride dim
//                (tensor cores: each element rounded to the mma's operand type on its way)
//       barrier
//       compute: f32:  thread (ty, tx) adds As[k][ty·tm ..] ⊗ Bs[k][tx·tn ..] for every k of
//                      the step (one tm- and one tn-wide vector load per k: ld.shared.v4)
//                tf32, f16, bf16: per 8 (tf32) or 16 of k, each warp loads its fragments of A
//                      and B from the tiles and issues mma.sync (m16n8k8 or m16n8k16) for each
//                      16 × 8 block of its wm × wn outputs
//       barrier
//     the threads write their accumulators into a bm × bn tile of C in shared memory (the
//     same memory; barrier), then
//     epilogue: the threads walk the tile, consecutive threads on consecutive columns
//               (coalesced stores), evaluating the kernel's root with the matmul/conv value
//               taken from the tile (bias, activation, residual add...), as the CPU's GEMM
//               epilogue does.
//
// With two stages (TiledGemmPlan::stages, hidden `compile --cuda-gemm-stages 2` for measuring on
// a GPU), the tiles are double-buffered: a step's global loads go to registers first and are
// stored into the other stage's tiles after the step's products, so their latency overlaps the
// arithmetic and a step needs one barrier, not two (the classic SGEMM prefetch).
//
// Operands are read through gemm_a / gemm_b (emit_gemm.cpp): views, broadcast batch dims,
// fused elementwise producers and a conv's im2col (padding, stride, dilation) cost nothing
// beyond the load.
//
// Grid emulation (cuda/codegen.cpp) runs lane 0 of each block only, so there the body runs the
// block's threads itself, phase by phase: each phase is a loop over the threads, the barriers
// fall between the loops, the shared tiles are a stack array and each thread's accumulators a
// row of a stack array (Triton's interpreter and POCL's work-group loops run barriers alike).
// An mma.sync reads the registers of its warp's 32 threads: emulated, the threads first store
// their fragments (a row of a stack array each, the same loads as on the GPU), then a loop per
// warp computes the 16 × 8 block from them through the PTX ISA's fragment tables read the other
// way round (which lane and register holds A[r][k], B[k][c], C[r][c]), so that a mistake in
// either direction shows as a wrong number. TF32 rounding is emulated bit for bit (products of
// two TF32 values are exact in f32); the sums' order within an mma is the only difference.
// Test: lowering_tests Cuda.TiledGemm*, Cuda.TwoStageTiledGemms* (emulated against the reference
// interpreter; PTX through ptxas), the e2e models on the fake GPU.
#include "lowering/cpu/kernel_emitter.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace aotrace::lowering::cpu {

void KernelEmitter::emit_tiled_gemm(const TiledGemmPlan& plan, llvm::Value* begin, llvm::Value* end) {
  const GemmPlan& gp = plan.gemm;
  const int64_t threads = plan.threads(), cols = plan.bn / plan.tn, outputs = plan.outputs();
  // Tensor cores: mma.sync.m16n8k8 on TF32, m16n8k16 on f16 or bf16 (mk of K per mma).
  const bool mma = plan.math != Options::CudaMath::f32, tf32 = plan.math == Options::CudaMath::tf32;
  const int64_t mk = plan.mma_k();
  AOT_CHECK(threads == plan_.lanes, "a tiled GEMM's block is its plan's lanes");
  AOT_CHECK(plan.bm % plan.tm == 0 && plan.bn % plan.tn == 0 && plan.bm * plan.bk % threads == 0 &&
                plan.bk * plan.bn % threads == 0 && threads % plan.bm == 0 && threads % plan.bn == 0 &&
                threads % plan.bk == 0 && plan.bm % 4 == 0 && plan.bn % 4 == 0 && plan.pad % 4 == 0,
            "a tiled GEMM's tiles must split evenly over its threads (and keep rows 16-byte aligned)");
  AOT_CHECK(!mma || (plan.wm % 16 == 0 && plan.wn % 8 == 0 && plan.bk % mk == 0 && plan.bm % plan.wm == 0 &&
                     plan.bn % plan.wn == 0),
            "a tensor-core tiled GEMM's warp tiles must be whole mma blocks");
  AOT_CHECK(plan.stages == 1 || plan.stages == 2, "a tiled GEMM has one or two stages");
  const int64_t lda = plan.bm + plan.pad, ldb = plan.bn + plan.pad, ldc = plan.bn + plan.pad;
  const int64_t shared_floats = plan.shared_floats();
  // The alignment of a vector of `width` floats at a multiple of its width (up to 16 bytes).
  auto vector_align = [](int64_t width) {
    int64_t align = 4;
    while (align < 16 && width * 4 % (align * 2) == 0) align *= 2;
    return align;
  };
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Value* zero = llvm::ConstantFP::get(f32, 0.0);
  // Shared memory: As [bk][lda] then Bs [bk][ldb] per stage (plan.stage_floats() apart) during
  // the K loop, the C tile [bm][ldc] after it; every row starts 16 bytes aligned (bm, bn and pad
  // are multiples of 4 floats).
  llvm::Value* tiles = block_array(f32, shared_floats, "tiles");
  // (k, i) of A's or B's tile in stage `stage` (the stage's first float: its As, then its Bs).
  auto tile_at = [&](llvm::Value* stage, bool a, llvm::Value* k, llvm::Value* i) {
    llvm::Value* base = b_.CreateAdd(stage, i64(a ? 0 : plan.bk * lda));
    return b_.CreateInBoundsGEP(f32, tiles, b_.CreateAdd(base, b_.CreateAdd(b_.CreateMul(k, i64(a ? lda : ldb)), i)));
  };
  // Accumulators: the thread's (GPU: registers after SROA), or a row per thread (emulation).
  llvm::Value* acc = stack_array(f32, (target_.nvptx ? 1 : threads) * outputs);
  // Slot `c` of thread tid's row of `array` (`per_thread` floats each); on the GPU the thread's
  // own array, with constant slots only (so that SROA keeps it in registers).
  auto slot_at = [&](llvm::Value* array, int64_t per_thread, llvm::Value* tid, llvm::Value* c) {
    llvm::Value* at = target_.nvptx ? c : b_.CreateAdd(b_.CreateMul(tid, i64(per_thread)), c);
    return b_.CreateInBoundsGEP(f32, array, at);
  };
  auto acc_at = [&](llvm::Value* tid, int64_t c) { return slot_at(acc, outputs, tid, i64(c)); };
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
  auto phase = [&](bool barrier, const std::function<void(llvm::Value*)>& body) { block_phase(threads, barrier, body); };
  // The vector of `width` floats at `at` (aligned to it, up to 16 bytes).
  auto load_vector = [&](llvm::Value* at, int64_t width) {
    auto* type = llvm::FixedVectorType::get(f32, static_cast<unsigned>(width));
    return b_.CreateAlignedLoad(type, at, llvm::Align(static_cast<uint64_t>(vector_align(width))));
  };
  // `v` rounded to the mma's operand type, as an f32 (exact in that type):
  //   tf32: 10 mantissa bits, to nearest with ties away from zero (cvt.rna.tf32.f32); emulated:
  //         half the dropped bits' weight added to the magnitude, then dropped (the sign is
  //         apart, so that is ties-away); infinities and NaNs as they are;
  //   f16, bf16: to nearest even (overflow to infinity): on the GPU its conversions
  //         (cvt.rn.f16.f32, cvt.rn.bf16.f32), emulated the CPU kernels' f16/bf16 stores
  //         (storage.cpp: IEEE round to nearest even, bit for bit).
  auto round_operand = [&](llvm::Value* v) -> llvm::Value* {
    if (plan.math == Options::CudaMath::f16 || plan.math == Options::CudaMath::bf16) {
      const ir::DType half = plan.math == Options::CudaMath::f16 ? ir::DType::f16 : ir::DType::bf16;
      if (!target_.nvptx) return round_to_storage_precision(b_, v, half);
      if (half == ir::DType::f16) return b_.CreateFPExt(b_.CreateFPTrunc(v, b_.getHalfTy()), f32);
      llvm::Value* bits = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_f2bf16_rn, {}, {v});
      bits = b_.CreateZExt(b_.CreateBitCast(bits, b_.getInt16Ty()), b_.getInt32Ty());
      return b_.CreateBitCast(b_.CreateShl(bits, 16), f32);
    }
    if (target_.nvptx) return b_.CreateBitCast(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {v}), f32);
    llvm::Value* bits = b_.CreateBitCast(v, b_.getInt32Ty());
    llvm::Value* finite = b_.CreateICmpNE(b_.CreateAnd(bits, b_.getInt32(0x7f800000)), b_.getInt32(0x7f800000));
    llvm::Value* rounded = b_.CreateAnd(b_.CreateAdd(bits, b_.getInt32(0x1000)), b_.getInt32(static_cast<int32_t>(0xffffe000u)));
    return b_.CreateBitCast(b_.CreateSelect(finite, rounded, bits), f32);
  };
  // A warp's mma blocks (16 × 8 of C each), mi rows by ni columns of them, and each thread's
  // fragment values for one mk-deep slice of k: A's a_vals per block row, then B's b_vals per
  // block column, each an f32 holding the operand's value (GPU: registers after SROA, packed in
  // pairs for f16/bf16 at the mma; emulation: a row per thread, as the accumulators).
  const int64_t warps_n = plan.bn / plan.wn, mi_count = plan.wm / 16, ni_count = plan.wn / 8;
  const int64_t a_vals = mk / 2, b_vals = mk / 4;
  const int64_t frag_count = mi_count * a_vals + ni_count * b_vals;
  llvm::Value* frags = mma ? stack_array(f32, (target_.nvptx ? 1 : threads) * frag_count) : nullptr;
  auto frag_at = [&](llvm::Value* tid, int64_t slot) { return slot_at(frags, frag_count, tid, i64(slot)); };
  auto a_slot = [&](int64_t mi, int64_t i) { return mi * a_vals + i; };
  auto b_slot = [&](int64_t ni, int64_t i) { return mi_count * a_vals + ni * b_vals + i; };
  // Thread tid's warp's first output row and column within the tile, its group (lane / 4) and
  // its place in the group (lane % 4): the PTX ISA's groupID and threadID_in_group.
  struct WarpPlace {
    llvm::Value *row, *col, *group, *in_group;
  };
  auto warp_place = [&](llvm::Value* tid) {
    llvm::Value* warp = b_.CreateUDiv(tid, i64(32));
    llvm::Value* lane = b_.CreateURem(tid, i64(32));
    return WarpPlace{b_.CreateMul(b_.CreateUDiv(warp, i64(warps_n)), i64(plan.wm)),
                     b_.CreateMul(b_.CreateURem(warp, i64(warps_n)), i64(plan.wn)), b_.CreateUDiv(lane, i64(4)),
                     b_.CreateURem(lane, i64(4))};
  };
  // Accumulator c (0..3) of block (mi, ni): C fragment register c of the thread.
  auto acc_slot = [&](int64_t mi, int64_t ni, int64_t c) { return (mi * ni_count + ni) * 4 + c; };
  // Fragment value i of a thread in group g, place t (the PTX ISA's tables, "Matrix Fragments
  // for mma.m16n8k8" (.tf32) and "for mma.m16n8k16 with floating point type"):
  //   A (16 × mk): row g + a_row(i), k t·t_step + a_k(i);  B (mk × 8): k t·t_step + b_k(i), column g.
  const int64_t t_step = tf32 ? 1 : 2;
  auto a_row = [&](int64_t i) { return tf32 ? 8 * (i % 2) : 8 * (i / 2 % 2); };
  auto a_k = [&](int64_t i) { return tf32 ? 4 * (i / 2) : i % 2 + 8 * (i / 4); };
  auto b_k = [&](int64_t i) { return tf32 ? 4 * i : i % 2 + 8 * (i / 2); };
  // One mk-deep slice kk of the step: every thread loads its fragments of its warp's blocks.
  auto mma_fragments = [&](llvm::Value* stage, int64_t kk) {
    phase(false, [&](llvm::Value* tid) {
      const WarpPlace p = warp_place(tid);
      llvm::Value* k_base = b_.CreateAdd(b_.CreateMul(p.in_group, i64(t_step)), i64(kk * mk));
      for (int64_t mi = 0; mi < mi_count; ++mi)
        for (int64_t i = 0; i < a_vals; ++i) {
          llvm::Value* row = b_.CreateAdd(p.row, b_.CreateAdd(p.group, i64(mi * 16 + a_row(i))));
          b_.CreateAlignedStore(b_.CreateAlignedLoad(f32, tile_at(stage, true, b_.CreateAdd(k_base, i64(a_k(i))), row), llvm::Align(4)),
                                frag_at(tid, a_slot(mi, i)), llvm::Align(4));
        }
      for (int64_t ni = 0; ni < ni_count; ++ni)
        for (int64_t i = 0; i < b_vals; ++i) {
          llvm::Value* col = b_.CreateAdd(p.col, b_.CreateAdd(p.group, i64(ni * 8)));
          b_.CreateAlignedStore(b_.CreateAlignedLoad(f32, tile_at(stage, false, b_.CreateAdd(k_base, i64(b_k(i))), col), llvm::Align(4)),
                                frag_at(tid, b_slot(ni, i)), llvm::Align(4));
        }
    });
  };
  // The warps' mma.sync over the fragments, into the accumulators; `barrier` after the step's
  // last slice (the next step overwrites the tiles).
  auto mma_sync = [&](bool barrier) {
    if (target_.nvptx) {
      const llvm::Intrinsic::ID id = tf32 ? llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32
                                     : plan.math == Options::CudaMath::f16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32
                                                                  : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
      llvm::Function* fn = llvm::Intrinsic::getDeclaration(&module_, id);
      phase(barrier, [&](llvm::Value* tid) {
        auto value = [&](int64_t slot) { return b_.CreateAlignedLoad(f32, frag_at(tid, slot), llvm::Align(4)); };
        auto bits = [&](int64_t slot) { return b_.CreateBitCast(value(slot), b_.getInt32Ty()); };
        // Register j of a fragment: value j (tf32), or values 2j (low half) and 2j + 1 (f16,
        // bf16), each exact in its type (round_operand): bf16 is an f32's high half, f16 one
        // exact conversion (cvt.rn.f16.f32).
        auto reg = [&](int64_t first_slot, int64_t j) -> llvm::Value* {
          if (tf32) return bits(first_slot + j);
          const int64_t lo = first_slot + 2 * j, hi = lo + 1;
          if (plan.math == Options::CudaMath::bf16)
            return b_.CreateOr(b_.CreateLShr(bits(lo), 16), b_.CreateAnd(bits(hi), b_.getInt32(static_cast<int32_t>(0xffff0000u))));
          auto half_bits = [&](int64_t slot) {
            return b_.CreateZExt(b_.CreateBitCast(b_.CreateFPTrunc(value(slot), b_.getHalfTy()), b_.getInt16Ty()), b_.getInt32Ty());
          };
          return b_.CreateOr(half_bits(lo), b_.CreateShl(half_bits(hi), 16));
        };
        for (int64_t mi = 0; mi < mi_count; ++mi)
          for (int64_t ni = 0; ni < ni_count; ++ni) {
            std::vector<llvm::Value*> args;
            for (int64_t j = 0; j < 4; ++j) args.push_back(reg(a_slot(mi, 0), j));
            for (int64_t j = 0; j < 2; ++j) args.push_back(reg(b_slot(ni, 0), j));
            for (int64_t c = 0; c < 4; ++c)
              args.push_back(b_.CreateAlignedLoad(f32, acc_at(tid, acc_slot(mi, ni, c)), llvm::Align(4)));
            for (size_t a = 0; a < args.size(); ++a)
              args[a] = b_.CreateBitCast(args[a], fn->getFunctionType()->getParamType(static_cast<unsigned>(a)));
            llvm::Value* d = b_.CreateCall(fn, args);
            for (int64_t c = 0; c < 4; ++c)
              b_.CreateAlignedStore(b_.CreateExtractValue(d, {static_cast<unsigned>(c)}),
                                    acc_at(tid, acc_slot(mi, ni, c)), llvm::Align(4));
          }
      });
      return;
    }
    // Emulated: per warp and block, D[r][c] = C[r][c] + Σ_k A[r][k]·B[k][c], each element read
    // from the lane and value the PTX ISA puts it in (written here the other way round):
    //   C[r][c]  lane (r % 8)·4 + c / 2, register 2·(r / 8) + c % 2;
    //   tf32:     A[r][k] lane (r % 8)·4 + k % 4,       value r / 8 + 2·(k / 4);
    //             B[k][c] lane 4·c + k % 4,             value k / 4;
    //   f16/bf16: A[r][k] lane (r % 8)·4 + (k % 8) / 2, value k % 2 + 2·(r / 8) + 4·(k / 8);
    //             B[k][c] lane 4·c + (k % 8) / 2,       value k % 2 + 2·(k / 8).
    range_loop(i64(0), i64(threads / 32), [&](llvm::Value* warp) {
      llvm::Value* lane0 = b_.CreateMul(warp, i64(32));
      for (int64_t mi = 0; mi < mi_count; ++mi)
        for (int64_t ni = 0; ni < ni_count; ++ni)
          range_loop(i64(0), i64(16), [&](llvm::Value* r) {
            llvm::Value* r_group = b_.CreateMul(b_.CreateURem(r, i64(8)), i64(4));
            llvm::Value* r_half = b_.CreateUDiv(r, i64(8));
            range_loop(i64(0), i64(8), [&](llvm::Value* c) {
              llvm::Value* c_lane = b_.CreateAdd(lane0, b_.CreateAdd(r_group, b_.CreateUDiv(c, i64(2))));
              llvm::Value* c_reg = b_.CreateAdd(b_.CreateMul(r_half, i64(2)), b_.CreateURem(c, i64(2)));
              llvm::Value* out = slot_at(acc, outputs, c_lane, b_.CreateAdd(i64(acc_slot(mi, ni, 0)), c_reg));
              llvm::Value* d = b_.CreateAlignedLoad(f32, out, llvm::Align(4));
              for (int64_t k = 0; k < mk; ++k) {
                llvm::Value* a_lane = b_.CreateAdd(lane0, b_.CreateAdd(r_group, i64(tf32 ? k % 4 : k % 8 / 2)));
                llvm::Value* a_value = tf32 ? b_.CreateAdd(r_half, i64(2 * (k / 4)))
                                            : b_.CreateAdd(b_.CreateMul(r_half, i64(2)), i64(k % 2 + 4 * (k / 8)));
                llvm::Value* b_lane = b_.CreateAdd(lane0, b_.CreateAdd(b_.CreateMul(c, i64(4)), i64(tf32 ? k % 4 : k % 8 / 2)));
                const int64_t b_value = tf32 ? k / 4 : k % 2 + 2 * (k / 8);
                llvm::Value* a = b_.CreateAlignedLoad(
                    f32, slot_at(frags, frag_count, a_lane, b_.CreateAdd(i64(a_slot(mi, 0)), a_value)), llvm::Align(4));
                llvm::Value* bv =
                    b_.CreateAlignedLoad(f32, slot_at(frags, frag_count, b_lane, i64(b_slot(ni, b_value))), llvm::Align(4));
                d = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32}, {a, bv, d});
              }
              b_.CreateAlignedStore(d, out, llvm::Align(4));
            });
          });
    });
  };

  const ir::Shape& out = dims(k_.reduction);
  const size_t batch_rank = gp.is_conv ? 1 : out.size() - 2;
  const ir::Shape batch_extents(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(batch_rank));

  const int64_t a_copies = plan.bm * plan.bk / threads, copies = a_copies + plan.bk * plan.bn / threads;
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
    // Copy `slot` of a thread (A's bm·bk / threads copies, then B's bk·bn / threads): the element
    // (k, i) of the step's slices it moves, element tid + r·threads of the slice walked along its
    // fastest dim (bk, bm and bn divide the block, so the fastest index is the same for every
    // copy: a conv's im2col offsets of k are computed once per thread and step).
    struct Copy {
      bool a;
      llvm::Value *k, *i;
    };
    auto copy_place = [&](llvm::Value* tid, int64_t slot) {
      const bool a = slot < a_copies;
      const int64_t r = a ? slot : slot - a_copies;
      const bool k_fastest = a ? !plan.a_m_fastest : plan.b_k_fastest;
      const int64_t fastest = k_fastest ? plan.bk : a ? plan.bm : plan.bn;
      llvm::Value* f = b_.CreateURem(tid, i64(fastest));
      llvm::Value* slow = b_.CreateAdd(b_.CreateUDiv(tid, i64(fastest)), i64(r * (threads / fastest)));
      return k_fastest ? Copy{a, f, slow} : Copy{a, slow, f};
    };
    // Its value in the step from k0: the operand's element, zero past the edges (tensor cores:
    // rounded to the mma's operand type).
    auto copy_value = [&](const Copy& c, llvm::Value* k0) {
      llvm::Value* at = b_.CreateAdd(c.a ? m0 : n0, c.i);
      llvm::Value* kk = b_.CreateAdd(k0, c.k);
      const ir::SymExpr& extent = c.a ? gp.m : gp.n;
      llvm::Value* inside = b_.CreateAnd(in_range(at, extent), in_range(kk, gp.k));
      llvm::Value* v = c.a ? gemm_a(gp, batch, clamp(at, extent), clamp(kk, gp.k))
                           : gemm_b(gp, batch, clamp(kk, gp.k), clamp(at, extent));
      v = b_.CreateSelect(inside, v, zero);
      return mma ? round_operand(v) : v;
    };
    // Every copy of the step from k0 into the tiles of `stage`.
    auto load_step = [&](llvm::Value* stage, llvm::Value* k0) {
      phase(true, [&](llvm::Value* tid) {
        for (int64_t slot = 0; slot < copies; ++slot) {
          const Copy c = copy_place(tid, slot);
          llvm::Value* v = copy_value(c, k0);  // (before the tile's address: the order of the IR)
          b_.CreateAlignedStore(v, tile_at(stage, c.a, c.k, c.i), llvm::Align(4));
        }
      });
    };
    // The step's products from the tiles of `stage` into the accumulators, then a barrier if
    // `barrier`.
    auto compute_step = [&](llvm::Value* stage, bool barrier) {
      if (mma) {
        for (int64_t kk = 0; kk < plan.bk / mk; ++kk) {
          mma_fragments(stage, kk);
          mma_sync(barrier && kk + 1 == plan.bk / mk);
        }
        return;
      }
      phase(barrier, [&](llvm::Value* tid) {
        auto [row, col] = origin(tid);
        // Row i of the thread's outputs as a vector of tn sums: per k, tm vector multiply-adds
        // of a broadcast A element by B's row (the emulation's SIMD; scalar FMAs on the GPU).
        std::vector<llvm::Value*> sums;
        for (int64_t i = 0; i < plan.tm; ++i) sums.push_back(acc_row(tid, i));
        for (int64_t k = 0; k < plan.bk; ++k) {
          llvm::Value* a = load_vector(tile_at(stage, true, i64(k), row), plan.tm);
          llvm::Value* bv = load_vector(tile_at(stage, false, i64(k), col), plan.tn);
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
    };
    llvm::Value* steps = size(floordiv(gp.k + (plan.bk - 1), plan.bk));
    if (plan.stages == 1) {
      range_loop(i64(0), steps, [&](llvm::Value* step) {
        load_step(i64(0), b_.CreateMul(step, i64(plan.bk)));
        compute_step(i64(0), true);
      });
    } else {
      // Two stages: each thread loads its copies of the next step into registers (`staged`)
      // while this step's products are computed from the other stage, then stores them into the
      // tiles of the next; one barrier a step (a stage is rewritten only after the barrier that
      // ended its last reads); the last step only computes. Nothing between two barriers orders
      // the products and the stores, so the emulation stores first: a double buffer that
      // collapsed into one stage would compute from the next step's tiles there, a wrong number,
      // as on the GPU a race. No step (K = 0: a dynamic dim's range excludes it, but the first
      // load would read before the operands): no loads at all. Every branch here is the block's.
      llvm::Value* staged = stack_array(f32, (target_.nvptx ? 1 : threads) * copies);
      auto stage_of = [&](llvm::Value* step) {
        return b_.CreateMul(b_.CreateAnd(step, i64(1)), i64(plan.stage_floats()));
      };
      if_else(b_.CreateICmpSGT(steps, i64(0)), [&] {
        load_step(i64(0), i64(0));
        llvm::Value* last = b_.CreateSub(steps, i64(1));
        range_loop(i64(0), last, [&](llvm::Value* step) {  // every step but the last: prefetch
          llvm::Value* following = b_.CreateAdd(step, i64(1));
          llvm::Value* current = stage_of(step);
          llvm::Value* next = stage_of(following);
          llvm::Value* k_next = b_.CreateMul(following, i64(plan.bk));
          phase(false, [&](llvm::Value* tid) {
            for (int64_t slot = 0; slot < copies; ++slot)
              b_.CreateAlignedStore(copy_value(copy_place(tid, slot), k_next), slot_at(staged, copies, tid, i64(slot)),
                                    llvm::Align(4));
          });
          auto store_next = [&](bool barrier) {
            phase(barrier, [&](llvm::Value* tid) {
              for (int64_t slot = 0; slot < copies; ++slot) {
                const Copy c = copy_place(tid, slot);
                b_.CreateAlignedStore(b_.CreateAlignedLoad(f32, slot_at(staged, copies, tid, i64(slot)), llvm::Align(4)),
                                      tile_at(next, c.a, c.k, c.i), llvm::Align(4));
              }
            });
          };
          if (target_.nvptx) {
            compute_step(current, false);
            store_next(true);
          } else {
            store_next(false);
            compute_step(current, true);
          }
        });
        compute_step(stage_of(last), true);  // the last step: nothing to load
      }, [] {});
    }
    // The accumulators into the C tile in shared memory, then the epilogue over it with
    // consecutive threads on consecutive columns (coalesced stores, one copy of its code).
    phase(true, [&](llvm::Value* tid) {
      if (mma) {
        // C fragment register c of block (mi, ni): row group (+ 8 for c >= 2), column
        // 2·in_group + c % 2.
        const WarpPlace p = warp_place(tid);
        for (int64_t mi = 0; mi < mi_count; ++mi)
          for (int64_t ni = 0; ni < ni_count; ++ni)
            for (int64_t c = 0; c < 4; ++c) {
              llvm::Value* row = b_.CreateAdd(p.row, b_.CreateAdd(p.group, i64(mi * 16 + 8 * (c / 2))));
              llvm::Value* col = b_.CreateAdd(p.col, b_.CreateAdd(b_.CreateMul(p.in_group, i64(2)), i64(ni * 8 + c % 2)));
              llvm::Value* at = b_.CreateInBoundsGEP(f32, tiles, b_.CreateAdd(b_.CreateMul(row, i64(ldc)), col));
              b_.CreateAlignedStore(b_.CreateAlignedLoad(f32, acc_at(tid, acc_slot(mi, ni, c)), llvm::Align(4)), at,
                                    llvm::Align(4));
            }
        return;
      }
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
