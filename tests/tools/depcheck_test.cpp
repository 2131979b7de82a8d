// tools/depcheck.py: `check` against the real dpkg database of this machine (whose packages
// `make deps` installed), with a trace of a fuzzer build and one of files no package installs;
// `record` of a real command in its private mount namespace; CMake's configure-time check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/subprocess.h"

namespace {
namespace fs = std::filesystem;
using aotrace::test::expect_contains;
using aotrace::test::quote;
using aotrace::test::run_command;

const std::string kDepcheck = quote(DEPCHECK);
const std::string kFuzzerTrace = quote(std::string(FIXTURES) + "/fuzzer_build_trace.txt");

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("aotrace_depcheck_" + std::to_string(::getpid()) + "_" + name);
}

TEST(DepcheckCheck, PassesWhenEveryFileComesFromMakeDeps) {
  auto r = run_command(kDepcheck + " check " + kFuzzerTrace);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "depcheck: ok: the run opened 7 files under /usr");
}

TEST(DepcheckCheck, NamesThePackageMissingFromTheList) {
  // The bug this check exists for: clang-16 alone does not pull in the sanitizer runtimes.
  auto r = run_command(kDepcheck + " check " + kFuzzerTrace + " --without libclang-rt-16-dev");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "libclang-rt-16-dev: 2 file(s)");
  expect_contains(r.output, "/usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.fuzzer-x86_64.a  (opened by ld)");
  expect_contains(r.output, "hint: add libclang-rt-16-dev to ");
  // Nothing else is blamed: torch, LLVM and libc still come from the list or the base system.
  EXPECT_EQ(r.output.find("python3-torch"), std::string::npos) << r.output;
}

TEST(DepcheckCheck, ADependencyOfAListedPackageCounts) {
  // clang's own headers come from libclang-common-16-dev, which only clang-16 pulls in.
  auto trace = temp_path("dep.txt");
  std::ofstream(trace) << "/usr/lib/llvm-16/lib/clang/16/include/stddef.h\tclang\n";
  EXPECT_EQ(run_command(kDepcheck + " check " + quote(trace.string())).exit_code, 0);
  auto r = run_command(kDepcheck + " check " + quote(trace.string()) + " --without clang-16");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "libclang-common-16-dev: 1 file(s)");
  fs::remove(trace);
}

TEST(DepcheckCheck, FailsOnAFileNoPackageInstalled) {
  auto trace = temp_path("unowned.txt");
  std::ofstream(trace) << "/usr/local/lib/libmade_by_hand.so\tcc1plus\n"
                       << "/usr/lib/python3/dist-packages/x/__pycache__/y.cpython-311.pyc\tpython3\n";
  auto r = run_command(kDepcheck + " check " + quote(trace.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "1 file(s) under /usr that no Debian package installed");
  expect_contains(r.output, "/usr/local/lib/libmade_by_hand.so  (opened by cc1plus)");
  EXPECT_EQ(r.output.find("__pycache__"), std::string::npos) << "byte-code caches are generated";
  fs::remove(trace);
}

TEST(DepcheckCheck, AByteCodeCacheCountsAsItsSource) {
  // Python wrote the .pyc; torch/__init__.py, which python3-torch installed, is what it stands for.
  auto trace = temp_path("pyc.txt");
  std::ofstream(trace) << "/usr/lib/python3/dist-packages/torch/__pycache__/__init__.cpython-311.pyc\tpython3.11\n";
  EXPECT_EQ(run_command(kDepcheck + " check " + quote(trace.string())).exit_code, 0);
  auto r = run_command(kDepcheck + " check " + quote(trace.string()) +
                       " --without python3-torch --without python3-torchvision");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "python3-torch: 1 file(s)");
  fs::remove(trace);
}

TEST(DepcheckCheck, FilesToolsOpenOnlyBecauseTheyAreThereAreNoDependencies) {
  // site.py runs every .pth, importlib.metadata reads every egg-info, pkg-config every .pc.
  auto trace = temp_path("incidental.txt");
  std::ofstream(trace) << "/usr/lib/python3/dist-packages/not_ours.pth\tpython3.11\n"
                       << "/usr/lib/python3/dist-packages/not_ours-1.0.egg-info/PKG-INFO\tpython3.11\n"
                       << "/usr/lib/x86_64-linux-gnu/pkgconfig/not_ours.pc\tpkg-config\n";
  auto r = run_command(kDepcheck + " check " + quote(trace.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "the run opened 3 files under /usr; the 0 it needs");
  fs::remove(trace);
}

TEST(DepcheckCheck, RejectsAMissingTrace) {
  auto r = run_command(kDepcheck + " check /nonexistent/trace.txt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_contains(r.output, "depcheck: error: /nonexistent/trace.txt: no such file");
}

TEST(DepcheckRecord, RecordsWhatTheCommandOpensAndItsExitStatus) {
  if (::geteuid() != 0) GTEST_SKIP() << "depcheck record needs root (fanotify); CI runs as root";
  auto trace = temp_path("record.txt");
  // A file opened by this test's own process while the command runs is not the command's.
  auto r = run_command(kDepcheck + " record " + quote(trace.string()) +
                       " -- sh -c 'cat /usr/include/xxhash.h >/dev/null; exit 3'");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  std::ifstream in(trace);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_contains(text, "\n/usr/include/xxhash.h\t");
  expect_contains(text, "\n/usr/bin/cat\t");
  auto check = run_command(kDepcheck + " check " + quote(trace.string()));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  fs::remove(trace);
}

// cmake/dependencies.cmake: a clang++-16 that cannot link the sanitizer runtimes stops CMake
// at configure time, naming the package, rather than the build's last link step.
TEST(ConfigureCheck, AMissingSanitizerRuntimeStopsConfiguring) {
  auto dir = temp_path("configure");
  fs::create_directories(dir);
  auto fake_clang = dir / "clang++-16";
  std::ofstream(fake_clang)
      << "#!/bin/sh\necho '/usr/bin/ld: cannot find "
         "/usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.fuzzer-x86_64.a: No such file' >&2\n"
         "exit 1\n";
  fs::permissions(fake_clang, fs::perms::owner_all);
  auto r = run_command(quote(CMAKE_COMMAND) + " -S " + quote(AOTRACE_SOURCE_DIR) + " -B " +
                       quote((dir / "build").string()) + " -G Ninja -DAOT_CLANGXX_16=" +
                       quote(fake_clang.string()));
  EXPECT_NE(r.exit_code, 0) << r.output;
  expect_contains(r.output, "clang-16's sanitizer runtime (/usr/lib/llvm-16/lib/clang/16/lib/linux/"
                            "libclang_rt.fuzzer-x86_64.a) was not found (needed by the fuzzers");
  expect_contains(r.output, "Install Debian's libclang-rt-16-dev: `make deps` installs it");
  expect_contains(r.output, "-DAOTRACE_FUZZERS=OFF");
  fs::remove_all(dir);
}

}  // namespace
