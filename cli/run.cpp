// `aotrace run`: the command the standalone aotrace_run also is (artifacts/runtime/run_tool.h),
// so that both take the same options, write the same files and print the same lines. A failure
// of the inputs or the bundle is a user_error (exit 1); a wrong command line exits 2.
#include <iostream>

#include "artifacts/runtime/run_tool.h"
#include "cli/commands.h"

namespace aotrace::cli {

int run_command(const std::vector<std::string>& args) {
  const std::string command = "aotrace run";
  rt::RunToolOptions options;
  rt::ToolStatus status = rt::parse_run_tool_args(args, options);
  if (status.ok()) status = rt::run_tool(options, command, std::cout, std::cerr);
  if (status.exit_code == 1) throw UserError(status.what, {}, status.hint);
  if (!status.ok()) std::cerr << rt::render_tool_status(status, command);
  return status.exit_code;
}

}  // namespace aotrace::cli
