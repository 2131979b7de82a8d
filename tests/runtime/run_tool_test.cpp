// The run command of `aotrace run` and `aotrace_run` (run_tool.h) in process, on the tiny bundle
// with its two outputs returned in a dict: keys that are no safe file name, a key whose file
// another output already has, a missing nested output folder, and the parser's errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "artifacts/runtime/npy.h"
#include "artifacts/runtime/run_tool.h"
#include "tiny_bundle.h"

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// The tiny bundle returning {'out1': 2 * (x + bias), 'a/b"c': x + bias}.
fs::path dict_bundle(const std::string& name) {
  artifacts::BundleSpec spec = tiny_bundle_spec();
  for (artifacts::VariantSpec& v : spec.entries[0].variants) {
    v.output_tree.kind = ir::OutputTree::Kind::Dict;
    v.output_tree.keys = {"out1", "a/b\"c"};
  }
  fs::path dir = fresh_temp_dir(name) / "dict.aot";
  artifacts::write_bundle(spec, dir);
  return dir;
}

struct ToolRun {
  rt::ToolStatus status;
  std::string out, err;
};

ToolRun run_tool(const std::vector<std::string>& args) {
  rt::RunToolOptions options;
  ToolRun r;
  r.status = rt::parse_run_tool_args(args, options);
  if (!r.status.ok()) return r;
  std::ostringstream out, err;
  r.status = rt::run_tool(options, "aotrace_run", out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(RunTool, DictKeysBecomeSafeFileNamesUnlessAnotherOutputHasTheName) {
  const fs::path bundle = dict_bundle("run_tool_keys"), out = bundle.parent_path() / "made" / "for" / "it";
  rt::Tensor x(rt::DType::f32, {1, 4});
  ASSERT_TRUE(rt::npy_write((bundle.parent_path() / "x.npy").string(), x.ref()).ok());
  ToolRun r = run_tool({bundle.string(), "--input", "x=" + (bundle.parent_path() / "x.npy").string(),
                        "--output-dir=" + out.string(), "--json"});
  ASSERT_TRUE(r.status.ok()) << r.status.what;
  EXPECT_EQ(r.err,
            "aotrace_run: entry 'forward', variant v0 (profile batch=1)\n"
            "aotrace_run: warning: result['out1'] is written as out0.npy only: another output's file is out1.npy\n");
  const json j = json::parse(r.out);
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["files"], json::array({"out0.npy"}));
  EXPECT_EQ(j["outputs"][1]["place"], "result['a/b\"c']");
  EXPECT_EQ(j["outputs"][1]["name"], "a_b_c");
  EXPECT_EQ(j["outputs"][1]["files"], json::array({"out1.npy", "a_b_c.npy"}));
  EXPECT_EQ(read_bytes(out / "a_b_c.npy"), read_bytes(out / "out1.npy"));
  auto out0 = rt::npy_read((out / "out0.npy").string());
  ASSERT_TRUE(out0.ok());
  EXPECT_EQ(out0->data_as<float>()[3], 8.0f) << "out0.npy is the position's output, 2 * (0 + 4)";
}

TEST(RunTool, AFileInThePlaceOfTheOutputFolderIsAUserError) {
  const fs::path bundle = dict_bundle("run_tool_file");
  rt::Tensor x(rt::DType::f32, {1, 4});
  ASSERT_TRUE(rt::npy_write((bundle.parent_path() / "x.npy").string(), x.ref()).ok());
  ToolRun r = run_tool({bundle.string(), "--input", "x=" + (bundle.parent_path() / "x.npy").string(), "--output-dir",
                        (bundle.parent_path() / "x.npy").string()});
  EXPECT_EQ(r.status.exit_code, 1);
  EXPECT_EQ(r.status.what, "--output-dir '" + (bundle.parent_path() / "x.npy").string() + "' exists and is not a folder");
  EXPECT_EQ(r.status.hint, "choose another --output-dir");
}

TEST(RunTool, CommandLineErrorsAreExit2WithWhatToType) {
  rt::RunToolOptions options;
  auto parse = [&](const std::vector<std::string>& args) {
    options = {};
    return rt::parse_run_tool_args(args, options);
  };
  EXPECT_EQ(parse({}).what, "no bundle given");
  EXPECT_EQ(parse({"b.aot", "c.aot"}).what, "unexpected argument 'c.aot' (the bundle is b.aot)");
  EXPECT_EQ(parse({"b.aot", "--seed", "-1"}).what, "--seed takes a number from 0 to 2^64-1, got '-1'");
  EXPECT_EQ(parse({"b.aot", "--json=yes"}).what, "--json takes no value");
  EXPECT_EQ(parse({"b.aot", "-x"}).what, "unknown option '-x'");
  EXPECT_EQ(parse({"b.aot", "--threads", "--json"}).what, "--threads needs a value: --threads N");
  EXPECT_EQ(parse({"b.aot", "--threads", "1025"}).exit_code, 2);
  ASSERT_TRUE(parse({"--seed=7", "b.aot", "-h"}).ok());
  EXPECT_TRUE(options.help);
  EXPECT_EQ(options.seed, 7u);
  EXPECT_EQ(options.bundle, "b.aot");
}

}  // namespace
}  // namespace aotrace::testing
