// link_cuda_kernels: the variants' CUDA kernels (bitcode from codegen_cuda) in one LLVM module;
// the math the CPU backend leaves to libm (llvm.sin, pow, tanhf, erff, f64 exp, …) becomes
// libdevice's (__nv_sinf, …, linked from the toolkit's libdevice.10.bc, FTZ off); then LLVM's
// NVPTX backend writes PTX once, for the oldest arch asked for, and the toolkit's ptxas
// assembles it into a cubin for each arch.
// check_cuda_toolkit finds the toolkit and checks the archs before any capture.
// Test: lowering_tests Cuda.PtxasAssembles*, e2e_tests (every model compiled for cuda too).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <regex>
#include <set>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/MemoryBuffer.h>

#include "lowering/cpu/llvm_backend.h"
#include "lowering/cuda/cuda_backend.h"

namespace aotrace::lowering {
namespace fs = std::filesystem;
namespace {

using cuda::kNvptxTriple;

// LLVM 16's newest PTX ISA; sm_90 needs 7.8. ptxas of CUDA 12 and 13 read it.
const char* const kPtxFeatures = "+ptx78";
const int kMinArch = 75;  // the oldest GPU CUDA 13 builds for

fs::path cuda_home() {
  const char* env = std::getenv("CUDA_HOME");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path("/usr/local/cuda");
}

std::unique_ptr<llvm::Module> parse_bitcode(const llvm::MemoryBufferRef& buffer, llvm::LLVMContext& ctx,
                                            const std::string& what) {
  llvm::Expected<std::unique_ptr<llvm::Module>> m = llvm::parseBitcodeFile(buffer, ctx);
  if (!m) internal_error("cannot read " + what + ": " + llvm::toString(m.takeError()));
  return std::move(*m);
}

// The libdevice function for a call to `callee`, or "": llvm.<f>.f32 → __nv_<f>f, llvm.<f>.f64 →
// __nv_<f>, and the libm functions (tanhf, erf, …) → __nv_ and the same name.
std::string libdevice_name(const llvm::Function& callee) {
  static const std::set<std::string> intrinsics = {"exp", "exp2", "log", "log2", "log10", "sin", "cos", "pow"};
  std::string name = callee.getName().str();
  if (callee.isIntrinsic()) {
    std::smatch m;
    static const std::regex pattern(R"(llvm\.(\w+)\.(f32|f64))");
    if (!std::regex_match(name, m, pattern) || intrinsics.count(m[1]) == 0) return "";
    return "__nv_" + m[1].str() + (m[2] == "f32" ? "f" : "");
  }
  return callee.isDeclaration() && !name.empty() && name.rfind("__nv_", 0) != 0 ? "__nv_" + name : "";
}

// Redirects the module's math calls to libdevice's functions (declared here, defined by the link).
void use_libdevice(llvm::Module& m) {
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
          if (llvm::Function* callee = call->getCalledFunction(); callee != nullptr && !libdevice_name(*callee).empty())
            calls.push_back(call);
  for (llvm::CallInst* call : calls) {
    llvm::Function* callee = call->getCalledFunction();
    llvm::FunctionCallee replacement = m.getOrInsertFunction(libdevice_name(*callee), callee->getFunctionType());
    call->setCalledFunction(replacement);
  }
}

bool is_kernel(const llvm::Module& m, const llvm::Function& f) {
  if (const llvm::NamedMDNode* annotations = m.getNamedMetadata("nvvm.annotations"))
    for (const llvm::MDNode* op : annotations->operands())
      if (op->getNumOperands() >= 1)
        if (auto* v = llvm::dyn_cast_or_null<llvm::ValueAsMetadata>(op->getOperand(0).get()); v != nullptr && v->getValue() == &f)
          return true;
  return false;
}

std::unique_ptr<llvm::TargetMachine> nvptx_machine(const std::string& arch, int opt_level) {
  cpu::initialise_llvm_targets();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kNvptxTriple, error);
  AOT_CHECK(target != nullptr, "this LLVM has no NVPTX target: " + error);
  auto level = opt_level <= 0 ? llvm::CodeGenOpt::None : llvm::CodeGenOpt::Default;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(kNvptxTriple, arch, kPtxFeatures, {}, std::nullopt,
                                                                      std::nullopt, level));
  AOT_CHECK(tm != nullptr, "no NVPTX target machine for " + arch);
  return tm;
}

// LLVM reports a backend failure (an instruction NVPTX cannot select: LLVM 16 has such bugs) as a
// fatal error that aborts the process; it becomes aotrace's internal error and exit code 3.
void nvptx_fatal_error(void* /*user_data*/, const char* reason, bool /*gen_crash_diag*/) {
  std::cerr << InternalError(std::string("LLVM's NVPTX backend failed on the CUDA kernels: ") + reason).render()
            << "  meanwhile, compile for `targets: [cpu]`\n";
  std::_Exit(3);
}

}  // namespace

std::string check_cuda_toolkit(const Options& options) {
  const fs::path home = cuda_home();
  if (!fs::exists(home / "bin" / "ptxas"))
    user_error("the CUDA toolkit's ptxas is not at " + (home / "bin" / "ptxas").string() + ": it assembles the GPU kernels",
               {}, "install the CUDA toolkit (12 or newer) at /usr/local/cuda, or set CUDA_HOME to its folder; or build for "
                   "`targets: [cpu]` only");
  if (!fs::exists(home / "nvvm" / "libdevice" / "libdevice.10.bc"))
    user_error("the CUDA toolkit at " + home.string() + " has no nvvm/libdevice/libdevice.10.bc (its math library)", {},
               "install the complete CUDA toolkit, or set CUDA_HOME to a folder that has it");
  if (options.cuda_archs.empty()) user_error("no CUDA architecture given", {}, "pass --cuda-arch sm_90,sm_80");
  static const std::regex arch(R"(sm_(\d+))");
  for (const std::string& a : options.cuda_archs) {
    std::smatch m;
    if (!std::regex_match(a, m, arch))
      user_error("'" + a + "' is not a CUDA architecture", {}, "name GPUs as sm_<compute capability>: --cuda-arch sm_90,sm_80");
    if (std::count(options.cuda_archs.begin(), options.cuda_archs.end(), a) > 1)
      user_error("CUDA architecture " + a + " is given twice", {}, "name each GPU once: --cuda-arch sm_90,sm_80");
    if (std::stoi(m[1]) < kMinArch)
      user_error("CUDA architecture " + a + " is older than this toolkit builds for (sm_" + std::to_string(kMinArch) + ")",
                 {}, "choose sm_75 or newer: sm_80 (A100), sm_89 (L4), sm_90 (H100/H200)");
    if (options.cuda_math != Options::CudaMath::f32 && std::stoi(m[1]) < cuda::kMmaMinArch)
      user_error(std::string("cuda_math ") + cuda_math_name(options.cuda_math) +
                     " needs the tensor-core mma of sm_80 or newer, and " + a + " is older",
                 {}, "drop " + a + " from --cuda-arch, or build it with `cuda_math: f32`");
  }
  return home.string();
}

CudaLibrary link_cuda_kernels(const std::vector<ir::Bytes>& bitcode, const Options& options) {
  const fs::path home = check_cuda_toolkit(options);
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>("aotrace_cuda_kernels", ctx);
  module->setTargetTriple(kNvptxTriple);
  module->setDataLayout(cuda::kNvptxDataLayout);
  llvm::Linker linker(*module);
  for (size_t i = 0; i < bitcode.size(); ++i) {
    llvm::StringRef bytes(reinterpret_cast<const char*>(bitcode[i].data()), bitcode[i].size());
    if (linker.linkInModule(parse_bitcode(llvm::MemoryBufferRef(bytes, "variant"), ctx, "a variant's CUDA bitcode")))
      internal_error("cannot link the CUDA kernels of variant " + std::to_string(i));
  }
  use_libdevice(*module);
  const fs::path libdevice_path = home / "nvvm" / "libdevice" / "libdevice.10.bc";
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(libdevice_path.string());
  if (!file) user_error("cannot read " + libdevice_path.string() + ": " + file.getError().message(), {}, "check the CUDA toolkit");
  std::unique_ptr<llvm::Module> libdevice = parse_bitcode((*file)->getMemBufferRef(), ctx, libdevice_path.string());
  libdevice->setTargetTriple(kNvptxTriple);
  libdevice->setDataLayout(module->getDataLayout());
  if (llvm::Linker::linkModules(*module, std::move(libdevice), llvm::Linker::Flags::LinkOnlyNeeded))
    internal_error("cannot link libdevice into the CUDA kernels");
  // Only the kernels are entry points: everything else may be inlined away.
  for (llvm::Function& f : *module)
    if (!f.isDeclaration() && !is_kernel(*module, f)) f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::Function& f : *module)
    if (f.isDeclaration() && !f.isIntrinsic() && !f.use_empty() && f.getName() != "__nvvm_reflect")
      internal_error("the CUDA kernels call " + f.getName().str() + ", which neither libdevice nor aotrace defines");
  // libdevice asks __nvvm_reflect("__CUDA_FTZ"); NVPTX's NVVMReflect pass (in every pipeline of
  // its target machine) answers from this flag: subnormals kept, as on the CPU.
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", static_cast<uint32_t>(0));

  // PTX once, for the oldest arch (a newer GPU's ptxas and driver take it too); ptxas assembles
  // it for each arch (e2e models for sm_80 and sm_90: 43 -> 19 s with the tiled GEMMs).
  auto arch_number = [](const std::string& a) { return std::stoi(a.substr(3)); };
  const std::string oldest = *std::min_element(options.cuda_archs.begin(), options.cuda_archs.end(),
                                               [&](const std::string& x, const std::string& y) {
                                                 return arch_number(x) < arch_number(y);
                                               });
  CudaLibrary library;
  llvm::ScopedFatalErrorHandler on_fatal_error(nvptx_fatal_error);
  std::unique_ptr<llvm::TargetMachine> tm = nvptx_machine(oldest, options.opt_level);
  const ir::Bytes ptx = cpu::optimise_and_emit(*module, *tm, options.opt_level, nullptr, llvm::CGFT_AssemblyFile);
  library.ptx_arch = oldest;
  library.ptx.assign(ptx.begin(), ptx.end());
  const fs::path dir = make_temp_dir("aotrace-ptxas");
  const fs::path ptx_file = dir / (oldest + ".ptx");
  write_file(ptx_file, ptx);
  // One ptxas per arch, side by side.
  std::vector<std::future<int>> runs;
  for (const std::string& arch : options.cuda_archs)
    runs.push_back(std::async(std::launch::async, [&, arch] {
      return run_tool({(home / "bin" / "ptxas").string(), "-arch=" + arch, "-O3", "-o", (dir / (arch + ".cubin")).string(),
                       ptx_file.string()},
                      dir / (arch + ".log"));
    }));
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string& arch = options.cuda_archs[i];
    const int status = runs[i].get();
    if (status != 0) {
      for (size_t j = i + 1; j < runs.size(); ++j) runs[j].wait();
      std::string text = read_text(dir / (arch + ".log"));
      fs::remove_all(dir);
      internal_error("ptxas rejected the " + arch + " kernels (exit " + std::to_string(status) + "):\n" + text);
    }
    library.cubins.emplace_back(arch, read_bytes(dir / (arch + ".cubin")));
  }
  fs::remove_all(dir);
  return library;
}

}  // namespace aotrace::lowering
