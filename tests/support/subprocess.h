// Test support: run a command line, capture its exit code and output, and check that output.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

namespace aotrace::test {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Tests compile fresh, whatever the machine's compile cache holds: the commands run with
// AOTRACE_NO_CACHE=1, and a test of the cache passes --cache-dir, which overrides it.
inline CommandResult run_command(const std::string& command) {
  ::setenv("AOTRACE_NO_CACHE", "1", 1);
  CommandResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string quote(const std::string& s) { return "'" + s + "'"; }

// A test failure, showing all of `text`, unless `part` occurs in it.
inline void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "expected '" << part << "' in:\n" << text;
}

}  // namespace aotrace::test
