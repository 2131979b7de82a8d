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
  // The CUDA images were hashed with every file; this runtime runs the CPU kernels only.
  if (const std::vector<rt::CudaImageInfo>& cuda_images = b->cuda_images(); !cuda_images.empty()) {
    std::string images;
    for (const rt::CudaImageInfo& image : cuda_images)
      images += (images.empty() ? "" : ", ") + std::string(image.ptx ? "PTX " : "") + image.arch;
    std::cout << "aotrace verify: " << dir << ": CUDA kernels (" << images << ") not run: this runtime launches the "
              << "CPU kernels only\n";
    const rt::CudaDeviceInfo gpu = rt::probe_cuda_device();
    std::cout << "aotrace verify: " << dir << ": ";
    if (!gpu.driver) {
      std::cout << "no CUDA driver here (" << gpu.error << ")\n";
    } else if (gpu.devices == 0 || !gpu.error.empty()) {
      std::cout << "CUDA driver " << gpu.driver_version / 1000 << "." << gpu.driver_version % 1000 / 10 << ", "
                << (gpu.error.empty() ? "no GPU" : gpu.error) << "\n";
    } else {
      const int image = rt::choose_cuda_image(cuda_images, gpu.arch);
      std::cout << "GPU 0 is " << gpu.arch << " with " << gpu.memory_bytes / (1 << 20) << " MiB, CUDA driver "
                << gpu.driver_version / 1000 << "." << gpu.driver_version % 1000 / 10 << ": "
                << (image < 0 ? "no image of the bundle fits it (compile with --cuda-arch " + gpu.arch + ")"
                              : "it would load " + cuda_images[static_cast<size_t>(image)].path)
                << "\n";
    }
  }
  size_t checked = 0;
  rt::Status s = b->selftest(&checked);
  if (!s.ok()) {
    std::cerr << "aotrace verify: " << dir << ": FAILED\n  " << s.message() << "\n";
    return 1;
  }
  std::cout << "aotrace verify: " << dir << ": " << checked << " golden pair(s) match\n";
  return 0;
}

}  // namespace aotrace::cli
