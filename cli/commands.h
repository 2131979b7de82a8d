// cli/ — the `aotrace` command (DESIGN §7). Each subcommand is one function; main.cpp parses
// the command line and maps errors to exit codes (0 ok, 1 user input, 2 usage, 3 internal).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifacts/artifacts.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "embed/embed.h"
#include "lowering/lowering.h"
#include "driver/compile.h"
#include "shape_profiles/shape_profiles.h"

namespace CLI {
class App;
}

namespace aotrace::cli {

// The value of a runtime result, or a UserError with its message and `hint`.
template <class T>
T value_or_fail(rt::Result<T> r, const std::string& hint = {}) {
  if (!r.ok()) throw UserError(r.status().message(), {}, hint);
  return std::move(r).value();
}

// Capture, variant planning and compile live in driver/ (driver/compile.h).
using driver::CompileOptions;
using driver::PlannedVariant;
using driver::ProfileCapture;
using driver::capture_all;
using driver::check_max_variants;
using driver::check_padding_buckets;
using driver::explain_json;
using driver::explain_text;
using driver::plan_variants;
using driver::refuse_graph_breaks;
using driver::check_targets;
using driver::variant_plan_text;
// `aotrace compile`: --dump's pass names checked (a typo gets the closest), then driver::compile.
int compile_command(const std::filesystem::path& yaml, const CompileOptions& options);
int explain_command(const std::filesystem::path& yaml, bool json, bool graph);
// `aotrace profiles schema` / `aotrace profiles check SPEC` (profiles.cpp).
int profiles_schema_command();
int profiles_check_command(const std::filesystem::path& yaml, bool json);
int profiles_record_command(const std::filesystem::path& driver, const std::filesystem::path& spec,
                            const std::string& entry, const std::filesystem::path& output);
int profiles_suggest_command(const std::filesystem::path& spec, const std::filesystem::path& sizes, int max_variants,
                             bool write, bool measure);
int profiles_init_command(const std::filesystem::path& script, const std::string& call,
                          const std::filesystem::path& output, bool force);

// `aotrace run ARGS...`: the words after `run`, parsed and run by the command it shares with the
// standalone aotrace_run (artifacts/runtime/run_tool.h); --help included.
int run_command(const std::vector<std::string>& args);

struct BenchOptions {
  std::filesystem::path bundle;
  std::string entry;
  std::vector<std::string> shapes;  // NAME=DIMS, e.g. x=8x784
  int threads = 0;                  // 0: AOTRACE_NUM_THREADS or the CPU count
  int iterations = 0;               // timed calls; 0: as many as min_time allows
  double min_time = 1.0;            // seconds of timed calls when iterations is 0
  bool json = false;
  int profile = 0;                  // > 0: this many of the slowest kernels, timed per call
  std::string device = "cpu";       // cpu, or cuda: the CUDA kernels on GPU 0, tensors in GPU memory
};
// `aotrace bench` (bench.cpp): latency of one entry on random inputs; exit 0, or 1 when the
// inputs or the bundle are wrong.
int bench_command(const BenchOptions& options);

// Bundle tools (inspect.cpp, verify.cpp): exit 0 ok, 1 when the bundle fails.
int inspect_command(const std::filesystem::path& bundle, bool json);
int verify_command(const std::filesystem::path& bundle);

// A user_error for a mistyped subcommand in `args` (argv without the program), with the closest
// real name ("unknown subcommand 'compil'; did you mean 'compile'?") or, when none is close, the
// list of them; nothing when every subcommand named exists (subcommand_typos.cpp).
void refuse_unknown_subcommand(const CLI::App& app, const std::vector<std::string>& args);
// The name of `names` closest to `typo` by edit distance, "" when none is close.
std::string closest_name(const std::string& typo, const std::vector<std::string>& names);

}  // namespace aotrace::cli
