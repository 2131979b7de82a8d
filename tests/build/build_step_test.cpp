// `aotrace compile` as a build step, on a two-variant project in a folder whose name holds a
// space: the compile cache (a hit is fast and gives the same bundle, an edit to an imported
// module misses, two compiles at once share one cache), the depfile's contents, progress lines
// and --quiet, and the user errors of --depfile and --cache-dir.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/support/subprocess.h"

namespace {
namespace fs = std::filesystem;
using aotrace::test::expect_contains;
using aotrace::test::quote;
using aotrace::test::run_command;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The regular files of a bundle, by relative path.
std::map<std::string, std::string> bundle_files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& f : fs::recursive_directory_iterator(dir))
    if (f.is_regular_file()) files[fs::relative(f.path(), dir).string()] = read_bytes(f.path());
  return files;
}

constexpr const char* kHelper = "import torch\nSCALE = 2.0\n\ndef act(x):\n    return torch.relu(x) * SCALE\n";

class BuildStep : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("aotrace_build_step_" + std::to_string(::getpid())) / info->name();
    fs::remove_all(root_);
    project_ = root_ / "my project";
    fs::create_directories(project_);
    write_bytes(project_ / "helper.py", kHelper);
    write_bytes(project_ / "config.txt", "4\n");
    write_bytes(project_ / "model.py",
                "import pathlib\nimport torch\nimport helper\n\n"
                "OUT = int(pathlib.Path(__file__).with_name('config.txt').read_text())  # open() of a PathLike\n\n"
                "class Net(torch.nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(8, OUT)\n\n"
                "    def forward(self, x):\n        return helper.act(self.fc(x))\n\n"
                "torch.manual_seed(0)\nmodel = Net().eval()\n");
    write_bytes(project_ / "tiny.yaml",
                "version: 1\nname: tiny\nscript: model.py\nentries:\n  forward:\n    call: model\n    inputs:\n"
                "      x: {dtype: float32, shape: [batch, 8]}\ndims:\n  batch: [1, 4]\n");
    cache_ = root_ / "cache";
  }
  void TearDown() override {
    if (HasFailure()) return;
    std::error_code ec;
    fs::remove_all(root_, ec);
    fs::remove(root_.parent_path(), ec);  // the process's folder, once its last test is gone
  }

  // `aotrace compile` of the project into root/NAME.aot with `args`, and its wall time.
  aotrace::test::CommandResult compile(const std::string& name, const std::string& args, double* seconds = nullptr) {
    const auto start = std::chrono::steady_clock::now();
    auto r = run_command(quote(AOTRACE_CLI) + " compile " + quote((project_ / "tiny.yaml").string()) +
                         " --cpu x86-64-v2 -o " + quote(bundle(name).string()) + " " + args);
    if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }
  fs::path bundle(const std::string& name) const { return root_ / (name + ".aot"); }
  std::string cache_arg() const { return "--cache-dir " + quote(cache_.string()); }
  void expect_verifies(const std::string& name) {
    auto v = run_command(quote(AOTRACE_CLI) + " verify " + quote(bundle(name).string()));
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }

  fs::path root_, project_, cache_;
};

TEST_F(BuildStep, UnchangedSpecIsACacheHitWithTheSameBundle) {
  auto first = compile("fresh", cache_arg());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  expect_contains(first.output, "(cache miss: stored in ");
  double seconds = 0;
  auto second = compile("cached", cache_arg(), &seconds);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  expect_contains(second.output, "(cache hit: nothing was captured or lowered");
  expect_contains(second.output, "aotrace: compiled 2 profile(s) into 2 variant(s)");
  EXPECT_EQ(second.output.find("aotrace: captured"), std::string::npos) << second.output;
  EXPECT_LT(seconds, 1.0) << second.output;
  const auto fresh = bundle_files(bundle("fresh")), cached = bundle_files(bundle("cached"));
  EXPECT_EQ(fresh.size(), cached.size());
  EXPECT_GT(fresh.size(), 10u);
  for (const auto& [path, bytes] : fresh) EXPECT_TRUE(cached.count(path) && cached.at(path) == bytes) << path;
  expect_verifies("cached");
  // Without the cache, the same bytes again: a hit is what a fresh compile gives.
  auto uncached = compile("uncached", "--no-cache");
  ASSERT_EQ(uncached.exit_code, 0) << uncached.output;
  EXPECT_EQ(uncached.output.find("(cache "), std::string::npos) << uncached.output;
  EXPECT_EQ(read_bytes(bundle("uncached") / "bundle.fb"), cached.at("bundle.fb"));
}

TEST_F(BuildStep, EditingAnImportedModuleIsACacheMiss) {
  ASSERT_EQ(compile("before", cache_arg()).exit_code, 0);
  write_bytes(project_ / "helper.py", std::string(kHelper).replace(std::string(kHelper).find("2.0"), 3, "3.0"));
  auto edited = compile("edited", cache_arg());
  ASSERT_EQ(edited.exit_code, 0) << edited.output;
  expect_contains(edited.output, "(cache miss: stored in ");
  expect_contains(edited.output, "aotrace: captured forward");
  EXPECT_NE(bundle_files(bundle("before")), bundle_files(bundle("edited")));  // other golden outputs
  expect_verifies("edited");
  // Content-addressed: the edit undone finds the first bundle again.
  write_bytes(project_ / "helper.py", kHelper);
  auto undone = compile("undone", cache_arg());
  ASSERT_EQ(undone.exit_code, 0) << undone.output;
  expect_contains(undone.output, "(cache hit");
  EXPECT_EQ(bundle_files(bundle("before")), bundle_files(bundle("undone")));
}

// CPython trusts a .pyc whose source has the same size and the same mtime in whole seconds: an
// edit within the second of the last import that keeps the size would be compiled from stale
// bytecode. aotrace imports the script's modules from source, and writes no __pycache__ into
// the user's folder.
TEST_F(BuildStep, AnEditKeepingSizeAndMtimeIsCapturedFromTheSource) {
  auto first = compile("first", "--no-cache");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_FALSE(fs::exists(project_ / "__pycache__")) << "aotrace wrote bytecode into the user's folder";
  // The user's own python3.11 run leaves a valid .pyc of helper.py.
  auto pyc = run_command("cd " + quote(project_.string()) +
                         " && /usr/bin/python3.11 -c 'import py_compile; py_compile.compile(\"helper.py\")'");
  ASSERT_EQ(pyc.exit_code, 0) << pyc.output;
  ASSERT_TRUE(fs::exists(project_ / "__pycache__"));
  const auto mtime = fs::last_write_time(project_ / "helper.py");
  write_bytes(project_ / "helper.py", std::string(kHelper).replace(std::string(kHelper).find("2.0"), 3, "3.0"));
  fs::last_write_time(project_ / "helper.py", mtime);
  auto edited = compile("edited", "--no-cache");
  ASSERT_EQ(edited.exit_code, 0) << edited.output;
  const std::string report = read_bytes(bundle("edited") / "report.json");
  expect_contains(report, "G['SCALE'] == 3.0");
  EXPECT_EQ(report.find("G['SCALE'] == 2.0"), std::string::npos);
}

TEST_F(BuildStep, EditingAFileTheScriptOpensIsACacheMiss) {
  ASSERT_EQ(compile("before", cache_arg()).exit_code, 0);
  write_bytes(project_ / "config.txt", "5\n");
  auto edited = compile("edited", cache_arg());
  ASSERT_EQ(edited.exit_code, 0) << edited.output;
  expect_contains(edited.output, "(cache miss");
}

TEST_F(BuildStep, TwoConcurrentCompilesShareOneCache) {
  const std::string one = quote(AOTRACE_CLI) + " compile " + quote((project_ / "tiny.yaml").string()) +
                          " --cpu x86-64-v2 " + cache_arg() + " -o ";
  auto both = run_command("(" + one + quote(bundle("a").string()) + " > " + quote((root_ / "a.log").string()) +
                          " 2>&1 & pa=$!; " + one + quote(bundle("b").string()) + " > " +
                          quote((root_ / "b.log").string()) + " 2>&1 & pb=$!; wait $pa; ra=$?; wait $pb; rb=$?; " +
                          "echo \"exit $ra $rb\")");
  expect_contains(both.output, "exit 0 0");
  for (const char* name : {"a", "b"}) {
    SCOPED_TRACE(read_bytes(root_ / (std::string(name) + ".log")));
    expect_verifies(name);
  }
  EXPECT_EQ(bundle_files(bundle("a")), bundle_files(bundle("b")));
  auto third = compile("c", cache_arg());
  ASSERT_EQ(third.exit_code, 0) << third.output;
  expect_contains(third.output, "(cache hit");
  EXPECT_TRUE(fs::is_empty(cache_ / "v1" / "tmp")) << "a temporary was left behind";
}

TEST_F(BuildStep, DepfileListsTheSpecTheScriptItsModulesAndItsDataButNotTorch) {
  const fs::path dep = root_ / "tiny.d";
  auto r = compile("tiny", cache_arg() + " --depfile " + quote(dep.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = read_bytes(dep);
  const std::string escaped_project = std::string(root_.string()) + "/my\\ project/";
  EXPECT_EQ(text.rfind(bundle("tiny").string() + "/bundle.fb:", 0), 0u) << text;
  for (const char* file : {"tiny.yaml", "model.py", "helper.py", "config.txt"})
    expect_contains(text, escaped_project + file);
  for (const char* absent : {"/torch/", "dist-packages", "site-packages", "/usr/lib/python3.11/", "__pycache__"})
    EXPECT_EQ(text.find(absent), std::string::npos) << absent << " in:\n" << text;
  // A cache hit writes the same depfile.
  fs::remove(dep);
  auto hit = compile("tiny", cache_arg() + " --depfile " + quote(dep.string()));
  ASSERT_EQ(hit.exit_code, 0) << hit.output;
  expect_contains(hit.output, "(cache hit");
  EXPECT_EQ(read_bytes(dep), text);
}

TEST_F(BuildStep, ProgressLinesPerVariantAndQuietSilencesThem) {
  auto loud = compile("loud", "--no-cache");
  ASSERT_EQ(loud.exit_code, 0) << loud.output;
  for (const char* line : {"aotrace: captured forward, profile batch=1 in ", "aotrace: [1/2] forward v0 (batch=1): lowered in ",
                           "aotrace: [2/2] forward v1 (batch=4): lowered in ", "aotrace: compiled "})
    expect_contains(loud.output, line);
  auto quiet = compile("quiet", "--no-cache --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("aotrace: captured"), std::string::npos) << quiet.output;
  EXPECT_EQ(quiet.output.find("lowered in"), std::string::npos) << quiet.output;
  expect_contains(quiet.output, "aotrace: compiled ");
}

// --report: per variant its guards, kernels with the graph nodes and source lines each
// computes, per-pass timings and sizes; the cache miss, then the hit with the bundle's own
// report; a report path in a missing folder is refused before any work.
TEST_F(BuildStep, ReportListsEachVariantsKernelsWithTheirSourceLinesAndTheCache) {
  const fs::path report = root_ / "report.json";
  auto r = compile("tiny", cache_arg() + " --report " + quote(report.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(read_bytes(report));
  EXPECT_EQ(j["cache"], "miss");
  ASSERT_EQ(j["variants"].size(), 2u);
  const nlohmann::json& v = j["variants"][0];
  EXPECT_EQ(v["entry"], "forward");
  EXPECT_EQ(v["profiles"][0], "batch=1");
  EXPECT_FALSE(v["guards"].empty());
  EXPECT_GT(v["weight_bytes"].get<int64_t>(), 0);
  bool matmul_line = false, relu_line = false;
  for (const auto& k : v["kernels"])
    for (const auto& n : k["nodes"]) {
      const std::string src = n["source"];
      matmul_line |= n["op"] == "matmul" && src == (project_ / "model.py").string() + ":13";
      relu_line |= n["op"] == "relu" && src == (project_ / "helper.py").string() + ":5";
    }
  EXPECT_TRUE(matmul_line && relu_line) << v["kernels"].dump(1);
  bool timed_fuse = false;
  for (const auto& p : v["phases"]) timed_fuse |= p["pass"] == "fuse";
  EXPECT_TRUE(timed_fuse);
  r = compile("again", cache_arg() + " --report " + quote(report.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(read_bytes(report));
  EXPECT_EQ(j["cache"], "hit");
  EXPECT_EQ(j["bundle_report"]["name"], "tiny");
  r = compile("none", "--no-cache --report " + quote((root_ / "missing" / "r.json").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "cannot write the report ");
  expect_contains(r.output, "does not exist");
  EXPECT_EQ(r.output.find("captured"), std::string::npos) << r.output;
}

// After an edit to one entry's code the bundle misses the cache, but the other entry's kernel
// objects come from it (codegen.llvm-cache-hit: no LLVM pipeline), and the bundle is the one a
// compile without the cache gives.
TEST_F(BuildStep, EditingOneEntryRecompilesOnlyThatEntrysKernels) {
  write_bytes(project_ / "model.py", read_bytes(project_ / "model.py") + "\n\ndef shift(x):\n    return x * 5.0 + 1.0\n");
  write_bytes(project_ / "two.yaml",
              "version: 1\nname: two\nscript: model.py\nentries:\n  forward:\n    call: model\n    inputs:\n"
              "      x: {dtype: float32, shape: [2, 8]}\n  shift:\n    call: shift\n    inputs:\n"
              "      x: {dtype: float32, shape: [3, 16]}\n");
  auto two = [&](const std::string& name, const std::string& args) {
    return run_command(quote(AOTRACE_CLI) + " compile " + quote((project_ / "two.yaml").string()) +
                       " --cpu x86-64-v2 -o " + quote(bundle(name).string()) + " " + args);
  };
  auto first = two("first", cache_arg());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::string model = read_bytes(project_ / "model.py");
  model.replace(model.find("5.0"), 3, "6.0");
  write_bytes(project_ / "model.py", model);
  const fs::path report = root_ / "report.json";
  auto edited = two("edited", cache_arg() + " --report " + quote(report.string()));
  ASSERT_EQ(edited.exit_code, 0) << edited.output;
  expect_contains(edited.output, "(cache miss: stored in ");
  nlohmann::json j = nlohmann::json::parse(read_bytes(report));
  ASSERT_EQ(j["variants"].size(), 2u);
  for (const auto& v : j["variants"]) {
    std::set<std::string> phases;
    for (const auto& p : v["phases"]) phases.insert(p["pass"].get<std::string>());
    const bool changed = v["entry"] == "shift";
    EXPECT_EQ(phases.count("codegen.llvm-cache-hit"), changed ? 0u : 1u) << v.dump(1);
    EXPECT_EQ(phases.count("codegen.llvm-opt"), changed ? 1u : 0u) << v.dump(1);
  }
  auto fresh = two("fresh", "--no-cache");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_EQ(bundle_files(bundle("edited")), bundle_files(bundle("fresh")));
  expect_verifies("edited");
}

// --jobs lowers variants at once: the bundle is byte for byte the one of --jobs 1.
TEST_F(BuildStep, JobsLowerVariantsAtOnceAndDoNotChangeTheBundle) {
  auto one = compile("one", "--no-cache --jobs 1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto three = compile("three", "--no-cache -j 3");
  ASSERT_EQ(three.exit_code, 0) << three.output;
  expect_contains(three.output, "aotrace: [2/2] forward v1 (batch=4): lowered in ");
  const auto a = bundle_files(bundle("one")), b = bundle_files(bundle("three"));
  EXPECT_EQ(a.size(), b.size());
  for (const auto& [path, bytes] : a) EXPECT_TRUE(b.count(path) && b.at(path) == bytes) << path;
  EXPECT_EQ(compile("zero", "--no-cache --jobs 0").exit_code, 2);
}

// --dump prints the asked passes' results, bypassing the cache; an unknown pass is a user error
// listing them.
TEST_F(BuildStep, DumpPrintsTheAskedPassesAndSkipsTheCache) {
  auto r = compile("dumped", cache_arg() + " --dump fuse,after-schedule");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "// ----- after fuse -----");
  expect_contains(r.output, "// ----- after schedule -----");
  EXPECT_EQ(r.output.find("// ----- after dce -----"), std::string::npos);
  EXPECT_EQ(r.output.find("(cache "), std::string::npos) << r.output;
  r = compile("typo", "--no-cache --dump fsue");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "--dump: unknown pass 'fsue'; did you mean 'fuse'?");
  expect_contains(r.output, "the passes are decompose, fold-constants");
}

// --winograd-tile picks the Winograd conv's output tile (a 3×3 conv of 32 channels at 16×16:
// F(4×4) by default) and is part of the cache key: the other tile is a miss, never the stored
// bundle of the first.
TEST_F(BuildStep, WinogradTileChoosesTheTransformAndIsPartOfTheCacheKey) {
  write_bytes(project_ / "conv.py",
              "import torch\ntorch.manual_seed(0)\nconv = torch.nn.Conv2d(32, 32, 3, padding=1).eval()\n");
  write_bytes(project_ / "conv.yaml",
              "version: 1\nname: conv\nscript: conv.py\nentries:\n  forward:\n    call: conv\n    inputs:\n"
              "      x: {dtype: float32, shape: [1, 32, 16, 16]}\n");
  auto compile_conv = [&](const std::string& name, const std::string& args) {
    return run_command(quote(AOTRACE_CLI) + " compile " + quote((project_ / "conv.yaml").string()) +
                       " --cpu x86-64-v2 -o " + quote(bundle(name).string()) + " " + args);
  };
  for (auto [tile, plan] : std::vector<std::pair<std::string, std::string>>{{"auto", "winograd fused 4x4 tiles 4x4"},
                                                                           {"2", "winograd fused 2x2 tiles 8x8"},
                                                                           {"4", "winograd fused 4x4 tiles 4x4"}}) {
    auto r = compile_conv("dump" + tile, "--no-cache --dump cpu-plan --winograd-tile " + tile);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_contains(r.output, plan);
  }
  auto first = compile_conv("f2", cache_arg() + " --winograd-tile 2");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  expect_contains(first.output, "(cache miss: stored in ");
  auto other = compile_conv("f4", cache_arg() + " --winograd-tile 4");
  ASSERT_EQ(other.exit_code, 0) << other.output;
  expect_contains(other.output, "(cache miss: stored in ");
  EXPECT_NE(read_bytes(bundle("f2") / "bundle.fb"), read_bytes(bundle("f4") / "bundle.fb"));
  expect_verifies("f4");
  auto again = compile_conv("f2again", cache_arg() + " --winograd-tile 2");
  expect_contains(again.output, "(cache hit: nothing was captured or lowered");
  auto bad = compile_conv("bad", "--no-cache --winograd-tile 3");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  expect_contains(bad.output, "--winograd-tile");
}

TEST_F(BuildStep, DepfileInAMissingFolderIsAUserErrorBeforeAnyWork) {
  auto r = compile("tiny", "--no-cache --depfile " + quote((root_ / "no such dir" / "tiny.d").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "aotrace: error: cannot write the depfile ");
  expect_contains(r.output, "does not exist");
  expect_contains(r.output, "hint: create its folder");
  EXPECT_EQ(r.output.find("captured"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(bundle("tiny")));
}

TEST_F(BuildStep, DepfileThatIsAFolderIsAUserError) {
  auto r = compile("tiny", "--no-cache --depfile " + quote(root_.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "it is a folder");
}

TEST_F(BuildStep, UnusableCacheDirWarnsAndCompilesWithoutIt) {
  write_bytes(root_ / "a file", "not a folder\n");
  auto r = compile("tiny", "--cache-dir " + quote((root_ / "a file").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "aotrace: warning: compiling without the compile cache: cannot create ");
  expect_contains(r.output, "hint: pass a writable --cache-dir, or --no-cache");
  expect_verifies("tiny");
}

TEST_F(BuildStep, NoCacheAndCacheDirTogetherIsAUsageError) {
  auto r = compile("tiny", "--no-cache " + cache_arg());
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
