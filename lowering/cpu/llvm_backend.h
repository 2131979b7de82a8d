// Private to lowering/cpu/: pieces of the LLVM backend (the only files that see LLVM headers).
//   storage.cpp      how dtypes are stored (bool bytes, f16/bf16 bits) and converted
//   scalar_ops.cpp   dtypes → LLVM types, conversions, one emission per elementwise primitive
//   kernel_emitter.cpp  one LLVM function per scheduled kernel (loops, loads through views)
//   target.cpp       target machine, the O2 pipeline, object emission
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "lowering/cpu/plan.h"
#include "lowering/passes.h"

namespace aotrace::lowering::cpu {

// How a dtype is computed with (bool: i1; f16, bf16: f32) and stored (bool: one byte; f16,
// bf16: their 16 bits), and the conversions at loads and stores (storage.cpp; from_storage also
// widens vectors).
llvm::Type* compute_type(llvm::LLVMContext& ctx, ir::DType t);
llvm::Type* storage_type(llvm::LLVMContext& ctx, ir::DType t);
llvm::Value* from_storage(llvm::IRBuilder<>& b, llvm::Value* stored, ir::DType t);
llvm::Value* to_storage(llvm::IRBuilder<>& b, llvm::Value* x, ir::DType t);
// f16/bf16: an f32 rounded to the dtype's precision (what storing and reloading gives).
llvm::Value* round_to_storage_precision(llvm::IRBuilder<>& b, llvm::Value* x, ir::DType t);
// Marks `module` as one for a CPU with CpuTarget::half_conversions: from_storage and to_storage
// then convert f16 with LLVM's fpext / fptrunc (vcvtph2ps / vcvtps2ph, fcvtl / fcvtn) instead
// of integer code; the numbers are the same (nearest even), a NaN's payload may differ.
void set_half_conversions(llvm::Module& module);
// After LLVM's optimisation: every vector of half math (which InstCombine narrows f32 math on
// widened f16 values to) computed in f32 again, the same numbers (storage.cpp).
void promote_half_vectors(llvm::Module& module);
llvm::Value* constant(llvm::IRBuilder<>& b, double value, ir::DType t);
// torch's conversion rules (float → int truncates, x → bool is x != 0).
llvm::Value* convert(llvm::IRBuilder<>& b, llvm::Value* v, ir::DType from, ir::DType to);

// Elementwise primitives on values already converted to the computation dtype `t`.
llvm::Value* emit_unary(llvm::IRBuilder<>& b, ir::OpKind op, llvm::Value* x, ir::DType t);
llvm::Value* emit_binary(llvm::IRBuilder<>& b, ir::OpKind op, llvm::Value* x, llvm::Value* y,
                         ir::DType t);
llvm::Value* emit_compare(llvm::IRBuilder<>& b, ir::OpKind op, llvm::Value* x, llvm::Value* y,
                          ir::DType t);
// NaN-propagating max/min as torch computes them (also used by reduce_max).
llvm::Value* emit_max(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, ir::DType t);
llvm::Value* emit_min(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, ir::DType t);
// x is NaN (false for integers).
llvm::Value* is_nan(llvm::IRBuilder<>& b, llvm::Value* x, ir::DType t);
// x strictly better than y for argmax/topk-largest (NaN above everything), or for
// argmin/topk-smallest (nan_wins: NaN first, as torch's argmin; else NaN last, topk smallest).
llvm::Value* strictly_greater(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, ir::DType t);
llvm::Value* strictly_less(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, ir::DType t, bool nan_wins);
// The identity of reduce_max: -inf, or the smallest integer; of reduce_min: +inf, the largest.
llvm::Value* lowest_value(llvm::IRBuilder<>& b, ir::DType t);
llvm::Value* highest_value(llvm::IRBuilder<>& b, ir::DType t);

// `e` as LLVM code at `b`: constants fold, symbol(name) gives a symbol's value (Python floor
// division and modulo, as SymExpr evaluates them).
llvm::Value* emit_sym(llvm::IRBuilder<>& b, const ir::SymExpr& e,
                      const std::function<llvm::Value*(const std::string&)>& symbol);

// The alignment of every buffer a GPU kernel reads or writes (the CUDA runtime's promise).
constexpr int64_t kGpuBufferAlign = 16;
// NVPTX's address space of global memory, where every buffer of a GPU kernel is.
constexpr unsigned kGpuGlobalSpace = 1;

// What code generation needs to know of the target machine.
struct CpuTarget {
  int f32_lanes = 4;  // floats per vector register: 4 (SSE, NEON), 8 (AVX2), 16 (AVX-512)
  // The CUDA backend's kernels for NVPTX (warp shuffles); false for the CPU and grid emulation.
  bool nvptx = false;
  // The CPU converts f16 ↔ f32 in hardware (x86 F16C, every AArch64): set_half_conversions.
  bool half_conversions = false;
  // bf16 GEMMs with AVX512-BF16's vdpbf16ps (GemmPlan::bf16_dot()): `bf16_dot` where the CPU
  // has it; `bf16_dot_at_run_time` where it is an AVX-512 CPU that may or may not (x86-64-v4):
  // the kernel asks CPUID, and its dot microkernels are compiled with `bf16_dot_features`.
  bool bf16_dot = false, bf16_dot_at_run_time = false;
  std::string bf16_dot_features = {};
};
CpuTarget cpu_target(const llvm::TargetMachine& tm);

// Emits `kernel` as an exported function of `module`, carrying out its `plan` (plan.h).
void emit_kernel(llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel, const CpuPlan& plan,
                 const CpuTarget& target);

// The body of `kernel` alone, for a mapping of its tasks other than the CPU's parallel_for
// (lowering/cuda: one task per GPU thread): an internal function (closure, begin, end) that runs
// tasks [begin, end) of [0, tasks). The closure is the kernel's buffer pointers, in the order of
// ScheduledKernel::buffers, followed by the symbols pointer when `reads_symbols`.
struct KernelBody {
  llvm::Function* fn = nullptr;
  ir::SymExpr tasks = 0;
  bool reads_symbols = false;
};
KernelBody emit_kernel_body(llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel,
                            const CpuPlan& plan, const CpuTarget& target);

// The start of `kernel`'s exported function in the CPU kernel ABI (aotrace_kernel_abi.h:
// void(void* const* buffers, const int64_t* symbols, ctx)), `b` left in its entry block: the
// body's closure (the buffers, or a copy with the symbols pointer after them when the body
// reads symbols) and its task count computed from the symbols. The caller runs the tasks
// (KernelEmitter: parallel_for; cuda grid emulation: every block and thread of the launch).
struct KernelEntry {
  llvm::Function* fn = nullptr;
  llvm::Value* closure = nullptr;
  llvm::Value* tasks = nullptr;
};
KernelEntry begin_kernel_entry(llvm::IRBuilder<>& b, llvm::Module& module, const ir::Graph& g, const ScheduledKernel& kernel,
                               const KernelBody& body);

// Registers every LLVM target this build has (once per process).
void initialise_llvm_targets();
std::unique_ptr<llvm::TargetMachine> make_target_machine(const Options& options);
// Verifies, optimises (PassBuilder O<opt_level>) and emits `module` as an ELF object (or, with
// CGFT_AssemblyFile, as assembly: PTX for NVPTX). `phases`, when given, gets llvm-opt and
// llvm-mc's times.
ir::Bytes optimise_and_emit(llvm::Module& module, llvm::TargetMachine& tm, int opt_level,
                            std::vector<PassTiming>* phases = nullptr,
                            llvm::CodeGenFileType file_type = llvm::CGFT_ObjectFile);

}  // namespace aotrace::lowering::cpu
