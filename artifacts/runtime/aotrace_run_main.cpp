// aotrace_run: runs one entry of a bundle on .npy inputs, standalone (no compiler, no Python).
// The same command as `aotrace run` (run_tool.h: the same options, files and messages):
//   aotrace_run BUNDLE_DIR [--entry NAME] --input x=in.npy ... [--output-dir DIR] [--json]
//   aotrace_run BUNDLE_DIR --selftest     the bundle's golden vectors (Bundle::selftest)
//   aotrace_run --help
// Exit codes as `aotrace run`: 0 success, 1 the inputs are wrong (guard miss) or the bundle is
// unusable, 2 the command line is wrong.
#include <iostream>
#include <string>
#include <vector>

#include "run_tool.h"

int main(int argc, char** argv) {
  using namespace aotrace::rt;
  const std::string command = "aotrace_run";
  RunToolOptions options;
  ToolStatus status = parse_run_tool_args(std::vector<std::string>(argv + 1, argv + argc), options);
  if (status.ok()) status = run_tool(options, command, std::cout, std::cerr);
  if (!status.ok()) std::cerr << render_tool_status(status, command);
  return status.exit_code;
}
