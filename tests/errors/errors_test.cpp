// User-facing failures of the CLI (STYLE 14): each case asserts the exit code (DESIGN §7) and
// the message it expects: what, where (file:line[:col]) and a hint.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/subprocess.h"

namespace fs = std::filesystem;
using aotrace::test::expect_contains;
using aotrace::test::quote;
using aotrace::test::run_command;

namespace {

const fs::path kCases = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "errors" / "cases";

aotrace::test::CommandResult aotrace_cli(const std::string& args) {
  return run_command(quote(AOTRACE_CLI) + " " + args);
}

TEST(CompileErrors, BranchOnItemIsAGraphBreakWithFileLine) {
  const fs::path out = fs::temp_directory_path() / "aotrace-errors-item.aot";
  auto r = aotrace_cli("compile " + quote((kCases / "item_branch.yaml").string()) + " -o " + quote(out.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: graph break: .item() reads a tensor's value");
  expect_contains(r.output, "--> " + (kCases / "item_branch.py").string() + ":6 in gate");
  expect_contains(r.output, "[tensor value read]");
  expect_contains(r.output, "hint: keep the computation in tensors");
  EXPECT_FALSE(fs::exists(out)) << "a failed compile must not leave a bundle";
}

TEST(CompileErrors, ExplainReportsTheBreakWithoutFailing) {
  auto r = aotrace_cli("explain --json " + quote((kCases / "item_branch.yaml").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "\"graph_break_count\":1");
  expect_contains(r.output, "\"category\":\"tensor value read\"");
  expect_contains(r.output, "\"line\":6");
}

TEST(CompileErrors, YamlErrorNamesFileLineColumn) {
  auto r = aotrace_cli("compile " + quote((kCases / "bad_dtype.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "float33");
  expect_contains(r.output, "--> " + (kCases / "bad_dtype.yaml").string() + ":7:");
  expect_contains(r.output, "hint:");
}

TEST(CompileErrors, ScriptExceptionNamesTheScriptLine) {
  auto r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "RuntimeError: the script fails while loading");
  expect_contains(r.output, "--> " + (kCases / "raises.py").string() + ":4");
}

TEST(CompileErrors, UnknownCallExpression) {
  auto r = aotrace_cli("compile " + quote((kCases / "bad_call.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "no_such_model");
  expect_contains(r.output, "hint:");
}

TEST(CompileErrors, MissingSpecFile) {
  auto r = aotrace_cli("compile /nonexistent/spec.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "/nonexistent/spec.yaml");
}

TEST(UsageErrors, NoSubcommandIsExit2) {
  auto r = aotrace_cli("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(UsageErrors, UnknownOptionIsExit2) {
  auto r = aotrace_cli("compile --frobnicate x.yaml");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(RunErrors, MissingBundle) {
  auto r = aotrace_cli("run /nonexistent.aot --input x=x.npy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "/nonexistent.aot");
}

TEST(RunErrors, BadInputSyntax) {
  auto r = aotrace_cli("run /nonexistent.aot --input x.npy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "--input 'x.npy' is not NAME=FILE.npy");
}

}  // namespace
