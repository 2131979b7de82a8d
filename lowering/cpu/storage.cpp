// How each dtype is stored in memory versus computed with, and the conversions between them:
//   bool      stored as one byte (0/1), computed as i1;
//   f16, bf16 stored as their 16 bits (i16), computed in f32: converted at every load and
//             store, rounding to nearest even on the way back (as torch's CPU kernels do);
//   others    stored as computed.
// The f16 conversions are hardware instructions where there are some: a GPU kernel (an NVPTX
// module: cvt.f32.f16, cvt.rn.f16.f32) and a CPU module marked by set_half_conversions (x86
// F16C: vcvtph2ps / vcvtps2ph, 16 lanes an instruction; every AArch64: fcvtl / fcvtn), as fpext
// and fptrunc. LLVM's InstCombine then narrows f32 math on widened values to half math where
// that gives the same numbers (a compare, fneg, fabs, floor, an add rounded back), and x86
// without AVX512-FP16 scalarises some half vector ops (compares, fneg, fabs, floor: a ReLU6
// epilogue of an f16 GEMM ran 10x slower): promote_half_vectors computes every vector of half
// math in f32 again after LLVM's optimisation (the same numbers: f32 holds a half op's exact
// result or rounds it innocuously, 24 >= 2 * 11 + 2 bits). Elsewhere (x86-64-v2) both are
// branch-free integer code (selects), after F. Giesen's "half_to_float" /
// "float_to_half_fast3_rtne": no libcalls (__extendhfsf2 is not in every libc). All are IEEE's
// exact widening and nearest-even rounding, the same numbers; a NaN stays a NaN, its payload may
// differ.
// Test: lowering_tests DTypes.* (f16/bf16 round trips, NaN, inf, subnormals, ties, on every CPU
// level; F16MathIsExactOnEveryCpu: the half vector math promoted back, bit for bit).
#include "lowering/cpu/llvm_backend.h"

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/TargetParser/Triple.h>

namespace aotrace::lowering::cpu {
using ir::DType;

static bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

constexpr const char* kHalfConversionsFlag = "aotrace.half-conversions";

void set_half_conversions(llvm::Module& module) {
  module.addModuleFlag(llvm::Module::Override, kHalfConversionsFlag, 1);
}

static bool on_gpu(llvm::IRBuilder<>& b) {
  return llvm::Triple(b.GetInsertBlock()->getModule()->getTargetTriple()).isNVPTX();
}

// `elem` (a scalar type) shaped as `like`: a vector of as many lanes where `like` is a vector,
// so that the widening conversions below take vectors too (the GEMM packs rows of f16 so).
static llvm::Type* shaped(llvm::Type* elem, llvm::Value* like) {
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(like->getType())) return llvm::VectorType::get(elem, v->getElementCount());
  return elem;
}

// Whether f16 converts with fpext / fptrunc (see the header).
static bool hardware_f16(llvm::IRBuilder<>& b) {
  return on_gpu(b) || b.GetInsertBlock()->getModule()->getModuleFlag(kHalfConversionsFlag) != nullptr;
}

static bool is_half_vector(llvm::Type* t) {
  auto* v = llvm::dyn_cast<llvm::VectorType>(t);
  return v != nullptr && v->getElementType()->isHalfTy();
}

// A vector of half math: a compare of half vectors, or an arithmetic op or FP intrinsic (fabs,
// floor, minnum...) whose result is one.
static bool half_vector_math(const llvm::Instruction& i) {
  if (llvm::isa<llvm::FCmpInst>(i)) return is_half_vector(i.getOperand(0)->getType());
  if (!is_half_vector(i.getType())) return false;
  if (llvm::isa<llvm::BinaryOperator>(i) || llvm::isa<llvm::UnaryOperator>(i)) return true;
  const auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&i);
  if (call == nullptr || !llvm::isTriviallyVectorizable(call->getIntrinsicID())) return false;
  for (const llvm::Use& arg : call->args())
    if (!is_half_vector(arg->getType())) return false;  // powi's, ldexp's integer operands
  return true;
}

void promote_half_vectors(llvm::Module& module) {
  if (llvm::Triple(module.getTargetTriple()).isNVPTX()) return;  // a GPU's half math is native
  std::vector<llvm::Instruction*> math;
  for (llvm::Function& f : module)
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& i : block)
        if (half_vector_math(i)) math.push_back(&i);
  for (llvm::Instruction* i : math) {
    llvm::IRBuilder<> b(i);
    auto widened = [&](llvm::Value* v) { return b.CreateFPExt(v, shaped(b.getFloatTy(), v)); };
    llvm::Value* r;
    if (auto* cmp = llvm::dyn_cast<llvm::FCmpInst>(i)) {
      r = b.CreateFCmp(cmp->getPredicate(), widened(cmp->getOperand(0)), widened(cmp->getOperand(1)));
    } else {
      llvm::Instruction* wide = i->clone();
      for (llvm::Use& op : wide->operands())
        if (is_half_vector(op->getType())) op.set(widened(op.get()));
      wide->mutateType(shaped(b.getFloatTy(), i));
      if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(wide))
        call->setCalledFunction(llvm::Intrinsic::getDeclaration(&module, call->getIntrinsicID(), {wide->getType()}));
      b.Insert(wide);
      r = b.CreateFPTrunc(wide, i->getType());
    }
    r->takeName(i);
    i->replaceAllUsesWith(r);
    i->eraseFromParent();
  }
}

static llvm::Value* f16_bits_to_f32(llvm::IRBuilder<>& b, llvm::Value* h16) {
  llvm::Type* i32 = shaped(b.getInt32Ty(), h16);
  llvm::Type* f32 = shaped(b.getFloatTy(), h16);
  llvm::Value* h = b.CreateZExt(h16, i32);
  auto c = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  llvm::Value* o = b.CreateShl(b.CreateAnd(h, c(0x7fff)), c(13));  // exponent and mantissa
  llvm::Value* exp = b.CreateAnd(o, c(0x7c00u << 13));
  o = b.CreateAdd(o, c((127u - 15u) << 23));                       // rebias the exponent
  llvm::Value* inf_nan = b.CreateAdd(o, c((128u - 16u) << 23));    // exponent all ones
  // Zero or subnormal: one more exponent step, then renormalise with a float subtraction.
  llvm::Value* sub = b.CreateFSub(b.CreateBitCast(b.CreateAdd(o, c(1u << 23)), f32),
                                  llvm::ConstantFP::get(f32, 6.103515625e-05));  // 2^-14
  llvm::Value* sub_bits = b.CreateBitCast(sub, i32);
  o = b.CreateSelect(b.CreateICmpEQ(exp, c(0x7c00u << 13)), inf_nan, o);
  o = b.CreateSelect(b.CreateICmpEQ(exp, c(0)), sub_bits, o);
  o = b.CreateOr(o, b.CreateShl(b.CreateAnd(h, c(0x8000)), c(16)));  // sign
  return b.CreateBitCast(o, f32);
}

static llvm::Value* f32_to_f16_bits(llvm::IRBuilder<>& b, llvm::Value* x) {
  auto* i32 = b.getInt32Ty();
  auto c = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  llvm::Value* bits = b.CreateBitCast(x, i32);
  llvm::Value* sign = b.CreateAnd(bits, c(0x80000000u));
  llvm::Value* u = b.CreateXor(bits, sign);  // |x|
  // >= 65520 (after rounding): inf, or a quiet NaN.
  llvm::Value* big = b.CreateSelect(b.CreateICmpUGT(u, c(255u << 23)), c(0x7e00), c(0x7c00));
  // Below the smallest normal half: let a float addition round the mantissa into place.
  const uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  llvm::Value* added = b.CreateFAdd(b.CreateBitCast(u, b.getFloatTy()),
                                    b.CreateBitCast(c(denorm_magic), b.getFloatTy()));
  llvm::Value* small = b.CreateSub(b.CreateBitCast(added, i32), c(denorm_magic));
  // Normal: rebias, round to nearest even with the bias 0xfff + (mantissa is odd).
  llvm::Value* odd = b.CreateAnd(b.CreateLShr(u, c(13)), c(1));
  llvm::Value* normal = b.CreateLShr(
      b.CreateAdd(b.CreateAdd(u, c(((15u - 127u) << 23) + 0xfffu)), odd), c(13));
  llvm::Value* o = b.CreateSelect(b.CreateICmpULT(u, c(113u << 23)), small, normal);
  o = b.CreateSelect(b.CreateICmpUGE(u, c((127u + 16u) << 23)), big, o);
  o = b.CreateOr(o, b.CreateLShr(sign, c(16)));
  return b.CreateTrunc(o, b.getInt16Ty());
}

static llvm::Value* bf16_bits_to_f32(llvm::IRBuilder<>& b, llvm::Value* h16) {
  llvm::Type* i32 = shaped(b.getInt32Ty(), h16);
  llvm::Value* bits = b.CreateShl(b.CreateZExt(h16, i32), llvm::ConstantInt::get(i32, 16));
  return b.CreateBitCast(bits, shaped(b.getFloatTy(), h16));
}

static llvm::Value* f32_to_bf16_bits(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* bits = b.CreateBitCast(x, b.getInt32Ty());
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(bits, b.getInt32(16)), b.getInt32(1));
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(lsb, b.getInt32(0x7fff))),
                                      b.getInt32(16));
  // NaN stays NaN (quiet), whatever rounding would do to its payload.
  llvm::Value* nan = b.CreateOr(b.CreateLShr(bits, b.getInt32(16)), b.getInt32(0x40));
  llvm::Value* o = b.CreateSelect(b.CreateFCmpUNO(x, x), nan, rounded);
  return b.CreateTrunc(o, b.getInt16Ty());
}

llvm::Type* storage_type(llvm::LLVMContext& ctx, DType t) {
  if (t == DType::b8) return llvm::Type::getInt8Ty(ctx);
  if (is_half(t)) return llvm::Type::getInt16Ty(ctx);
  return compute_type(ctx, t);
}

llvm::Value* from_storage(llvm::IRBuilder<>& b, llvm::Value* stored, DType t) {
  if (t == DType::b8) return b.CreateICmpNE(stored, llvm::ConstantInt::get(stored->getType(), 0));
  if (t == DType::f16)
    return hardware_f16(b) ? b.CreateFPExt(b.CreateBitCast(stored, shaped(b.getHalfTy(), stored)), shaped(b.getFloatTy(), stored))
                           : f16_bits_to_f32(b, stored);
  if (t == DType::bf16) return bf16_bits_to_f32(b, stored);
  return stored;
}

llvm::Value* to_storage(llvm::IRBuilder<>& b, llvm::Value* x, DType t) {
  if (t == DType::b8) return b.CreateZExt(x, b.getInt8Ty());
  if (t == DType::f16)
    return hardware_f16(b) ? b.CreateBitCast(b.CreateFPTrunc(x, shaped(b.getHalfTy(), x)), shaped(b.getInt16Ty(), x)) : f32_to_f16_bits(b, x);
  if (t == DType::bf16) return f32_to_bf16_bits(b, x);
  return x;
}

llvm::Value* round_to_storage_precision(llvm::IRBuilder<>& b, llvm::Value* x, DType t) {
  if (!is_half(t)) return x;
  return from_storage(b, to_storage(b, x, t), t);
}

}  // namespace aotrace::lowering::cpu
