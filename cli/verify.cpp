// `aotrace verify BUNDLE`: integrity (every file's size and XXH3, the FlatBuffers verifier, the
// plans' consistency) and compatibility with this machine (format version, required features,
// target triple, CPU features, kernels loadable), then the golden vectors (`aotrace run BUNDLE
// --selftest` runs those alone: run_tool.cpp).
#include <iostream>

#include "artifacts/runtime/aotrace_runtime.h"
#include "cli/commands.h"

namespace aotrace::cli {

int verify_command(const std::filesystem::path& bundle) {
  const std::string dir = bundle.string();
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
  if (const std::vector<rt::CudaImageInfo>& cuda_images = b->cuda_images(); !cuda_images.empty()) {
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
    } else if (gpu.devices == 0 || !gpu.error.empty()) {
      std::cout << what << " not run: " << driver << ", " << (gpu.error.empty() ? "no GPU" : gpu.error) << "\n";
    } else if (image < 0) {
      std::cout << what << " not run: GPU 0 is " << gpu.arch << ", which no image of the bundle fits (compile with "
                << "--cuda-arch " << gpu.arch << ")\n";
    } else {
      rt::OpenOptions on_gpu;
      on_gpu.verify_hashes = false;  // hashed above
      on_gpu.device = rt::DeviceKind::cuda;
      auto g = rt::Bundle::open(dir, on_gpu);
      size_t gpu_checked = 0;
      rt::Status gs = g.ok() ? g->selftest(&gpu_checked) : g.status();
      if (!gs.ok()) {
        std::cerr << what << " on GPU 0 (" << gpu.arch << "): FAILED\n  " << gs.message() << "\n";
        return 1;
      }
      std::cout << what << ": " << gpu_checked << " golden pair(s) match on GPU 0 (" << gpu.arch << ", "
                << gpu.memory_bytes / (1 << 20) << " MiB, " << driver << ") with " << g->cuda_image() << "\n";
    }
  }
  return 0;
}

}  // namespace aotrace::cli
