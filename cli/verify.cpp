// `aotrace verify BUNDLE`: integrity (every file's size and XXH3, the FlatBuffers verifier, the
// plans' consistency) and compatibility with this machine (format version, required features,
// target triple, CPU features, kernels loadable), then the golden vectors (`aotrace run BUNDLE
// --selftest` runs those alone: run_tool.cpp); with CUDA kernels and a GPU here, the golden
// vectors on GPU 0 too (a `targets: [cuda]` bundle: there only).
#include <iostream>

#include "artifacts/runtime/aotrace_runtime.h"
#include "cli/commands.h"

namespace aotrace::cli {

namespace {

// The golden vectors through the CUDA kernels on GPU 0, when a driver and a fitting image are
// here: 0 when they match, 1 when they do not (or the GPU refuses the bundle), 2 when they
// could not run here (the reason printed). `hashed`: open() already checked the files.
int verify_on_gpu(const std::string& dir, const std::vector<rt::CudaImageInfo>& cuda_images, bool hashed) {
  std::string images;
  for (const rt::CudaImageInfo& image : cuda_images)
    images += (images.empty() ? "" : ", ") + std::string(image.ptx ? "PTX " : "") + image.arch;
  const std::string what = "aotrace verify: " + dir + ": CUDA kernels (" + images + ")";
  const rt::CudaDeviceInfo gpu = rt::probe_cuda_device();
  const std::string driver = "CUDA driver " + std::to_string(gpu.driver_version / 1000) + "." +
                             std::to_string(gpu.driver_version % 1000 / 10);
  const int image = gpu.arch.empty() ? -1 : rt::choose_cuda_image(cuda_images, gpu.arch);
  if (!gpu.driver) {
    std::cout << what << " not run: no CUDA driver here (" << gpu.error << ")\n";
    return 2;
  }
  if (gpu.devices == 0 || !gpu.error.empty()) {
    std::cout << what << " not run: " << driver << ", " << (gpu.error.empty() ? "no GPU" : gpu.error) << "\n";
    return 2;
  }
  if (image < 0) {
    std::cout << what << " not run: GPU 0 is " << gpu.arch << ", which no image of the bundle fits (compile with "
              << "--cuda-arch " << gpu.arch << ")\n";
    return 2;
  }
  rt::OpenOptions on_gpu;
  on_gpu.verify_hashes = !hashed;
  on_gpu.device = rt::DeviceKind::cuda;
  auto g = rt::Bundle::open(dir, on_gpu);
  size_t checked = 0;
  rt::Status s = g.ok() ? g->selftest(&checked) : g.status();
  if (!s.ok()) {
    std::cerr << what << " on GPU 0 (" << gpu.arch << "): FAILED\n  " << s.message() << "\n";
    return 1;
  }
  if (!hashed) std::cout << "aotrace verify: " << dir << ": format " << g->format_major() << "." << g->format_minor()
                         << ", every file's size and XXH3 hash match\n";
  std::cout << what << ": " << checked << " golden pair(s) match on GPU 0 (" << gpu.arch << ", "
            << gpu.memory_bytes / (1 << 20) << " MiB, " << driver << ") with " << g->cuda_image() << "\n";
  return 0;
}

}  // namespace

int verify_command(const std::filesystem::path& bundle) {
  const std::string dir = bundle.string();
  // A bundle of CUDA kernels only (`targets: [cuda]`) runs on a GPU or nowhere.
  if (auto info = rt::read_bundle_info(dir);
      info.ok() && !info->cuda_images.empty() && info->cpu_libraries.front().path.empty()) {
    const int gpu = verify_on_gpu(dir, info->cuda_images, false);
    if (gpu == 2)
      std::cerr << "aotrace verify: " << dir << ": FAILED\n  the bundle has CUDA kernels only and cannot run "
                << "here; compile with `targets: [cpu, cuda]` to run its CPU kernels on machines without a GPU\n";
    return gpu == 0 ? 0 : 1;
  }
  auto b = rt::Bundle::open(dir);
  if (!b.ok()) {
    std::cerr << "aotrace verify: " << dir << ": FAILED\n  " << b.status().message() << "\n";
    return 1;
  }
  std::cout << "aotrace verify: " << dir << ": format " << b->format_major() << "."
            << b->format_minor() << ", every file's size and XXH3 hash match, kernels for "
            << b->triple() << " (cpu " << (b->cpu().empty() ? "unrecorded" : b->cpu())
            << ") load on this machine\n";
  const auto& libraries = b->cpu_libraries();
  if (!b->cpu_library().empty()) {
    std::cout << "aotrace verify: " << dir << ": this machine uses " << b->cpu_library() << " (cpu "
              << (b->cpu().empty() ? "unrecorded" : b->cpu()) << ")";
    if (libraries.size() > 1)
      std::cout << (b->cpu_library() == libraries.front().path ? ", the portable baseline" : ", faster than the baseline")
                << ", of " << libraries.size() << " kernel libraries";
    std::cout << "\n";
  }
  size_t checked = 0;
  rt::Status s = b->selftest(&checked);
  if (!s.ok()) {
    std::cerr << "aotrace verify: " << dir << ": FAILED\n  " << s.message() << "\n";
    return 1;
  }
  std::cout << "aotrace verify: " << dir << ": " << checked << " golden pair(s) match\n";
  // The CUDA images were hashed with every file; on a machine with a GPU that one of them fits,
  // the golden vectors run through the CUDA kernels too.
  if (!b->cuda_images().empty() && verify_on_gpu(dir, b->cuda_images(), true) == 1) return 1;
  return 0;
}

}  // namespace aotrace::cli
