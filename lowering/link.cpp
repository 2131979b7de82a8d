// link_cpu_library: links kernel objects into one shared library with ld.lld-16 (no other
// toolchain needed, also when cross-compiling). Kernels call libm (sinf, pow, f64 exp, …): when the
// target's libm.so.6 is found it is linked --as-needed so the .so records DT_NEEDED libm.so.6;
// otherwise the symbols stay undefined and resolve against the runtime process (which has libm
// through libstdc++). --build-id=none and fixed file names keep the output byte-identical.
// Test: lowering_tests Link.*, and every end-to-end kernel test (they dlopen the result).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lowering/lowering.h"

extern char** environ;

namespace aotrace::lowering {
namespace fs = std::filesystem;
namespace {

std::string libm_for(const std::string& triple) {
  std::string arch = triple.substr(0, triple.find('-'));
  for (std::string dir : {"/lib/" + arch + "-linux-gnu", "/usr/lib/" + arch + "-linux-gnu",
                          "/usr/" + arch + "-linux-gnu/lib"}) {
    if (fs::exists(dir + "/libm.so.6")) return dir + "/libm.so.6";
  }
  return {};
}

}  // namespace

void write_file(const fs::path& path, const ir::Bytes& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  AOT_CHECK(f.good(), "cannot write " + path.string());
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

int run_tool(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) internal_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) internal_error("waitpid failed for " + argv[0]);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

fs::path make_temp_dir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  AOT_CHECK(mkdtemp(pattern.data()) != nullptr, "cannot create a temporary directory");
  return pattern;
}

ir::Bytes read_bytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return ir::Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

ir::Bytes link_cpu_library(const std::vector<ir::Bytes>& objects, const Options& options) {
  fs::path dir = make_temp_dir("aotrace-link");
  std::vector<std::string> argv = {AOTRACE_LD_LLD, "-shared", "--build-id=none", "-o",
                                   (dir / "lib.so").string()};
  for (size_t i = 0; i < objects.size(); ++i) {
    fs::path obj = dir / ("k" + std::to_string(i) + ".o");
    write_file(obj, objects[i]);
    argv.push_back(obj.string());
  }
  if (std::string libm = libm_for(resolved_triple(options)); !libm.empty()) {
    argv.push_back("--as-needed");
    argv.push_back(libm);
  }
  int status = run_tool(argv, dir / "ld.log");
  if (status != 0) {
    std::string log = read_text(dir / "ld.log");
    fs::remove_all(dir);
    internal_error("ld.lld failed (exit " + std::to_string(status) + "):\n" + log);
  }
  ir::Bytes bytes = read_bytes(dir / "lib.so");
  fs::remove_all(dir);
  return bytes;
}

}  // namespace aotrace::lowering
