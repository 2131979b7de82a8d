// codegen_cuda: each scheduled kernel's body (cpu::emit_kernel_body, the CPU backend's emitter)
// under the GPU mapping of cuda_backend.h. The grid function is the same IR for the GPU and for
// grid emulation; only its caller differs:
//   GPU:       void @sym(ptr closure, i64 tasks), a PTX kernel (nvvm.annotations) of kBlock
//              threads a block, which passes %ctaid.x, kBlock and %tid.x;
//   emulation: the CPU kernel ABI (aotrace_kernel_abi.h), which builds the closure, computes the
//              task count from the symbols and calls the grid function for every block and
//              thread of the launch the runtime would make, blocks in reverse order (a kernel
//              that depends on the order of its tasks is caught; within a warp or block plan's
//              task, emulation runs lane 0 only, so a shared-memory race or a misplaced barrier
//              shows on a GPU only: tools/gpu/device_check.sh).
// A thread's task is independent of every other's, except where a plan's lanes share a task:
// the 32 lanes of a warp matmul or reduction exchange partials by warp shuffles, the 256 of a
// block reduction then meet in shared memory between barriers, and the 256 threads of a tiled
// GEMM's block stage tiles in shared memory between barriers. Grid emulation has neither, so
// there a task's lane 0 does the whole task: every lane's partial and the same butterflies
// (emit_reductions.cpp; the same order of operations as the GPU, which may still fuse a
// matmul's multiply-adds), a tiled block's threads phase by phase (emit_tiled_gemm.cpp).
// Test: lowering_tests Cuda.* (emulated kernels against the reference interpreter; PTX through ptxas).
#include <chrono>
#include <functional>
#include <map>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include "lowering/cpu/llvm_backend.h"
#include "lowering/cuda/cuda_backend.h"

namespace aotrace::lowering::cuda {
namespace {

// void @sym.grid(ptr closure, i64 threads, i64 block, i64 block_dim, i64 thread): global thread
// g = block·block_dim + thread runs task g of the body when g < threads; with lanes
// (CpuPlan::lanes: a warp or a thread block per task), task g / lanes as lane g % lanes. Under
// grid emulation a task's lane 0 runs the whole task (every lane's work: emit_reductions.cpp's
// warp_total, emit_tiled_gemm.cpp's phases) and the other lanes nothing, whoever calls them
// (emulated_entry calls lane 0 only; the tests' fake driver calls every thread).
llvm::Function* grid_function(llvm::Module& m, const std::string& symbol, llvm::Function* body, int64_t lanes,
                              bool emulated) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* i64 = b.getInt64Ty();
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), i64, i64, i64, i64}, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::InternalLinkage, symbol + ".grid", m);
  fn->setDoesNotThrow();
  fn->addFnAttr(llvm::Attribute::AlwaysInline);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  auto* run = llvm::BasicBlock::Create(ctx, "run", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.SetInsertPoint(entry);
  llvm::Value* global = b.CreateAdd(b.CreateMul(fn->getArg(2), fn->getArg(3)), fn->getArg(4), "global");
  llvm::Value* active = b.CreateICmpSLT(global, fn->getArg(1));
  if (lanes > 1 && emulated) active = b.CreateAnd(active, b.CreateICmpEQ(b.CreateURem(global, b.getInt64(lanes)), b.getInt64(0)));
  b.CreateCondBr(active, run, done);
  b.SetInsertPoint(run);
  if (lanes > 1) {
    llvm::Value* task = b.CreateUDiv(global, b.getInt64(lanes), "task");
    b.CreateCall(body, {fn->getArg(0), task, b.CreateAdd(task, b.getInt64(1)), b.CreateURem(global, b.getInt64(lanes))});
  } else {
    b.CreateCall(body, {fn->getArg(0), global, b.CreateAdd(global, b.getInt64(1))});
  }
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return fn;
}

// The PTX kernel: void @sym(ptr closure, i64 tasks), launched with kBlock threads per block
// (KernelCall::block, which the runtime's bundle validation holds to 256): the block's size is
// that constant, not %ntid.x. (A product of %ctaid.x and %ntid.x whose lowest bit alone indexes
// a dim of 2 is a 1-bit multiply after LLVM 16's DAG combines, which its NVPTX selection cannot
// select, llvm-project#57404: nanoGPT's masked attention at T = 1 failed so.) No .reqntid: with
// it ptxas trades registers for occupancy (resnet18's tiled convs 72 → 64 registers and a
// spill), which no GPU has measured.
void gpu_entry(llvm::Module& m, const std::string& symbol, llvm::Function* grid) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto* i64 = b.getInt64Ty();
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), i64}, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol, m);
  fn->setDoesNotThrow();
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
  auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
  b.CreateCall(grid, {fn->getArg(0), fn->getArg(1), sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), b.getInt64(kBlock),
                      sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x)});
  b.CreateRetVoid();
  llvm::NamedMDNode* annotations = m.getOrInsertNamedMetadata("nvvm.annotations");
  llvm::MDBuilder md(ctx);
  annotations->addOperand(llvm::MDNode::get(
      ctx, {llvm::ValueAsMetadata::get(fn), md.createString("kernel"), md.createConstant(b.getInt32(1))}));
}

// for (i = count - 1; i >= 0; --i) body(i), at b (left after the loop).
void countdown(llvm::IRBuilder<>& b, llvm::Value* count, const std::function<void(llvm::Value*)>& body) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = fn->getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx, "loop", fn);
  auto* exit = llvm::BasicBlock::Create(ctx, "loop.end", fn);
  llvm::Value* last = b.CreateSub(count, b.getInt64(1));
  b.CreateCondBr(b.CreateICmpSGT(count, b.getInt64(0)), header, exit);
  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, "i");
  i->addIncoming(last, pre);
  body(i);
  llvm::Value* next = b.CreateSub(i, b.getInt64(1));
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSGE(next, b.getInt64(0)), header, exit);
  b.SetInsertPoint(exit);
}

// Grid emulation: void @sym(void* const* buffers, const int64_t* symbols, ctx), the CPU ABI,
// running every block and thread of the launch; of a warp, block or tiled plan's tasks, lane 0
// only (emulated, it computes every lane's part: the others would repeat its work and store).
void emulated_entry(llvm::Module& m, const ir::Graph& g, const ScheduledKernel& k, const cpu::KernelBody& body,
                    llvm::Function* grid, int64_t lanes) {
  llvm::IRBuilder<> b(m.getContext());
  const cpu::KernelEntry entry = cpu::begin_kernel_entry(b, m, g, k, body);
  llvm::Value* closure = entry.closure;
  llvm::Value* tasks = b.CreateMul(entry.tasks, b.getInt64(lanes), "threads");
  llvm::Value* block_dim = b.getInt64(kBlock);
  llvm::Value* blocks = b.CreateSDiv(b.CreateAdd(tasks, b.getInt64(kBlock - 1)), block_dim);
  countdown(b, blocks, [&](llvm::Value* block) {
    countdown(b, b.getInt64(kBlock / lanes), [&](llvm::Value* warp) {
      b.CreateCall(grid, {closure, tasks, block, block_dim, b.CreateMul(warp, b.getInt64(lanes), "thread")});
    });
  });
  b.CreateRetVoid();
}

}  // namespace

ir::Bytes codegen_cuda(const Schedule& s, const std::vector<cpu::CpuPlan>& plans, const Options& options,
                       std::vector<ir::SymExpr>& threads, std::vector<PassTiming>* phases) {
  AOT_CHECK(plans.size() == s.kernels.size(), "CUDA codegen needs one plan per scheduled kernel");
  const auto start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  llvm::Module module("aotrace_cuda_kernels", context);
  module.setSourceFileName("aotrace_cuda_kernels");
  if (!options.cuda_grid_emulation) {
    module.setTargetTriple(kNvptxTriple);
    module.setDataLayout(kNvptxDataLayout);
  }
  // One lane: a GPU thread computes one element; the emitter's CPU vector paths stay off.
  const cpu::CpuTarget target{1, !options.cuda_grid_emulation};
  std::map<std::string, ir::SymExpr> emitted;  // kernels with the same code share a symbol
  threads.clear();
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const ScheduledKernel& k = s.kernels[i];
    if (auto it = emitted.find(k.symbol); it != emitted.end()) {
      threads.push_back(it->second);
      continue;
    }
    cpu::KernelBody body = cpu::emit_kernel_body(module, s.fused.graph, k, plans[i], target);
    const int64_t lanes = plans[i].lanes;
    llvm::Function* grid = grid_function(module, k.symbol, body.fn, lanes, options.cuda_grid_emulation);
    if (options.cuda_grid_emulation) {
      emulated_entry(module, s.fused.graph, k, body, grid, lanes);
      grid->setLinkage(llvm::Function::ExternalLinkage);  // for the runtime tests' fake CUDA driver
    } else {
      gpu_entry(module, k.symbol, grid);
    }
    const ir::SymExpr launch = body.tasks * ir::SymExpr(lanes);
    emitted.emplace(k.symbol, launch);
    threads.push_back(launch);
  }
  if (phases != nullptr)
    phases->push_back({"llvm-ir", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  if (options.cuda_grid_emulation) {
    std::unique_ptr<llvm::TargetMachine> tm = cpu::make_target_machine(options);
    return cpu::optimise_and_emit(module, *tm, options.opt_level, phases);
  }
  // Optimised once, in link_cuda_kernels, with libdevice and for each arch.
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::WriteBitcodeToFile(module, out);
  return ir::Bytes(buffer.begin(), buffer.end());
}

}  // namespace aotrace::lowering::cuda
