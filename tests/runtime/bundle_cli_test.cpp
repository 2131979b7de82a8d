// The bundle commands through the CLI on examples/mlp (issue 5): determinism of `compile`,
// `inspect [--json]`, `verify`, `run --selftest`, a failed compile that leaves the output, and
// the kernel libraries per CPU (baseline + host level, chosen at load; `--cpu` builds one).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/npy.h"
#include "tests/support/subprocess.h"

namespace {
namespace fs = std::filesystem;
using aotrace::test::expect_contains;
using aotrace::test::quote;
using aotrace::test::run_command;
using nlohmann::json;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string cli() { return quote(AOTRACE_CLI); }
std::string mlp_yaml() { return quote(std::string(AOTRACE_SOURCE_DIR) + "/examples/mlp/mlp.yaml"); }

class BundleCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("aotrace_bundle_cli_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    for (const char* name : {"a", "b"}) {
      auto r = run_command(cli() + " compile " + mlp_yaml() + " -o " + quote((root_ / name / "mlp.aot").string()));
      compile_ok_ = compile_ok_ && r.exit_code == 0;
      compile_log_ += r.output;
    }
  }
  void SetUp() override { ASSERT_TRUE(compile_ok_) << compile_log_; }
  static fs::path bundle() { return root_ / "a" / "mlp.aot"; }
  // A private copy of the bundle to damage.
  static fs::path copy_of_bundle(const std::string& name) {
    fs::path dir = root_ / name / "mlp.aot";
    fs::remove_all(dir.parent_path());
    fs::create_directories(dir.parent_path());
    fs::copy(bundle(), dir, fs::copy_options::recursive);
    return dir;
  }
  static inline fs::path root_;
  static inline bool compile_ok_ = true;
  static inline std::string compile_log_;
};

// Wall-clock timings are printed by compile, never stored, so two compiles agree byte for byte.
TEST_F(BundleCli, CompilingTwiceGivesByteIdenticalBundles) {
  fs::path a = root_ / "a" / "mlp.aot", b = root_ / "b" / "mlp.aot";
  size_t files = 0;
  for (const auto& f : fs::recursive_directory_iterator(a)) {
    if (!f.is_regular_file()) continue;
    ++files;
    fs::path rel = fs::relative(f.path(), a);
    ASSERT_TRUE(fs::exists(b / rel)) << rel;
    EXPECT_TRUE(read_bytes(f.path()) == read_bytes(b / rel)) << rel << " differs";
  }
  size_t files_b = 0;
  for (const auto& f : fs::recursive_directory_iterator(b)) files_b += f.is_regular_file();
  EXPECT_EQ(files, files_b);
  EXPECT_GT(files, 10u);
}

TEST_F(BundleCli, InspectJsonDescribesTheBundle) {
  auto r = run_command(cli() + " inspect " + quote(bundle().string()) + " --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = json::parse(r.output);
  EXPECT_EQ(j["format_version"], "1." + std::to_string(aotrace::rt::kFormatMinor));
  EXPECT_EQ(j["kernel_abi_version"], 1);
  EXPECT_EQ(j["name"], "mlp");
  EXPECT_NE(j["tool_version"].get<std::string>().find("aotrace"), std::string::npos);
  EXPECT_EQ(j["hardware"]["cpu"], "x86-64-v2");
  const json& features = j["hardware"]["cpu_features"];
  EXPECT_NE(std::find(features.begin(), features.end(), "sse4.2"), features.end()) << features;
  EXPECT_TRUE(j["hardware"]["missing_on_this_machine"].empty());
  ASSERT_EQ(j["entries"].size(), 1u);
  const json& variants = j["entries"][0]["variants"];
  ASSERT_EQ(variants.size(), 3u);
  int64_t peak = 0;
  for (const json& v : variants) {
    EXPECT_FALSE(v["guards"].empty()) << v;
    EXPECT_FALSE(v["kernels"].empty()) << v;
    EXPECT_EQ(v["golden_pairs"], 1);
    EXPECT_EQ(v["inputs"][0]["dtype"], "float32");
    peak = std::max(peak, v["arena_bytes"].get<int64_t>());
  }
  EXPECT_EQ(j["peak_arena_bytes"], peak);
  EXPECT_EQ(variants[2]["inputs"][0]["shape"], json::array({32, 784}));
  // fc1, fc2, head: weight and bias, plus the three weights pre-packed for the GEMM kernels of
  // batch 8 and 32 (batch 1 reads the originals).
  EXPECT_EQ(j["weights"].size(), 9u);
  bool saw_weights = false;
  for (const json& f : j["files"]) {
    std::string bytes = read_bytes(bundle() / f["path"].get<std::string>());
    EXPECT_EQ(f["size"], bytes.size()) << f;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
    EXPECT_EQ(f["xxh3"], hex) << f;
    saw_weights |= f["path"] == "weights.bin";
  }
  EXPECT_TRUE(saw_weights);
  EXPECT_GT(j["runtime_library"]["stripped_bytes"].get<int64_t>(), 10000) << j["runtime_library"];
}

TEST_F(BundleCli, InspectTextListsGuardsKernelsAndFiles) {
  auto r = run_command(cli() + " inspect " + quote(bundle().string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("format 1." + std::to_string(aotrace::rt::kFormatMinor)), std::string::npos) << r.output;
  for (const char* s : {"variant v2 (profiles: offline)", "guard L['x'].size()[0] == 32",
                        "kernel(s):", "peak arena bytes:", " weights.bin", "runtime library: ",
                        "cpu x86-64-v2"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
}

TEST_F(BundleCli, VerifyAndSelftestPassOnAGoodBundle) {
  auto v = run_command(cli() + " verify " + quote(bundle().string()));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("3 golden pair(s) match"), std::string::npos) << v.output;
  auto s = run_command(cli() + " run " + quote(bundle().string()) + " --selftest");
  EXPECT_EQ(s.exit_code, 0) << s.output;
}

TEST_F(BundleCli, VerifyFailsOnADamagedBundle) {
  fs::path dir = copy_of_bundle("damaged_weights");
  std::string w = read_bytes(dir / "weights.bin");
  w[w.size() / 2] ^= 0x10;
  write_bytes(dir / "weights.bin", w);
  auto v = run_command(cli() + " verify " + quote(dir.string()));
  EXPECT_EQ(v.exit_code, 1) << v.output;
  EXPECT_NE(v.output.find("file weights.bin does not match its XXH3 hash"), std::string::npos) << v.output;

  fs::path dir2 = copy_of_bundle("damaged_fb");
  std::string fb = read_bytes(dir2 / "bundle.fb");
  fb[fb.size() / 3] ^= 0x01;
  write_bytes(dir2 / "bundle.fb", fb);
  auto v2 = run_command(cli() + " verify " + quote(dir2.string()));
  EXPECT_EQ(v2.exit_code, 1) << v2.output;
  EXPECT_NE(v2.output.find("FAILED"), std::string::npos) << v2.output;
}

// Whether this machine runs x86-64-v3 (AVX2, FMA, BMI2): then compile builds a second library.
bool host_has_x86_64_v3() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
#else
  return false;
#endif
}

const char* kDisableHostLevel = "AOTRACE_DISABLE_CPU_FEATURES=avx2 ";  // v3 and v4 need it

// `aotrace inspect --json` of `dir`.
json inspect_json(const fs::path& dir) {
  auto r = run_command(cli() + " inspect " + quote(dir.string()) + " --json 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? json::parse(r.output) : json::object();
}

// cpu/<triple>.so, the portable baseline (the host's triple: x86_64-pc-linux-gnu on Debian).
std::string baseline_library(const fs::path& dir) {
  return "cpu/" + inspect_json(dir)["hardware"]["triple"].get<std::string>() + ".so";
}

TEST_F(BundleCli, CompileBuildsTheBaselineAndAFasterLibraryForThisHost) {
  const json hw = inspect_json(bundle())["hardware"];
  const std::string triple = hw["triple"], baseline = "cpu/" + triple + ".so";
  const json& libs = hw["cpu_libraries"];
  ASSERT_GE(libs.size(), 1u) << hw;
  EXPECT_EQ(libs[0]["path"], baseline);
  EXPECT_EQ(libs[0]["cpu"], "x86-64-v2");
  EXPECT_EQ(libs[0]["baseline"], true);
  if (!host_has_x86_64_v3()) {
    EXPECT_EQ(libs.size(), 1u) << hw;
    return;
  }
  ASSERT_EQ(libs.size(), 2u) << hw;
  const std::string cpu = libs[1]["cpu"];
  EXPECT_TRUE(cpu == "x86-64-v3" || cpu == "x86-64-v4") << cpu;
  EXPECT_EQ(libs[1]["path"], "cpu/" + triple + "." + cpu + ".so");
  const json& features = libs[1]["cpu_features"];
  EXPECT_NE(std::find(features.begin(), features.end(), "avx2"), features.end()) << features;
  EXPECT_TRUE(libs[1]["missing_on_this_machine"].empty()) << libs[1];
  EXPECT_EQ(hw["cpu_library_loaded_here"], libs[1]["path"]);
  EXPECT_TRUE(fs::exists(bundle() / libs[1]["path"].get<std::string>()));
  EXPECT_NE(read_bytes(bundle() / baseline), read_bytes(bundle() / libs[1]["path"].get<std::string>()));

  auto text = run_command(cli() + " inspect " + quote(bundle().string()));
  EXPECT_NE(text.output.find("cpu libraries: 2; this machine would load cpu/" + triple + "." + cpu + ".so"),
            std::string::npos) << text.output;
  EXPECT_NE(text.output.find(baseline + ": cpu x86-64-v2 (baseline)"), std::string::npos) << text.output;
  auto off = run_command(std::string(kDisableHostLevel) + cli() + " inspect " + quote(bundle().string()));
  EXPECT_NE(off.output.find("this machine would load " + baseline), std::string::npos) << off.output;
}

TEST_F(BundleCli, VerifySaysWhichLibraryThisMachineUses) {
  if (!host_has_x86_64_v3()) GTEST_SKIP() << "this machine has no AVX2/FMA: the bundle has the baseline only";
  const std::string baseline = baseline_library(bundle());
  auto v = run_command(cli() + " verify " + quote(bundle().string()));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("this machine uses " + baseline.substr(0, baseline.size() - 3) + ".x86-64-v"),
            std::string::npos) << v.output;
  EXPECT_NE(v.output.find("faster than the baseline, of 2 kernel libraries"), std::string::npos) << v.output;
  // With the host level's features made unavailable: the baseline, and the golden vectors pass.
  auto off = run_command(std::string(kDisableHostLevel) + cli() + " verify " + quote(bundle().string()));
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_NE(off.output.find("this machine uses " + baseline +
                            " (cpu x86-64-v2), the portable baseline, of 2 kernel libraries"),
            std::string::npos) << off.output;
  EXPECT_NE(off.output.find("3 golden pair(s) match"), std::string::npos) << off.output;
}

TEST_F(BundleCli, HostAndBaselineLibrariesGiveTheSameOutputs) {
  fs::path dir = root_ / "same_outputs";
  fs::create_directories(dir / "host");
  fs::create_directories(dir / "baseline");
  aotrace::rt::Tensor x(aotrace::rt::DType::f32, {8, 784});
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = static_cast<float>((i * 7919) % 2003) / 1001.0f - 1.0f;
  ASSERT_TRUE(aotrace::rt::npy_write((dir / "x.npy").string(), x.ref()).ok());
  const std::string run = cli() + " run " + quote(bundle().string()) + " --input x=" + quote((dir / "x.npy").string());
  auto host = run_command(run + " --output-dir " + quote((dir / "host").string()));
  ASSERT_EQ(host.exit_code, 0) << host.output;
  auto base = run_command(kDisableHostLevel + run + " --output-dir " + quote((dir / "baseline").string()));
  ASSERT_EQ(base.exit_code, 0) << base.output;
  auto a = aotrace::rt::npy_read((dir / "host/out0.npy").string());
  auto b = aotrace::rt::npy_read((dir / "baseline/out0.npy").string());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->shape(), b->shape());
  int64_t bad = 0;
  for (int64_t i = 0; i < a->numel(); ++i) {
    const float got = a->data_as<float>()[i], want = b->data_as<float>()[i];
    bad += !(std::fabs(got - want) <= 1e-5 + 1e-4 * std::fabs(want));
  }
  EXPECT_EQ(bad, 0) << "elements of the host library's output outside atol 1e-5 / rtol 1e-4 of the baseline's";
}

TEST_F(BundleCli, CpuOptionBuildsExactlyOneLibrary) {
  fs::path out = root_ / "one_cpu" / "mlp.aot";
  auto r = run_command(cli() + " compile " + mlp_yaml() + " --cpu x86-64-v2 -o " + quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kernels for x86-64-v2 ->"), std::string::npos) << r.output;
  size_t libraries = 0;
  for (const auto& f : fs::directory_iterator(out / "cpu")) libraries += f.path().extension() == ".so";
  EXPECT_EQ(libraries, 1u);
  const std::string baseline = baseline_library(out);
  EXPECT_TRUE(fs::exists(out / baseline));
  EXPECT_EQ(inspect_json(out)["hardware"]["cpu_libraries"].size(), 1u);
  auto v = run_command(cli() + " verify " + quote(out.string()));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("this machine uses " + baseline + " (cpu x86-64-v2)\n"),
            std::string::npos) << v.output;
}

TEST_F(BundleCli, FailedCompileLeavesTheOutputUntouched) {
  fs::path dir = copy_of_bundle("failed_compile");
  const std::string before = read_bytes(dir / "bundle.fb");
  fs::path yaml = dir.parent_path() / "broken.yaml";
  write_bytes(dir.parent_path() / "broken.py", "import torch\nraise RuntimeError('broken model')\n");
  std::string spec = read_bytes(std::string(AOTRACE_SOURCE_DIR) + "/examples/mlp/mlp.yaml");
  spec.replace(spec.find("script: mlp.py"), 14, "script: broken.py");
  write_bytes(yaml, spec);
  auto r = run_command(cli() + " compile " + quote(yaml.string()) + " -o " + quote(dir.string()));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_bytes(dir / "bundle.fb"), before);
  auto v = run_command(cli() + " verify " + quote(dir.string()));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  for (const auto& f : fs::directory_iterator(dir.parent_path()))
    EXPECT_EQ(f.path().filename().string().find(".mlp.aot.tmp"), std::string::npos) << f.path();
}

// A missing --input file, a folder or a file that is not .npy is the user's error, named with
// its input (the runtime's reader returns a status: it used to throw from the stream).
TEST_F(BundleCli, RunInputThatIsNotANpyFileIsAUserError) {
  fs::path dir = root_ / "bad_inputs";
  fs::create_directories(dir / "adir");
  write_bytes(dir / "notes.txt", "not an array\n");
  const std::string run = cli() + " run " + quote(bundle().string()) + " --output-dir " + quote(dir.string()) + " --input x=";
  auto folder = run_command(run + quote((dir / "adir").string()));
  EXPECT_EQ(folder.exit_code, 1) << folder.output;
  EXPECT_NE(folder.output.find("aotrace: error: input x: '" + (dir / "adir").string() + "' is a directory, not a .npy file"),
            std::string::npos) << folder.output;
  EXPECT_NE(folder.output.find("hint: pass --input x=FILE.npy"), std::string::npos) << folder.output;
  auto missing = run_command(run + quote((dir / "missing.npy").string()));
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("input x: '" + (dir / "missing.npy").string() + "' does not exist"), std::string::npos)
      << missing.output;
  auto text = run_command(run + quote((dir / "notes.txt").string()));
  EXPECT_EQ(text.exit_code, 1) << text.output;
  EXPECT_NE(text.output.find("input x: '" + (dir / "notes.txt").string() + "' is not a supported .npy file: no NUMPY magic"),
            std::string::npos) << text.output;
  for (const auto* r : {&folder, &missing, &text})
    EXPECT_EQ(r->output.find("internal error"), std::string::npos) << r->output;
  EXPECT_FALSE(fs::exists(dir / "out0.npy"));
}

// -o over an old bundle replaces it (and an empty folder is taken): only other things are refused.
TEST_F(BundleCli, CompileReplacesAnOldBundleAndTakesAnEmptyFolder) {
  fs::path dir = copy_of_bundle("replaced");
  write_bytes(dir / "stale.txt", "from an older compile\n");
  auto r = run_command(cli() + " compile " + mlp_yaml() + " --cpu x86-64-v2 -o " + quote(dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir / "stale.txt"));
  EXPECT_EQ(run_command(cli() + " verify " + quote(dir.string())).exit_code, 0);
  fs::path empty = root_ / "empty_folder";
  fs::create_directories(empty);
  auto e = run_command(cli() + " compile " + mlp_yaml() + " --cpu x86-64-v2 -o " + quote(empty.string()));
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_TRUE(fs::exists(empty / "bundle.fb"));
  for (const auto& f : fs::directory_iterator(dir.parent_path()))
    EXPECT_EQ(f.path().filename().string().find(".replaced"), std::string::npos) << f.path();
}

// stdout and stderr of a command apart.
struct SplitOutput {
  int exit_code = -1;
  std::string out, err;
};

SplitOutput run_split(const std::string& command, const fs::path& err_file) {
  auto r = run_command("(" + command + " 2> " + quote(err_file.string()) + ")");
  return {r.exit_code, r.output, read_bytes(err_file)};
}

// A function returning a dict that holds a tuple: three outputs, two of them inside the tuple.
// Compiled once for the tests of `run` and `aotrace_run` below.
fs::path dict_bundle(const fs::path& root) {
  static fs::path compiled;
  if (!compiled.empty()) return compiled;
  fs::path dir = root / "dict_out";
  fs::create_directories(dir);
  write_bytes(dir / "net.py", "def net(x):\n    return {'logits': x * 2, 'pair': (x + 1, x - 1)}\n");
  write_bytes(dir / "net.yaml",
              "version: 1\nscript: net.py\nentries:\n  net:\n    call: net\n    inputs:\n"
              "      x: {dtype: float32, shape: [batch, 3]}\ndims:\n  batch: [1, 2]\n");
  auto r = run_command(cli() + " compile " + quote((dir / "net.yaml").string()) + " --cpu x86-64-v2 -o " +
                       quote((dir / "net.aot").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<float> x(6, 1.0f);
  EXPECT_TRUE(aotrace::rt::npy_write((dir / "x.npy").string(),
                                     aotrace::rt::TensorRef(aotrace::rt::DType::f32, {2, 3}, x.data())).ok());
  if (r.exit_code == 0) compiled = dir / "net.aot";
  return compiled;
}

// `run` names the entry, the variant and its profile on stderr; lists each file with its place
// in the returned structure on stdout; writes an output inside a dict under its keys as well as
// its position (logits.npy beside out0.npy); creates a missing output folder; and with --json
// prints one JSON object, the one outputs.json holds.
TEST_F(BundleCli, RunNamesTheVariantAndWritesDictOutputsUnderTheirKeys) {
  const fs::path net = dict_bundle(root_);
  ASSERT_FALSE(net.empty());
  const fs::path dir = net.parent_path(), out = dir / "new" / "out";
  const std::string run = cli() + " run " + quote(net.string()) + " --input x=" + quote((dir / "x.npy").string()) +
                          " --output-dir " + quote(out.string());
  SplitOutput r = run_split(run, dir / "stderr.txt");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "aotrace: entry 'net', variant v1 (profile batch=2)\n");
  expect_contains(r.out, "  " + (out / "out0.npy").string() + "  result['logits']  float32 [2, 3]\n");
  expect_contains(r.out, "  " + (out / "logits.npy").string() + "  result['logits']  float32 [2, 3]\n");
  expect_contains(r.out, "  " + (out / "out2.npy").string() + "  result['pair'][1]  float32 [2, 3]\n");
  expect_contains(r.out, "  " + (out / "pair.1.npy").string() + "  result['pair'][1]  float32 [2, 3]\n");
  for (const char* f : {"out0.npy", "out1.npy", "out2.npy", "logits.npy", "pair.0.npy", "pair.1.npy"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_EQ(read_bytes(out / "logits.npy"), read_bytes(out / "out0.npy"));
  EXPECT_EQ(read_bytes(out / "pair.0.npy"), read_bytes(out / "out1.npy"));
  auto pair0 = aotrace::rt::npy_read((out / "pair.0.npy").string());
  ASSERT_TRUE(pair0.ok());
  EXPECT_EQ(pair0->data_as<float>()[0], 2.0f);

  r = run_split(run + " --json", dir / "stderr.txt");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "aotrace: entry 'net', variant v1 (profile batch=2)\n");
  const json j = json::parse(r.out);  // one object, nothing else on stdout
  EXPECT_EQ(j["entry"], "net");
  EXPECT_EQ(j["variant"], "v1");
  EXPECT_EQ(j["profiles"], json::array({"batch=2"}));
  EXPECT_EQ(j["output_dir"], out.string());
  ASSERT_EQ(j["outputs"].size(), 3u) << j;
  EXPECT_EQ(j["outputs"][0], json::parse(R"({"position": 0, "name": "logits", "place": "result['logits']",
      "dtype": "float32", "shape": [2, 3], "files": ["out0.npy", "logits.npy"]})"));
  EXPECT_EQ(j["outputs"][2]["name"], "pair.1");
  EXPECT_EQ(j["outputs"][2]["files"], json::array({"out2.npy", "pair.1.npy"}));
  EXPECT_TRUE(j["updated_inputs"].empty());
  EXPECT_EQ(json::parse(std::ifstream(out / "outputs.json")), j);
}

// aotrace_run (the bundle's own runner) is the same command as `aotrace run`: --help lists the
// same options; the same run prints the same lines and writes the same files, into a folder it
// creates; --selftest, and the errors with their exit codes, are the same.
TEST_F(BundleCli, AotraceRunTakesTheSameOptionsAndPrintsTheSameLines) {
  const fs::path net = dict_bundle(root_);
  ASSERT_FALSE(net.empty());
  const fs::path dir = net.parent_path();
  const std::string runner = quote(AOTRACE_RUN), aotrace_run = cli() + " run";
  auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
    return s;
  };

  auto help = run_command(runner + " --help");
  ASSERT_EQ(help.exit_code, 0) << help.output;
  for (const char* option : {"--entry NAME", "--input NAME=FILE.npy", "--output-dir DIR", "--json", "--selftest",
                             "--threads N", "--seed N", "--help"})
    expect_contains(help.output, option);
  auto cli_help = run_command(aotrace_run + " --help");
  ASSERT_EQ(cli_help.exit_code, 0) << cli_help.output;
  EXPECT_EQ(replace_all(cli_help.output, "aotrace run", "aotrace_run"), help.output);

  const std::string args = " " + quote(net.string()) + " --entry net --input x=" + quote((dir / "x.npy").string()) +
                           " --threads 1 --seed 3 --output-dir " + quote((dir / "same" / "deeper").string());
  SplitOutput a = run_split(runner + args, dir / "stderr.txt");
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_TRUE(fs::exists(dir / "same" / "deeper" / "logits.npy"));
  SplitOutput b = run_split(aotrace_run + args, dir / "stderr.txt");
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.err, "aotrace_run: entry 'net', variant v1 (profile batch=2)\n");
  EXPECT_EQ(replace_all(b.err, "aotrace:", "aotrace_run:"), a.err);
  a = run_split(runner + args + " --json", dir / "stderr.txt");
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  b = run_split(aotrace_run + args + " --json", dir / "stderr.txt");
  EXPECT_EQ(json::parse(a.out), json::parse(b.out));

  auto selftest = run_command(runner + " " + quote(bundle().string()) + " --selftest");
  EXPECT_EQ(selftest.exit_code, 0) << selftest.output;
  expect_contains(selftest.output, "aotrace_run --selftest: 3 golden pair(s) match (kernels cpu/");
  selftest = run_command(aotrace_run + " " + quote(bundle().string()) + " --selftest");
  EXPECT_EQ(selftest.exit_code, 0) << selftest.output;
  expect_contains(selftest.output, "aotrace run --selftest: 3 golden pair(s) match (kernels cpu/");

  struct Case {
    std::string args, message;
    int exit_code;
  };
  for (const Case& c : std::vector<Case>{
           {" --entry nope", "error: bundle " + net.string() + " has no entry 'nope'", 1},
           {" --entry net", "error: entry 'net' needs input 'x'\n  hint: pass --input x=FILE.npy (inputs: x)", 1},
           {" --threads many", "error: --threads takes a number from 0 to 1024, got 'many'", 2},
           {" --frobnicate", "error: unknown option '--frobnicate'\n  hint: --help lists the options", 2},
           {" --entry", "error: --entry needs a value: --entry NAME", 2},
           {" --selftest --input x=x.npy", "error: --selftest runs the bundle's golden vectors, not --input", 2}}) {
    auto standalone = run_command(runner + " " + quote(net.string()) + c.args);
    EXPECT_EQ(standalone.exit_code, c.exit_code) << c.args << "\n" << standalone.output;
    expect_contains(standalone.output, "aotrace_run: " + c.message);
    auto through_cli = run_command(aotrace_run + " " + quote(net.string()) + c.args);
    EXPECT_EQ(through_cli.exit_code, c.exit_code) << c.args << "\n" << through_cli.output;
    EXPECT_EQ(replace_all(through_cli.output, "aotrace:", "aotrace_run:"), standalone.output) << c.args;
  }
}

// The script's prints reach aotrace's stdout when it is a pipe or a file (block-buffered there,
// and the embedded interpreter is never finalised), before aotrace's own lines.
TEST_F(BundleCli, ScriptPrintsReachARedirectedStdout) {
  fs::path dir = root_ / "prints";
  fs::create_directories(dir);
  write_bytes(dir / "hello.py",
              "import torch\nprint('hello from the script')\n\n"
              "class Twice(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\nmodel = Twice()\n");
  write_bytes(dir / "hello.yaml",
              "version: 1\nscript: hello.py\nentries:\n  forward:\n    call: model\n    inputs:\n"
              "      x: {dtype: float32, shape: [4]}\n");
  const std::string compile = cli() + " compile " + quote((dir / "hello.yaml").string()) + " --cpu x86-64-v2 -o ";
  auto piped = run_command(compile + quote((dir / "a.aot").string()));
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  const size_t hello = piped.output.find("hello from the script\n");
  ASSERT_NE(hello, std::string::npos) << piped.output;
  EXPECT_LT(hello, piped.output.find("aotrace: compiled")) << piped.output;
  auto to_file = run_command("(" + compile + quote((dir / "b.aot").string()) + " > " + quote((dir / "stdout.txt").string()) + ")");
  ASSERT_EQ(to_file.exit_code, 0) << to_file.output;
  EXPECT_EQ(read_bytes(dir / "stdout.txt"), "hello from the script\n");
}

}  // namespace
