// The `run` command of both `aotrace run` and the standalone `aotrace_run` (shipped in every
// bundle's runtime/): one option parser, one help text, and one way to run an entry on .npy
// files, write its outputs and say what ran, so that the two commands cannot drift apart.
//
//   aotrace_run BUNDLE [--entry NAME] --input NAME=FILE.npy ... [--output-dir DIR] [--json]
//   aotrace_run BUNDLE --selftest [--device cuda]
//   aotrace_run BUNDLE --input ... --device cuda --repeat 100   (latency on the device itself)
//
// It writes out0.npy, out1.npy, … in the flattened output order; an output inside a dict also
// under its keys (result['logits'] as logits.npy, result['pair'][1] as pair.1.npy); and
// updated_NAME.npy for each input the entry changes in place. stderr gets one line naming the
// entry, the variant the guards chose and its profiles; stdout gets each file with its place
// in the result, or with --json one JSON object (entry, variant, and per output its position,
// name, place, dtype, shape and files), which is also written to DIR/outputs.json.
//
// Built as its own library (aotrace_run_tool), not into the runtime that applications link.
// Like the runtime it throws nothing: failures are ToolStatus values.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "aotrace_runtime.h"

namespace aotrace::rt {

struct RunToolOptions {
  std::string bundle;
  std::string entry;                // empty: the bundle's only entry, else 'forward'
  std::vector<std::string> inputs;  // NAME=FILE.npy, or NAME=VALUE for a Python scalar input
  std::string output_dir = ".";     // created when missing
  int threads = 0;                  // 0: AOTRACE_NUM_THREADS or the CPU count
  uint64_t seed = 0;                // Entry::manual_seed
  bool selftest = false;            // the bundle's golden vectors instead of inputs
  bool json = false;                // one JSON object on stdout instead of the file list
  bool help = false;                // --help: print run_tool_help, run nothing
  bool cuda = false;                // --device cuda: the bundle's CUDA kernels on GPU 0
  int repeat = 0;                   // --repeat N: then N timed calls (GPU-resident tensors on cuda)
  int profile = 0;                  // --profile N (with --repeat): the N slowest kernels, timed per call
};

// Ok, or what went wrong and how to fix it, with the exit code: 1 when the inputs or the
// bundle are wrong, 2 when the command line is.
struct ToolStatus {
  int exit_code = 0;
  std::string what, hint;
  bool ok() const { return exit_code == 0; }
};

// Parses the words after the command (`aotrace run` or `aotrace_run`): the bundle, then the
// options in any order; `--opt VALUE` and `--opt=VALUE` alike.
ToolStatus parse_run_tool_args(const std::vector<std::string>& args, RunToolOptions& options);
// Usage and options, for `command` ("aotrace run", "aotrace_run").
std::string run_tool_help(const std::string& command);
// Runs what `options` asks for: prints the variant line (and warnings) on `err`, the report on
// `out`. Messages start with the first word of `command` ("aotrace: entry 'forward', …").
ToolStatus run_tool(const RunToolOptions& options, const std::string& command, std::ostream& out, std::ostream& err);
// The hint after Bundle::open failed with `status`, by what went wrong: a path or a damaged
// bundle, or what this machine lacks (a CPU feature, a CUDA driver), which `aotrace verify` lists.
std::string open_failure_hint(const Status& status);
// "PROGRAM: error: WHAT\n  hint: HINT\n", the compiler's diagnostic format (DESIGN §7).
std::string render_tool_status(const ToolStatus& status, const std::string& command);

}  // namespace aotrace::rt
