// The bundle commands through the CLI on examples/mlp (issue 5): determinism of `compile`,
// `inspect [--json]`, `verify`, `run --selftest`, and a failed compile that leaves the output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "tests/support/subprocess.h"

namespace {
namespace fs = std::filesystem;
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
  EXPECT_EQ(j["format_version"], "1.1");
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
  EXPECT_EQ(j["weights"].size(), 6u);  // fc1, fc2, head: weight and bias
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
  for (const char* s : {"format 1.1", "variant v2 (profiles: offline)", "guard L['x'].size()[0] == 32",
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

}  // namespace
