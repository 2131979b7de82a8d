// Scalar code of the elementwise primitives, with torch semantics: one case per op of
// ir/ops.def (STYLE 6). exp, erf, tanh and sigmoid computed in f32 are emitted inline as
// branch-free polynomial code (emit_*_f32 below) that the loop vectoriser can vectorise; the
// other transcendentals, and all of them in f64, use LLVM intrinsics (they lower to libm calls)
// or, for tanh and erf, which have no intrinsic in LLVM 16, call libm's tanh/erf directly.
// Test: lowering_tests EndToEnd.Unary*, EndToEnd.Binary*, EndToEnd.Compare*, EndToEnd.Cast*,
// MathF32.* (accuracy of the inline f32 routines).
#include <cmath>
#include <initializer_list>
#include <limits>

#include <llvm/IR/Intrinsics.h>

#include "lowering/cpu/llvm_backend.h"

namespace aotrace::lowering::cpu {
using ir::DType;
using ir::OpKind;

static bool is_unsigned(DType t) { return t == DType::u8 || t == DType::b8; }

llvm::Type* compute_type(llvm::LLVMContext& ctx, DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return llvm::Type::getFloatTy(ctx);  // stored as 16 bits (storage.cpp)
    case DType::f64: return llvm::Type::getDoubleTy(ctx);
    case DType::i64: return llvm::Type::getInt64Ty(ctx);
    case DType::i32: return llvm::Type::getInt32Ty(ctx);
    case DType::i8:
    case DType::u8: return llvm::Type::getInt8Ty(ctx);
    case DType::b8: return llvm::Type::getInt1Ty(ctx);
    default: internal_error("dtype " + std::string(ir::dtype_name(t)) + " reached CPU codegen");
  }
}

llvm::Value* constant(llvm::IRBuilder<>& b, double value, DType t) {
  llvm::Type* type = compute_type(b.getContext(), t);
  if (t == DType::f16) value = ir::f16_to_f32(ir::f32_to_f16(static_cast<float>(value)));
  if (t == DType::bf16) value = ir::bf16_to_f32(ir::f32_to_bf16(static_cast<float>(value)));
  if (ir::is_floating(t)) return llvm::ConstantFP::get(type, value);
  if (t == DType::b8) return b.getInt1(value != 0);
  return llvm::ConstantInt::get(type, static_cast<uint64_t>(static_cast<int64_t>(value)), true);
}

llvm::Value* convert(llvm::IRBuilder<>& b, llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* dst = compute_type(b.getContext(), to);
  if (to == DType::b8) {
    if (ir::is_floating(from)) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (ir::is_floating(from)) {
    if (ir::is_floating(to)) return round_to_storage_precision(b, b.CreateFPCast(v, dst), to);
    if (dst->getIntegerBitWidth() >= 32) return b.CreateFPToSI(v, dst);
    return b.CreateTrunc(b.CreateFPToSI(v, b.getInt32Ty()), dst);
  }
  if (ir::is_floating(to)) {
    llvm::Value* f = is_unsigned(from) ? b.CreateUIToFP(v, dst) : b.CreateSIToFP(v, dst);
    return round_to_storage_precision(b, f, to);
  }
  return b.CreateIntCast(v, dst, !is_unsigned(from));
}

static llvm::Value* intrinsic(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id,
                              std::vector<llvm::Value*> args) {
  return b.CreateIntrinsic(id, {args[0]->getType()}, args);
}

static llvm::Value* libm_call(llvm::IRBuilder<>& b, const char* f32_name, const char* f64_name,
                              llvm::Value* x, DType t) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  llvm::FunctionCallee f = m->getOrInsertFunction(
      x->getType()->isFloatTy() ? f32_name : f64_name,
      llvm::FunctionType::get(x->getType(), {x->getType()}, false));
  llvm::CallInst* call = b.CreateCall(f, {x});
  call->setDoesNotThrow();
  call->setOnlyReadsMemory();
  return call;
}

// ---------------------------------------------------------------------------------------------
// f32 transcendentals as straight-line IR (no calls, no branches), so that the loop vectoriser
// turns them into packed code; libm's erff/tanhf and the scalar expf that llvm.exp lowers to are
// not vectorisable without a vector library. Coefficients were fitted for this file in double
// precision (Lawson's iteratively reweighted least squares on 4000 Chebyshev nodes, i.e. close
// to minimax, against mpmath values; weights make the error relative, or absolute for erf's
// tail) and then rounded to float. The errors quoted are the largest seen by MathF32.* in
// math_test.cpp (2–3.3M inputs each, against double-precision libm), for the host CPU (FMA) and,
// in parentheses where different, for the x86-64-v2 baseline (llvm.fmuladd as mul and add).

static llvm::Value* f32_constant(llvm::IRBuilder<>& b, float v) {
  return llvm::ConstantFP::get(b.getFloatTy(), v);
}

static llvm::Value* fmuladd(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* z) {
  return intrinsic(b, llvm::Intrinsic::fmuladd, {x, y, z});
}

// Horner's scheme: ((c[0]·x + c[1])·x + c[2])·x + …, coefficients from the highest degree down.
static llvm::Value* horner(llvm::IRBuilder<>& b, llvm::Value* x, std::initializer_list<float> c) {
  llvm::Value* p = f32_constant(b, *c.begin());
  for (auto it = c.begin() + 1; it != c.end(); ++it) p = fmuladd(b, p, x, f32_constant(b, *it));
  return p;
}

// exp(x) = 2^n · e^r with n = round(x/ln2) and r = x − n·ln2 in [−ln2/2, ln2/2] (Cody–Waite: ln2
// split into a 15-bit head, so that n·head is exact, and a tail). e^r = 1 + r + r²·q(r), q of degree 4
// fitted for relative error 3e-9. n is rounded by adding 1.5·2^23 (the integer then sits in the
// low mantissa bits, read by a bitcast: no fptosi, which is poison for NaN and huge values), and
// 2^n is applied as two exponent-built factors 2^(n/2)·2^(n−n/2), so that results near overflow
// and gradual underflow (denormals, rounded once) come out right. x is clamped to at most 88.8
// (exp(88.8) = +inf). Below −104, where exp(x) < 2^−150 rounds to 0, and for NaN, the lanes
// compute exp(0) and the result is selected at the end (0, or the NaN passed through): computed,
// they made denormal intermediates, and every vector holding one took a microcode assist
// (a causal mask's −inf: gpt2's softmax exp 0.43 → 0.07 ms). Measured: ≤ 0.91 (1.16) ulp,
// denormal results included, exp(+inf) = inf, exp(−inf) = 0, NaN → NaN.
static llvm::Value* emit_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* hi = f32_constant(b, 88.8f);
  llvm::Value* in_range = b.CreateFCmpOGE(x, f32_constant(b, -104.0f));  // false for NaN
  llvm::Value* xc = b.CreateSelect(in_range, x, f32_constant(b, 0.0f));
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, hi), xc, hi);
  llvm::Value* round_magic = f32_constant(b, 12582912.0f);  // 1.5·2^23
  llvm::Value* t = fmuladd(b, xc, f32_constant(b, 1.44269504f), round_magic);  // x/ln2 + magic
  llvm::Value* minus_n = b.CreateFSub(round_magic, t);
  llvm::Value* r = fmuladd(b, minus_n, f32_constant(b, 0.693145751953125f), xc);  // ln2 head
  r = fmuladd(b, minus_n, f32_constant(b, 1.42860677e-06f), r);                   // ln2 tail
  llvm::Value* p = horner(b, r, {0.001381461f, 0.00836871f, 0.04166839f, 0.16666521f,
                                 0.49999994f, 1.0f, 1.0f});
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Value* n = b.CreateSub(b.CreateBitCast(t, i32), b.CreateBitCast(round_magic, i32));
  llvm::Value* n_half = b.CreateAShr(n, 1);
  auto power_of_two = [&](llvm::Value* k) {  // 2^k for k in [−126, 127]
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(k, b.getInt32(127)), 23), b.getFloatTy());
  };
  llvm::Value* result = b.CreateFMul(b.CreateFMul(p, power_of_two(n_half)),
                                     power_of_two(b.CreateSub(n, n_half)));
  result = b.CreateSelect(in_range, result, f32_constant(b, 0.0f));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

// erf, odd by construction (the small branch is odd in x, the large one takes x's sign).
// |x| < 1: erf(x) = x + x·p(x²), p of degree 6 fitted to erf(x)/x − 1 for relative error 1.2e-9
//   (written as x + x·p so that the rounding of p's leading term 2/√π − 1 costs little).
// |x| ≥ 1: erf(|x|) = 1 − exp(q(|x|)), q of degree 6 fitted to log(erfc(x)) on [1, 4] weighted
//   by erfc (absolute error of erf 1e-9); |x| is clamped to 4, where 1 − erfc rounds to 1.
// Both are computed and one is selected; a NaN selects the small branch, which propagates it.
// Measured: absolute error ≤ 6.4e-8 (7.3e-8), ≤ 1.08 (1.22) ulp relative everywhere, so also
// for tiny |x|; erf(±inf) = ±1, erf(−0) = −0.
static llvm::Value* emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* a = intrinsic(b, llvm::Intrinsic::fabs, {x});
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* p = horner(b, x2, {7.8540266e-05f, -0.0008010248f, 0.0051883347f, -0.026853817f,
                                  0.112835854f, -0.37612626f, 0.12837917f});
  llvm::Value* small = fmuladd(b, x, p, x);
  llvm::Value* four = f32_constant(b, 4.0f);
  llvm::Value* ac = b.CreateSelect(b.CreateFCmpOLT(a, four), a, four);
  llvm::Value* log_erfc = horner(b, ac, {0.0001855749f, -0.0029396156f, 0.021805352f, -0.10303743f,
                                         -0.6382256f, -1.12704f, -0.00035370892f});
  llvm::Value* large = b.CreateFSub(f32_constant(b, 1.0f), emit_exp_f32(b, log_erfc));
  large = intrinsic(b, llvm::Intrinsic::copysign, {large, x});
  return b.CreateSelect(b.CreateFCmpULT(a, f32_constant(b, 1.0f)), small, large);
}

// tanh, computed on |x| and given x's sign at the end (odd by construction, tanh(−0) = −0).
// |x| < 0.625: |x| + |x|³·p(x²), p of degree 4 fitted for relative error 4.4e-9 of tanh (no
// cancellation near 0). |x| ≥ 0.625: 1 − 2/(exp(2|x|) + 1) (exp overflows to inf for
// |x| > 44, giving exactly 1). A NaN selects the small branch, which propagates it.
// Measured: ≤ 1.3 ulp, tanh(±inf) = ±1.
static llvm::Value* emit_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* a = intrinsic(b, llvm::Intrinsic::fabs, {x});
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* p = horner(b, x2, {-0.0057049906f, 0.02063909f, -0.053739715f, 0.13331442f,
                                  -0.3333328f});
  llvm::Value* small = fmuladd(b, b.CreateFMul(a, x2), p, a);
  llvm::Value* one = f32_constant(b, 1.0f);
  llvm::Value* e = emit_exp_f32(b, b.CreateFAdd(a, a));
  llvm::Value* large = b.CreateFSub(one, b.CreateFDiv(f32_constant(b, 2.0f), b.CreateFAdd(e, one)));
  llvm::Value* t = b.CreateSelect(b.CreateFCmpULT(a, f32_constant(b, 0.625f)), small, large);
  return intrinsic(b, llvm::Intrinsic::copysign, {t, x});
}

// sigmoid = 1/(1 + exp(−x)), computed with e = exp(−|x|) ≤ 1 as 1/(1 + e) for x ≥ 0 and
// e/(1 + e) for x < 0: no overflow, and tiny results keep their relative accuracy.
// Measured: ≤ 2.25 ulp, denormal results included; sigmoid(−inf) = 0, sigmoid(+inf) = 1,
// NaN → NaN.
static llvm::Value* emit_sigmoid_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* one = f32_constant(b, 1.0f);
  llvm::Value* e = emit_exp_f32(b, b.CreateFNeg(intrinsic(b, llvm::Intrinsic::fabs, {x})));
  llvm::Value* numerator = b.CreateSelect(b.CreateFCmpOLT(x, f32_constant(b, 0.0f)), e, one);
  return b.CreateFDiv(numerator, b.CreateFAdd(one, e));
}
// ---------------------------------------------------------------------------------------------

llvm::Value* emit_unary(llvm::IRBuilder<>& b, OpKind op, llvm::Value* x, DType t) {
  const bool fp = ir::is_floating(t);
  llvm::Value* zero = constant(b, 0, t);
  switch (op) {
    case OpKind::Neg: return fp ? b.CreateFNeg(x) : b.CreateSub(zero, x);
    case OpKind::Abs:
      if (fp) return intrinsic(b, llvm::Intrinsic::fabs, {x});
      return is_unsigned(t) ? x : intrinsic(b, llvm::Intrinsic::abs, {x, b.getFalse()});
    case OpKind::Relu:
      if (fp) return b.CreateSelect(b.CreateFCmpOLT(x, zero), zero, x);  // relu(nan) = nan
      return is_unsigned(t) ? x : b.CreateSelect(b.CreateICmpSLT(x, zero), zero, x);
    case OpKind::Floor: return fp ? intrinsic(b, llvm::Intrinsic::floor, {x}) : x;
    case OpKind::Ceil: return fp ? intrinsic(b, llvm::Intrinsic::ceil, {x}) : x;
    case OpKind::Not:  // bool: logical not (i1); integers: bitwise not
      AOT_CHECK(!fp, "not of a floating dtype");
      return b.CreateNot(x);
    default: break;
  }
  AOT_CHECK(fp, "unary " + std::string(ir::op_name(op)) + " on a non-float dtype");
  if (x->getType()->isFloatTy()) {  // f32, f16, bf16: inline, vectorisable (f64 keeps libm)
    switch (op) {
      case OpKind::Exp: return emit_exp_f32(b, x);
      case OpKind::Erf: return emit_erf_f32(b, x);
      case OpKind::Tanh: return emit_tanh_f32(b, x);
      case OpKind::Sigmoid: return emit_sigmoid_f32(b, x);
      default: break;
    }
  }
  switch (op) {
    case OpKind::Exp: return intrinsic(b, llvm::Intrinsic::exp, {x});
    case OpKind::Log: return intrinsic(b, llvm::Intrinsic::log, {x});
    case OpKind::Sqrt: return intrinsic(b, llvm::Intrinsic::sqrt, {x});
    case OpKind::Tanh: return libm_call(b, "tanhf", "tanh", x, t);
    case OpKind::Erf: return libm_call(b, "erff", "erf", x, t);  // no LLVM intrinsic
    case OpKind::Rsqrt: return b.CreateFDiv(constant(b, 1, t), intrinsic(b, llvm::Intrinsic::sqrt, {x}));
    case OpKind::Sin: return intrinsic(b, llvm::Intrinsic::sin, {x});
    case OpKind::Cos: return intrinsic(b, llvm::Intrinsic::cos, {x});
    case OpKind::Sigmoid: {  // 1 / (1 + exp(-x))
      llvm::Value* e = intrinsic(b, llvm::Intrinsic::exp, {b.CreateFNeg(x)});
      llvm::Value* one = constant(b, 1, t);
      return b.CreateFDiv(one, b.CreateFAdd(one, e));
    }
    default: internal_error("not a unary op: " + std::string(ir::op_name(op)));
  }
}

// Whether `v` is a floating constant (or a splat of one) that is not NaN.
static bool is_ordered_constant(llvm::Value* v) {
  auto* c = llvm::dyn_cast<llvm::Constant>(v);
  if (c != nullptr && c->getType()->isVectorTy()) c = c->getSplatValue();
  auto* f = llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
  return f != nullptr && !f->getValueAPF().isNaN();
}

// max (or min) of floats as torch computes it: x if x is NaN or x beats y, else y (NaN when y
// is NaN; y when they are equal, so max(-0.0, 0.0) is 0.0). Against a constant that is not NaN
// (relu6's and clamp's bounds) one compare gives the same: an unordered one when y is the
// constant, an ordered one when x is.
static llvm::Value* emit_float_extremum(llvm::IRBuilder<>& b, bool is_max, llvm::Value* x, llvm::Value* y) {
  if (is_ordered_constant(y)) return b.CreateSelect(is_max ? b.CreateFCmpUGT(x, y) : b.CreateFCmpULT(x, y), x, y);
  if (is_ordered_constant(x)) return b.CreateSelect(is_max ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y), x, y);
  return b.CreateSelect(b.CreateOr(b.CreateFCmpUNO(x, x), is_max ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y)),
                        x, y);
}

llvm::Value* emit_max(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, DType t) {
  if (!ir::is_floating(t))
    return b.CreateSelect(is_unsigned(t) ? b.CreateICmpUGT(x, y) : b.CreateICmpSGT(x, y), x, y);
  return emit_float_extremum(b, true, x, y);
}

llvm::Value* emit_min(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, DType t) {
  if (!ir::is_floating(t))
    return b.CreateSelect(is_unsigned(t) ? b.CreateICmpULT(x, y) : b.CreateICmpSLT(x, y), x, y);
  return emit_float_extremum(b, false, x, y);
}

llvm::Value* is_nan(llvm::IRBuilder<>& b, llvm::Value* x, DType t) {
  return ir::is_floating(t) ? b.CreateFCmpUNO(x, x) : b.getFalse();
}

llvm::Value* strictly_greater(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, DType t) {
  if (!ir::is_floating(t))
    return t == DType::u8 || t == DType::b8 ? b.CreateICmpUGT(x, y) : b.CreateICmpSGT(x, y);
  return b.CreateOr(b.CreateFCmpOGT(x, y), b.CreateAnd(is_nan(b, x, t), b.CreateNot(is_nan(b, y, t))));
}

llvm::Value* strictly_less(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, DType t,
                           bool nan_wins) {
  if (!ir::is_floating(t))
    return t == DType::u8 || t == DType::b8 ? b.CreateICmpULT(x, y) : b.CreateICmpSLT(x, y);
  llvm::Value* nan_order = nan_wins ? b.CreateAnd(is_nan(b, x, t), b.CreateNot(is_nan(b, y, t)))
                                    : b.CreateAnd(is_nan(b, y, t), b.CreateNot(is_nan(b, x, t)));
  return b.CreateOr(b.CreateFCmpOLT(x, y), nan_order);
}

llvm::Value* highest_value(llvm::IRBuilder<>& b, DType t) {
  if (ir::is_floating(t)) return constant(b, std::numeric_limits<double>::infinity(), t);
  if (t == DType::b8) return b.getTrue();
  unsigned bits = compute_type(b.getContext(), t)->getIntegerBitWidth();
  if (t == DType::u8) return llvm::ConstantInt::get(b.getContext(), llvm::APInt::getMaxValue(bits));
  return llvm::ConstantInt::get(b.getContext(), llvm::APInt::getSignedMaxValue(bits));
}

llvm::Value* lowest_value(llvm::IRBuilder<>& b, DType t) {
  if (ir::is_floating(t)) return constant(b, -std::numeric_limits<double>::infinity(), t);
  if (t == DType::b8) return b.getFalse();
  if (t == DType::u8) return constant(b, 0, t);
  unsigned bits = compute_type(b.getContext(), t)->getIntegerBitWidth();
  return llvm::ConstantInt::get(b.getContext(), llvm::APInt::getSignedMinValue(bits));
}

static llvm::Value* emit_integer_pow(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, DType t) {
  llvm::Value* p = intrinsic(b, llvm::Intrinsic::pow, {convert(b, x, t, DType::f64),
                                                        convert(b, y, t, DType::f64)});
  return convert(b, p, DType::f64, t);
}

// Integer floor division and remainder with Python/torch signs (the remainder takes the sign of
// the divisor). Division by zero cannot raise inside a kernel: it gives 0 (torch raises
// ZeroDivisionError); INT_MIN // -1 wraps as torch does, without the hardware trap.
static llvm::Value* emit_integer_floor_div_or_rem(llvm::IRBuilder<>& b, bool floor_div,
                                                  llvm::Value* x, llvm::Value* y, DType t) {
  llvm::Value* zero = llvm::ConstantInt::get(y->getType(), 0);
  llvm::Value* one = llvm::ConstantInt::get(y->getType(), 1);
  llvm::Value* by_zero = b.CreateICmpEQ(y, zero);
  if (is_unsigned(t)) {
    llvm::Value* safe = b.CreateSelect(by_zero, one, y);
    return b.CreateSelect(by_zero, zero, floor_div ? b.CreateUDiv(x, safe) : b.CreateURem(x, safe));
  }
  llvm::Value* by_minus_one = b.CreateICmpEQ(y, llvm::ConstantInt::getSigned(y->getType(), -1));
  llvm::Value* safe = b.CreateSelect(b.CreateOr(by_zero, by_minus_one), one, y);
  llvm::Value* q = b.CreateSDiv(x, safe);
  llvm::Value* r = b.CreateSRem(x, safe);
  // The truncated quotient is one too big when the remainder's sign differs from the divisor's.
  llvm::Value* adjust = b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(r, y), zero));
  llvm::Value* out;
  if (floor_div) {
    out = b.CreateSub(q, b.CreateZExt(adjust, q->getType()));
    out = b.CreateSelect(by_minus_one, b.CreateSub(zero, x), out);
  } else {
    out = b.CreateSelect(adjust, b.CreateAdd(r, y), r);
  }
  return b.CreateSelect(by_zero, zero, out);
}

// torch's floating remainder (fmod corrected to the divisor's sign) and div_floor_floating.
static llvm::Value* emit_float_floor_div_or_rem(llvm::IRBuilder<>& b, bool floor_div,
                                                llvm::Value* x, llvm::Value* y, DType t) {
  llvm::Value* zero = constant(b, 0, t);
  llvm::Value* m = b.CreateFRem(x, y);
  llvm::Value* adjust = b.CreateAnd(b.CreateFCmpUNE(m, zero),
                                    b.CreateXor(b.CreateFCmpOLT(y, zero), b.CreateFCmpOLT(m, zero)));
  if (!floor_div) return b.CreateSelect(adjust, b.CreateFAdd(m, y), m);
  llvm::Value* quotient = b.CreateFDiv(x, y);
  llvm::Value* d = b.CreateFDiv(b.CreateFSub(x, m), y);
  d = b.CreateSelect(adjust, b.CreateFSub(d, constant(b, 1, t)), d);
  llvm::Value* f = intrinsic(b, llvm::Intrinsic::floor, {d});
  f = b.CreateSelect(b.CreateFCmpOGT(b.CreateFSub(d, f), constant(b, 0.5, t)),
                     b.CreateFAdd(f, constant(b, 1, t)), f);
  llvm::Value* signed_zero = intrinsic(b, llvm::Intrinsic::copysign, {zero, quotient});
  f = b.CreateSelect(b.CreateFCmpOEQ(d, zero), signed_zero, f);
  return b.CreateSelect(b.CreateFCmpOEQ(y, zero), quotient, f);
}

llvm::Value* emit_binary(llvm::IRBuilder<>& b, OpKind op, llvm::Value* x, llvm::Value* y, DType t) {
  const bool fp = ir::is_floating(t);
  if (t == DType::b8) {  // torch: bool + bool is or, bool * bool is and
    switch (op) {
      case OpKind::Add: case OpKind::Maximum: return b.CreateOr(x, y);
      case OpKind::Mul: case OpKind::Minimum: return b.CreateAnd(x, y);
      case OpKind::Sub: return b.CreateXor(x, y);
      default: break;
    }
  }
  switch (op) {
    case OpKind::Add: return fp ? b.CreateFAdd(x, y) : b.CreateAdd(x, y);
    case OpKind::Sub: return fp ? b.CreateFSub(x, y) : b.CreateSub(x, y);
    case OpKind::Mul: return fp ? b.CreateFMul(x, y) : b.CreateMul(x, y);
    case OpKind::Div:
      AOT_CHECK(fp, "div must compute in a float dtype (true division)");
      return b.CreateFDiv(x, y);
    case OpKind::Maximum: return emit_max(b, x, y, t);
    case OpKind::Minimum: return emit_min(b, x, y, t);
    case OpKind::Pow: return fp ? intrinsic(b, llvm::Intrinsic::pow, {x, y}) : emit_integer_pow(b, x, y, t);
    case OpKind::FloorDiv:
    case OpKind::Remainder: {
      bool floor_div = op == OpKind::FloorDiv;
      return fp ? emit_float_floor_div_or_rem(b, floor_div, x, y, t)
                : emit_integer_floor_div_or_rem(b, floor_div, x, y, t);
    }
    case OpKind::And:
      AOT_CHECK(!fp, "and of a floating dtype");
      return b.CreateAnd(x, y);
    case OpKind::Or:
      AOT_CHECK(!fp, "or of a floating dtype");
      return b.CreateOr(x, y);
    default: internal_error("not a binary op: " + std::string(ir::op_name(op)));
  }
}

llvm::Value* emit_compare(llvm::IRBuilder<>& b, OpKind op, llvm::Value* x, llvm::Value* y, DType t) {
  using P = llvm::CmpInst::Predicate;
  const bool fp = ir::is_floating(t), u = is_unsigned(t);
  P p;
  switch (op) {
    case OpKind::Eq: p = fp ? P::FCMP_OEQ : P::ICMP_EQ; break;
    case OpKind::Ne: p = fp ? P::FCMP_UNE : P::ICMP_NE; break;
    case OpKind::Lt: p = fp ? P::FCMP_OLT : u ? P::ICMP_ULT : P::ICMP_SLT; break;
    case OpKind::Le: p = fp ? P::FCMP_OLE : u ? P::ICMP_ULE : P::ICMP_SLE; break;
    case OpKind::Gt: p = fp ? P::FCMP_OGT : u ? P::ICMP_UGT : P::ICMP_SGT; break;
    case OpKind::Ge: p = fp ? P::FCMP_OGE : u ? P::ICMP_UGE : P::ICMP_SGE; break;
    default: internal_error("not a compare op: " + std::string(ir::op_name(op)));
  }
  return fp ? b.CreateFCmp(p, x, y) : b.CreateICmp(p, x, y);
}

}  // namespace aotrace::lowering::cpu
