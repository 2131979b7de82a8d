// `aotrace verify BUNDLE`: integrity (every file's size and XXH3, the FlatBuffers verifier, the
// plans' consistency) and compatibility with this machine (format version, required features,
// target triple, CPU features, kernels loadable), then the golden vectors; and
// `aotrace run BUNDLE --selftest`, the golden vectors alone.
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
  return 0;
}

int selftest_command(const std::filesystem::path& bundle) {
  auto b = rt::Bundle::open(bundle.string());
  if (!b.ok()) throw UserError(b.status().message(), {}, "run `aotrace verify` for details");
  size_t checked = 0;
  rt::Status s = b->selftest(&checked);
  if (!s.ok()) {
    std::cerr << "aotrace run --selftest: FAILED: " << s.message() << "\n";
    return 1;
  }
  if (checked == 0) user_error("bundle " + bundle.string() + " has no golden vectors", {},
                               "recompile it with this aotrace, which writes golden/");
  std::cout << "aotrace run --selftest: " << checked << " golden pair(s) match\n";
  return 0;
}

}  // namespace aotrace::cli
