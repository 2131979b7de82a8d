// User-facing failures of the CLI (STYLE 14): each case asserts the exit code (DESIGN §7) and
// the message it expects: what, where (file:line[:col]) and a hint.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

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

// Issue 13: code that needs a dynamic dim's value as a Python int names the line and the fix.
TEST(DynamicDims, LoopOverRangeOfADynamicDimIsABreakWithTheFix) {
  auto r = aotrace_cli("compile " + quote((kCases / "dynamic_loop.yaml").string()) + " -o " +
                       quote((fs::temp_directory_path() / "aotrace-errors-dyn.aot").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "the code needs the concrete value of seq");
  expect_contains(r.output, "--> " + (kCases / "dynamic_dims.py").string() + ":6 in loop_over_sizes");
  expect_contains(r.output, "hint: declare seq static, or list its sizes");
}

// torch.topk(x, 5) over a dynamic dim whose range starts below 5: torch raises on such a call, a
// bundle would leave the missing results unwritten, so the compile refuses it at the call.
TEST(DynamicDims, TopkOfMoreThanTheSmallestSizeIsRefusedWithTheFix) {
  auto r = aotrace_cli("compile " + quote((kCases / "dynamic_topk.yaml").string()) + " -o " +
                       quote((fs::temp_directory_path() / "aotrace-errors-dyn.aot").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "topk: k = 5 is larger than dim 1 of f32[2, seq] where seq = 4, the smallest size the spec's dims allow");
  expect_contains(r.output, "--> " + (kCases / "dynamic_dims.py").string() + ":22 in top_five");
  expect_contains(r.output, "hint: give seq a min of at least 5 under the spec's `dims:`, or take k = min(5, x.size(1))");
}

// A branch on the size splits the range; max_variants is checked on the planned variants
// before anything is lowered, and the message lists what produced each one.
TEST(DynamicDims, RangeSplitsBeyondMaxVariantsAreRefusedBeforeLowering) {
  auto r = aotrace_cli("compile " + quote((kCases / "dynamic_too_many.yaml").string()) + " -o " +
                       quote((fs::temp_directory_path() / "aotrace-errors-dyn.aot").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // seq in [4, 12] splits at every multiple of 3: 4..5, 6, 7..8, 9, 10..11, 12.
  expect_contains(r.output, "entry 'f' needs 6 variants, more than max_variants = 3");
  expect_contains(r.output, "hint: raise options.max_variants to 6");
  expect_contains(r.output, "the range splits at `seq%3 == 0` (" + (kCases / "dynamic_dims.py").string() + ":12)");
  expect_contains(r.output, "v0: profile seq=6 (static)");
  expect_contains(r.output, "v4: profile seq=7..8 (dynamic: seq in [7, 8])");
  EXPECT_EQ(r.output.find("lowering"), std::string::npos) << r.output;
  auto e = aotrace_cli("explain " + quote((kCases / "dynamic_too_many.yaml").string()));
  EXPECT_EQ(e.exit_code, 0) << e.output;
  expect_contains(e.output, "entry f: 6 variant(s) planned (max_variants 3)");
  expect_contains(e.output, "warning: entry 'f' needs 6 variants, more than max_variants = 3");
}

// A range holding 1 gets size 1 as its own static variant, and the message says so.
TEST(DynamicDims, SizeOneIsSpecialisedAndCountsAsAVariant) {
  auto r = aotrace_cli("explain " + quote((kCases / "dynamic_specialised.yaml").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "entry f: 2 variant(s) planned (max_variants 1)");
  expect_contains(r.output, "v0: profile batch=1 (static)");
  expect_contains(r.output, "batch=1: the range [1, 16] holds 1, which gets its own static variant");
  expect_contains(r.output, "v1: profile batch=2..16 (dynamic: batch in [2, 16])");
  expect_contains(r.output, "2 <= L['x'].size()[0] <= 16");
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

// --cpu and --triple are checked before the script runs: raises.py would fail if it ran.
TEST(TargetErrors, UnknownCpuListsValidNamesBeforeCapture) {
  const fs::path out = fs::temp_directory_path() / "aotrace-errors-cpu.aot";
  auto r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --cpu foo -o " + quote(out.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: unknown CPU 'foo' for x86_64-");
  expect_contains(r.output, "valid names: native, x86-64, x86-64-v2, x86-64-v3, x86-64-v4");
  expect_contains(r.output, "hint: leave --cpu out for the portable baseline");
  expect_contains(r.output, "-mcpu=help` lists every CPU name");
  EXPECT_EQ(r.output.find("LLVM ERROR"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("the script fails while loading"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST(TargetErrors, ThirtyTwoBitCpuForX86_64) {
  auto r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --cpu i686");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "CPU 'i686' is a 32-bit x86 CPU and cannot run x86_64-");
  EXPECT_EQ(r.output.find("LLVM ERROR"), std::string::npos) << r.output;
}

TEST(TargetErrors, CpuOfAnotherArchitecture) {
  auto r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) +
                       " --triple aarch64-linux-gnu --cpu x86-64-v3");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "unknown CPU 'x86-64-v3' for aarch64-unknown-linux-gnu; valid names: generic, cortex-a72");
  auto native = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --triple aarch64-linux-gnu --cpu native");
  EXPECT_EQ(native.exit_code, 1) << native.output;
  expect_contains(native.output, "--cpu native names this machine's CPU, which cannot run aarch64-unknown-linux-gnu code");
}

TEST(TargetErrors, NonLinuxTripleNamesTheSupportedOnes) {
  for (const char* triple : {"x86_64-windows-msvc", "x86_64-apple-darwin", "i686-linux-gnu", "riscv64-linux-gnu"}) {
    auto r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --triple " + triple);
    EXPECT_EQ(r.exit_code, 1) << triple << "\n" << r.output;
    expect_contains(r.output, std::string("aotrace: error: target triple '") + triple + "' (");
    expect_contains(r.output, "is not supported: aotrace builds ELF kernel libraries for Linux only; supported "
                              "triples are x86_64-*-linux-gnu and aarch64-*-linux-gnu");
    expect_contains(r.output, "hint: use --triple x86_64-linux-gnu or --triple aarch64-linux-gnu");
    EXPECT_EQ(r.output.find("the script fails while loading"), std::string::npos) << r.output;
  }
}

// `targets: [cuda]` needs the CUDA toolkit (CUDA_HOME, else /usr/local/cuda): without it the
// compile stops before capture, at the target's YAML location; bad --cuda-arch values too.
TEST(TargetErrors, CudaTargetWithoutTheToolkitIsRefusedAtItsYamlLocation) {
  const std::string no_toolkit = "CUDA_HOME=/nonexistent/cuda " + quote(AOTRACE_CLI) + " ";
  auto r = run_command(no_toolkit + "compile " + quote((kCases / "cuda_target.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: the CUDA toolkit's ptxas is not at /nonexistent/cuda/bin/ptxas");
  expect_contains(r.output, "--> " + (kCases / "cuda_target.yaml").string() + ":8:16");
  expect_contains(r.output, "set CUDA_HOME to its folder");
  EXPECT_EQ(r.output.find("the script fails while loading"), std::string::npos) << r.output;
  auto only = run_command(no_toolkit + "compile " + quote((kCases / "cuda_only.yaml").string()));
  EXPECT_EQ(only.exit_code, 1) << only.output;
  expect_contains(only.output, "--> " + (kCases / "cuda_only.yaml").string() + ":9:5");
  expect_contains(only.output, "ptxas is not at");
}

TEST(TargetErrors, CudaArchMustBeAGpuTheToolkitBuildsFor) {
  auto r = aotrace_cli("compile " + quote((kCases / "cuda_target.yaml").string()) + " --cuda-arch sm_90,sm_61");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: CUDA architecture sm_61 is older than this toolkit builds for (sm_75)");
  expect_contains(r.output, "hint: choose sm_75 or newer");
  r = aotrace_cli("compile " + quote((kCases / "cuda_target.yaml").string()) + " --cuda-arch 90");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: '90' is not a CUDA architecture");
  r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --cuda-arch sm_90");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: --cuda-arch is given, but the spec's targets have no cuda");
  r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --cuda-gemm-stages 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: --cuda-gemm-stages is given, but the spec's targets have no cuda");
  expect_contains(r.output, "or drop --cuda-gemm-stages");
  r = aotrace_cli("compile " + quote((kCases / "cuda_target.yaml").string()) + " --cuda-gemm-stages 3");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // a usage error, named though the flag is hidden
  expect_contains(r.output, "--cuda-gemm-stages: 3 not in {1,2}");
  r = aotrace_cli("compile " + quote((kCases / "cuda_target.yaml").string()) + " --cuda-vector-elements four");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_contains(r.output, "--cuda-vector-elements: four not in {1,2,4}");
  r = aotrace_cli("compile " + quote((kCases / "cuda_target.yaml").string()) + " --cuda-gemm-stages");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_contains(r.output, "--cuda-gemm-stages: 1 required");
  r = aotrace_cli("compile " + quote((kCases / "cuda_target.yaml").string()) + " --cuda-split-reduce-chunk 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_contains(r.output, "--cuda-split-reduce-chunk: Value 0 not in range 1 to 1099511627776");
  r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --cuda-split-reduce-chunk 64");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: --cuda-split-reduce-chunk is given, but the spec's targets have no cuda");
  r = aotrace_cli("compile " + quote((kCases / "cuda_target.yaml").string()) + " --cuda-block-row-min 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_contains(r.output, "--cuda-block-row-min: Value 1 not in range 2 to 1099511627776");
  r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " --cuda-block-row-min 512");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: --cuda-block-row-min is given, but the spec's targets have no cuda");
}

// `device: cuda` on an input: needs the cuda target, names a device aotrace knows, and only on a
// tensor; each refused at its YAML location before capture.
TEST(TargetErrors, InputDeviceNeedsTheCudaTargetAndAKnownDevice) {
  auto r = aotrace_cli("compile " + quote((kCases / "cuda_input_no_target.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: input 'x' of entry 'forward' is declared `device: cuda`, but the spec's "
                            "targets have no cuda");
  expect_contains(r.output, "--> " + (kCases / "cuda_input_no_target.yaml").string() + ":7:47");
  expect_contains(r.output, "hint: add cuda to the targets (`targets: [cpu, cuda]`), or drop `device: cuda`");
  r = aotrace_cli("compile " + quote((kCases / "bad_device.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: unknown device 'gpu'");
  expect_contains(r.output, "--> " + (kCases / "bad_device.yaml").string() + ":7:47");
  expect_contains(r.output, "hint: write `device: cuda` for an input passed in GPU memory on the GPU");
  r = aotrace_cli("compile " + quote((kCases / "scalar_device.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "--> " + (kCases / "scalar_device.yaml").string() + ":7:");
  expect_contains(r.output, "device");
  expect_contains(r.output, "scalars are passed in host memory");
}

// -o replaces an aotrace bundle (or an empty folder), nothing else; refused before capture.
TEST(OutputErrors, RefusesAFolderThatIsNotABundle) {
  const fs::path root = fs::temp_directory_path() / ("aotrace-errors-out-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "notes");
  { std::ofstream(root / "notes" / "todo.txt") << "my notes\n"; }
  auto r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " -o " + quote((root / "notes").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: " + (root / "notes").string() +
                                " exists and is not an aotrace bundle (a directory without bundle.fb)");
  expect_contains(r.output, "hint: remove it or choose another -o");
  EXPECT_EQ(r.output.find("the script fails while loading"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(root / "notes" / "todo.txt"));
  // A trailing slash names the same folder.
  auto slash = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " -o " + quote((root / "notes").string() + "/"));
  EXPECT_EQ(slash.exit_code, 1) << slash.output;
  EXPECT_TRUE(fs::exists(root / "notes" / "todo.txt"));
  fs::remove_all(root);
}

TEST(OutputErrors, RefusesAFile) {
  const fs::path root = fs::temp_directory_path() / ("aotrace-errors-file-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  { std::ofstream(root / "x.npy") << "not a bundle"; }
  auto r = aotrace_cli("compile " + quote((kCases / "raises.yaml").string()) + " -o " + quote((root / "x.npy").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, (root / "x.npy").string() + " exists and is a file, not an aotrace bundle");
  expect_contains(r.output, "hint: remove it or choose another -o");
  std::ifstream in(root / "x.npy");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "not a bundle");
  fs::remove_all(root);
}

TEST(UsageErrors, NoSubcommandIsExit2) {
  auto r = aotrace_cli("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(UsageErrors, UnknownOptionIsExit2) {
  auto r = aotrace_cli("compile --frobnicate x.yaml");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// A mistyped subcommand is the user's error (exit 1), with the closest real name and the command
// line to type instead; with nothing close, the list of subcommands. CLI11 alone only said that
// a subcommand is required.
TEST(UsageErrors, MistypedSubcommandSuggestsTheClosestName) {
  auto r = aotrace_cli("compil x.yaml -o 'my out.aot'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: unknown subcommand 'compil'; did you mean 'compile'?\n");
  expect_contains(r.output, "  hint: aotrace compile x.yaml -o 'my out.aot'\n");
  EXPECT_EQ(r.output.find("A subcommand is required"), std::string::npos) << r.output;
  r = aotrace_cli("profiles chek x.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: unknown subcommand 'chek'; did you mean 'check'?");
  expect_contains(r.output, "hint: aotrace profiles check x.yaml");
  r = aotrace_cli("inpsect b.aot");  // two letters swapped
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "did you mean 'inspect'?");
  r = aotrace_cli("frobnicate");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: unknown subcommand 'frobnicate' of `aotrace`\n");
  expect_contains(r.output, "hint: the subcommands are compile, explain, profiles, run, bench, inspect, verify; "
                            "`aotrace --help` describes them");
  r = aotrace_cli("profiles zzz");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "unknown subcommand 'zzz' of `aotrace profiles`");
  expect_contains(r.output, "the subcommands are schema, check, init, record, suggest");
  // Real subcommands still parse as before.
  EXPECT_EQ(aotrace_cli("profiles schema").exit_code, 0);
  EXPECT_EQ(aotrace_cli("profiles").exit_code, 2);
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

// `aotrace profiles schema` is a draft 2020-12 JSON Schema that every spec of the repository
// passes under a real validator (python3-jsonschema), and that specs the parser refuses fail.
TEST(Profiles, SchemaValidatesEveryExampleSpecWithARealValidator) {
  auto r = run_command("/usr/bin/python3.11 " + quote((fs::path(AOTRACE_SOURCE_DIR) / "tests" / "tools" / "validate_specs.py").string()) +
                       " --aotrace " + quote(AOTRACE_CLI) + " " + quote(AOTRACE_SOURCE_DIR));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, " specs valid; 4 bad specs rejected");
  r = aotrace_cli("profiles schema");
  EXPECT_EQ(r.exit_code, 0);
  expect_contains(r.output, "\"$schema\": \"https://json-schema.org/draft/2020-12/schema\"");
}

// `aotrace profiles check` reports what compile would refuse, exit 1 with file:line, without
// lowering (graph breaks, too many variants, schema errors, padding a model does not mask); a
// good spec gets its plan and exit 0.
TEST(Profiles, CheckRefusesBreaksAndTooManyVariantsAndSummarisesAGoodSpec) {
  auto r = aotrace_cli("profiles check " + quote((kCases / "item_branch.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: graph break: .item() reads a tensor's value");
  expect_contains(r.output, "--> " + (kCases / "item_branch.py").string() + ":6 in gate");
  r = aotrace_cli("profiles check " + quote((kCases / "dynamic_too_many.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "variants, more than max_variants");
  expect_contains(r.output, "the planned variants (nothing was lowered)");
  r = aotrace_cli("profiles check " + quote((kCases / "bad_dtype.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "bad_dtype.yaml:");
  // A target this machine cannot build, as compile refuses it.
  r = run_command("CUDA_HOME=/nonexistent/cuda " + quote(AOTRACE_CLI) + " profiles check " +
                  quote((kCases / "cuda_target.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "ptxas is not at /nonexistent/cuda/bin/ptxas");
  expect_contains(r.output, "cuda_target.yaml:8:");
  // Padding buckets the model does not mask (issue 15): refused as compile refuses them.
  const fs::path buckets = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "buckets";
  r = aotrace_cli("profiles check " + quote((buckets / "nomask.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "changes output 0 of entry 'forward'");
  expect_contains(r.output, "the model does not mask padded positions");
  r = aotrace_cli("profiles check " + quote((buckets / "buckets.yaml").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "dim seq: buckets [16,32,64,128], padding checked in eager below every bucket");
  const fs::path mlp = fs::path(AOTRACE_SOURCE_DIR) / "examples" / "mlp" / "mlp.yaml";
  r = aotrace_cli("profiles check " + quote(mlp.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, mlp.string() + ": ok (1 entry, checked in ");
  expect_contains(r.output, "nothing lowered");
  r = run_command("(" + quote(AOTRACE_CLI) + " profiles check --json " + quote(mlp.string()) + " 2>/dev/null)");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "\"ok\":true");
  expect_contains(r.output, "\"variants\":");
  EXPECT_EQ(aotrace_cli("profiles").exit_code, 2);
}

// `aotrace profiles init` writes, for the examples, the GPT-2-style capture model, torchvision's
// resnet18 and a TransformerEncoder, a commented spec with the schema line and its TODOs, whose
// inputs come from the model (Linear's in_features, int64 token ids of the Embedding, the
// attention's embed_dim, torchvision's 3x224x224), and that `profiles check` accepts as written.
TEST(Profiles, InitWritesSpecsThatCheckAccepts) {
  const fs::path dir = fs::temp_directory_path() / ("aotrace-init-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "vision.py") << "import torchvision\nmodel = torchvision.models.resnet18()\n";
  std::ofstream(dir / "enc.py") << "import torch.nn as nn\n"
                                   "layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)\n"
                                   "encoder = nn.TransformerEncoder(layer, num_layers=2)\n";
  const fs::path src(AOTRACE_SOURCE_DIR);
  struct Case {
    fs::path script;
    std::string input;  // the inferred input line
  };
  const std::vector<Case> cases = {
      {src / "examples" / "mlp" / "mlp.py", "x: {dtype: float32, shape: [batch, 784]}"},
      {src / "examples" / "function" / "function.py", "q: {dtype: float32, shape: [batch, 16]}"},
      {src / "tests" / "capture" / "models" / "gpt2.py", "idx: {dtype: int64, shape: [batch, seq]}"},
      {dir / "vision.py", "x: {dtype: float32, shape: [batch, 3, 224, 224]}"},
      {dir / "enc.py", "src: {dtype: float32, shape: [batch, seq, 64]}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.script.string());
    const fs::path spec = dir / (c.script.stem().string() + ".yaml");
    auto r = aotrace_cli("profiles init " + quote(c.script.string()) + " -o " + quote(spec.string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_contains(r.output, "wrote " + spec.string());
    expect_contains(r.output, "the entry runs in eager on these shapes");
    std::ifstream in(spec);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.rfind("# yaml-language-server: $schema=aotrace-profile.schema.json\n", 0), 0u) << text;
    expect_contains(text, c.input);
    expect_contains(text, "# TODO: the batch sizes your callers use");
    r = aotrace_cli("profiles check " + quote(spec.string()));
    EXPECT_EQ(r.exit_code, 0) << text << r.output;
    expect_contains(r.output, ": ok (1 entry");
  }
  EXPECT_TRUE(fs::exists(dir / "aotrace-profile.schema.json"));
  // The GPT's sequence comes from its block_size; the encoder lists the other candidate.
  std::ifstream gpt(dir / "gpt2.yaml");
  expect_contains(std::string((std::istreambuf_iterator<char>(gpt)), std::istreambuf_iterator<char>()),
                  "(the model's block_size = 16)\n  seq: [16]");
  std::ifstream enc(dir / "enc.yaml");
  const std::string enc_text((std::istreambuf_iterator<char>(enc)), std::istreambuf_iterator<char>());
  expect_contains(enc_text, "other candidates (--call): layer");
  expect_contains(enc_text, "left at their defaults (declare them under inputs to pass them): mask=None");
  // --call picks another candidate.
  auto r = aotrace_cli("profiles init " + quote((dir / "enc.py").string()) + " --call layer -o " +
                       quote((dir / "layer.yaml").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "(entry forward: layer)");
  fs::remove_all(dir);
}

// init never replaces a file without --force, and a --call the script does not define is a user
// error (exit 1) with the fix.
TEST(Profiles, InitRefusesToOverwriteAndExplainsABadCall) {
  const fs::path dir = fs::temp_directory_path() / ("aotrace-init-bad-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path notes = dir / "notes.yaml", mlp = fs::path(AOTRACE_SOURCE_DIR) / "examples" / "mlp" / "mlp.py";
  std::ofstream(notes) << "my notes\n";
  auto r = aotrace_cli("profiles init " + quote(mlp.string()) + " -o " + quote(notes.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "exists; profiles init does not overwrite it");
  std::ifstream in(notes);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), "my notes\n");
  r = aotrace_cli("profiles init " + quote(mlp.string()) + " -o " + quote(notes.string()) + " --force");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = aotrace_cli("profiles init " + quote(mlp.string()) + " --call no_such_model -o " + quote((dir / "x.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "cannot survey `no_such_model` in the script: NameError");
  expect_contains(r.output, "hint: pass --call with an expression of the script's namespace");
  EXPECT_FALSE(fs::exists(dir / "x.yaml"));
  r = aotrace_cli("profiles init " + quote((dir / "missing.py").string()) + " -o " + quote((dir / "y.yaml").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "cannot read the script");
  fs::remove_all(dir);
}

// `profiles record` runs a driver that feeds an encoder a skewed length distribution (most
// sequences short) and writes the sizes; `profiles suggest` compares a range, buckets chosen by
// dynamic programming and static sizes with their padding waste, and --write puts its choice
// into the spec, keeping the comments. Calls beyond the spec's dtypes are reported.
TEST(Profiles, RecordAndSuggestOnASkewedEncoder) {
  const fs::path dir = fs::temp_directory_path() / ("aotrace-record-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "enc.py") << "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"
                                   "layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True)\n"
                                   "encoder = nn.TransformerEncoder(layer, num_layers=1).eval()\n"
                                   "def double(x):\n    return x * 2\n";
  std::ofstream(dir / "enc.yaml") << "version: 1\nscript: enc.py\nentries:\n  forward:\n    call: encoder\n"
                                     "    inputs:\n      src: {dtype: float32, shape: [2, seq, 32]}\n"
                                     "dims:\n  # the lengths, from traffic\n  seq: [64]   # a first guess\n";
  // 70 calls of length 8, 20 of 16, 8 of 40, 2 of 64.
  std::ofstream(dir / "driver.py") << "import torch\nfrom enc import encoder\nwith torch.no_grad():\n"
                                      "    for n, times in ((8, 70), (16, 20), (40, 8), (64, 2)):\n"
                                      "        for _ in range(times):\n            encoder(torch.randn(2, n, 32))\n";
  auto r = run_command("cd " + quote(dir.string()) + " && " + quote(AOTRACE_CLI) +
                       " profiles record driver.py --spec enc.yaml -o sizes.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "recorded 100 call(s) of entry 'forward' -> sizes.json");
  expect_contains(r.output, "seq: 4 size(s) in [8, 64], most often 8 (70% of calls)");
  r = aotrace_cli("profiles suggest " + quote((dir / "enc.yaml").string()) + " --sizes " +
                  quote((dir / "sizes.json").string()) + " --max-variants 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "seq: 100 calls, 4 sizes in [8, 64] (compile: about ");
  expect_contains(r.output, "dynamic range {min: 8, max: 64}");
  // The best two buckets are {8, 16} → 16 and {40, 64} → 64: padded work 90·16 + 10·64 = 2080
  // against 1328 real, 36.2% waste ({8} and the rest → 64 would pad to 2480).
  expect_contains(r.output, "buckets [16, 64]                          36.2%         2");
  expect_contains(r.output, "static [8, 16, 40, 64]                     0.0%         4");
  expect_contains(r.output, "(over max_variants)");
  r = aotrace_cli("profiles suggest " + quote((dir / "enc.yaml").string()) + " --sizes " +
                  quote((dir / "sizes.json").string()) + " --no-measure --write");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir / "enc.yaml");
  const std::string spec((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_contains(spec, "  # the lengths, from traffic\n  seq: [8, 16, 40, 64]   # a first guess\n");
  r = aotrace_cli("profiles check " + quote((dir / "enc.yaml").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "4 profile(s) in 4 variant(s)");
  // A function entry fed one float64 call: reported as beyond the spec.
  std::ofstream(dir / "fn.yaml") << "version: 1\nscript: enc.py\nentries:\n  double:\n    call: double\n"
                                    "    inputs:\n      x: {dtype: float32, shape: [batch, 8]}\ndims:\n  batch: [1]\n";
  std::ofstream(dir / "fn_driver.py") << "import torch\nfrom enc import double\n"
                                         "for b in (1, 1, 4):\n    double(torch.randn(b, 8))\n"
                                         "double(torch.randn(3, 8, dtype=torch.float64))\n";
  r = run_command("cd " + quote(dir.string()) + " && " + quote(AOTRACE_CLI) +
                  " profiles record fn_driver.py --spec fn.yaml -o fn.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "recorded 4 call(s) of entry 'double'");
  expect_contains(r.output, "warning: 1 call(s) beyond the spec: x: dtype float64, the spec declares float32");
  // A driver that never calls the entry is a user error.
  std::ofstream(dir / "idle.py") << "import enc\n";
  r = run_command("cd " + quote(dir.string()) + " && " + quote(AOTRACE_CLI) +
                  " profiles record idle.py --spec fn.yaml -o idle.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "never called entry 'double'");
  fs::remove_all(dir);
}

}  // namespace

