// Write a bundle, open it, run it: layout, determinism, replacement, outputs, C API.
#include <gtest/gtest.h>

#include "artifacts/runtime/aotrace_c.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "bundle_generated.h"
#include "tiny_bundle.h"

extern "C" const char* c_api_call_tiny_bundle(const char* dir);  // c_api_calls.c

namespace aotrace::testing {
namespace {
namespace fs = std::filesystem;
using rt::DType;
using rt::TensorRef;

fs::path written_bundle(const std::string& name) {
  fs::path dir = fresh_temp_dir(name) / "tiny.aot";
  artifacts::write_bundle(tiny_bundle_spec(), dir);
  return dir;
}

TEST(Bundle, WritesTheDocumentedLayout) {
  fs::path dir = written_bundle("layout");
  for (const char* f : {"bundle.fb", "weights.bin", "cpu/x86_64-unknown-linux-gnu.so",
                        "graphs/forward.v0.json", "graphs/forward.v1.json", "report.json",
                        "runtime/CMakeLists.txt", "runtime/aotrace_runtime.h",
                        "runtime/aotrace_kernel_abi.h", "runtime/bundle_generated.h",
                        "runtime/aotrace_run_main.cpp", "runtime/run_tool.h", "runtime/run_tool.cpp",
                        "runtime/npy.h"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_EQ(read_bytes(dir / "graphs/forward.v1.json"), "{\"variant\": \"v1\"}\n");
  // bias (16 bytes) at 0, extra (24 bytes) at the next 64-byte boundary.
  EXPECT_EQ(fs::file_size(dir / "weights.bin"), 64u + 24u);
  std::string fb_bytes = read_bytes(dir / "bundle.fb");
  const auto* b = fb::GetBundle(fb_bytes.data());
  ASSERT_EQ(b->weights()->size(), 2u);
  EXPECT_EQ(b->weights()->Get(1)->offset(), 64u);
  EXPECT_EQ(b->format_major(), 1u);
  EXPECT_EQ(b->files()->size(), std::distance(fs::recursive_directory_iterator(dir),
                                              fs::recursive_directory_iterator()) -
                                     4 /* bundle.fb and the folders cpu, graphs, runtime */);
  const auto* g = b->entries()->Get(0)->variants()->Get(0)->guards()->Get(2);
  EXPECT_EQ(g->text()->str(), "L['x'].size()[0] == 1");
  EXPECT_EQ(g->origin()->str(), "model.py:12");
}

TEST(Bundle, OutputIsDeterministic) {
  fs::path a = written_bundle("det_a"), b = written_bundle("det_b");
  for (const auto& f : fs::recursive_directory_iterator(a)) {
    if (!f.is_regular_file()) continue;
    fs::path rel = fs::relative(f.path(), a);
    EXPECT_EQ(read_bytes(f.path()), read_bytes(b / rel)) << rel;
  }
}

TEST(Bundle, ReplacesAnOldBundleAndLeavesNoTemporaries) {
  fs::path dir = written_bundle("replace");
  write_bytes(dir / "stale.txt", "old");
  artifacts::write_bundle(tiny_bundle_spec(), dir);
  EXPECT_FALSE(fs::exists(dir / "stale.txt"));
  EXPECT_TRUE(fs::exists(dir / "bundle.fb"));
  // Only tiny.aot itself: no .tmp-* or .old-* directories left next to it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.parent_path()), fs::directory_iterator()), 1);
}

TEST(Bundle, OpensAndRunsEachVariant) {
  fs::path dir = written_bundle("run");
  auto bundle = rt::Bundle::open(dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  EXPECT_EQ(bundle->name(), "tiny");
  EXPECT_EQ(bundle->format_major(), 1u);
  auto entry = bundle->entry("forward");
  ASSERT_TRUE(entry.ok()) << entry.status().message();
  EXPECT_EQ(entry->num_outputs(), 2u);
  EXPECT_EQ(entry->output_tree(), "(0, 1)");
  ASSERT_EQ(entry->output_nodes().size(), 3u);
  EXPECT_EQ(entry->output_nodes()[0].kind, rt::OutputNode::Kind::Tuple);
  EXPECT_EQ(entry->output_nodes()[0].children, (std::vector<int>{1, 2}));
  EXPECT_EQ(entry->output_nodes()[2].leaf, 1);

  std::vector<float> x = {1, 2, 3, 4, 10, 20, 30, 40};
  for (int64_t batch : {1, 2}) {
    std::vector<TensorRef> in = {TensorRef{DType::f32, {batch, 4}, x.data()}};
    auto v = entry->select(in);
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(*v, static_cast<size_t>(batch - 1));
    auto outs = entry->run(in);
    ASSERT_TRUE(outs.ok()) << outs.status().message();
    ASSERT_EQ(outs->size(), 2u);
    EXPECT_EQ((*outs)[0].shape(), (std::vector<int64_t>{batch, 4}));
    for (int64_t i = 0; i < batch * 4; ++i) {
      float sum = x[i] + static_cast<float>(i % 4 + 1);
      EXPECT_EQ((*outs)[1].data_as<float>()[i], sum) << i;
      EXPECT_EQ((*outs)[0].data_as<float>()[i], 2 * sum) << i;
    }
  }
}

TEST(Bundle, RunIntoCallerBuffersChecksTheirShapes) {
  auto bundle = rt::Bundle::open(written_bundle("run_into").string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto entry = bundle->entry("forward");
  ASSERT_TRUE(entry.ok());
  std::vector<float> x = {1, 1, 1, 1}, y0(4), y1(4);
  std::vector<TensorRef> in = {TensorRef{DType::f32, {1, 4}, x.data()}};
  rt::Status s = entry->run_into(in, {TensorRef{DType::f32, {1, 4}, y0.data()},
                                  TensorRef{DType::f32, {1, 4}, y1.data()}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(y0, (std::vector<float>{4, 6, 8, 10}));
  rt::Status bad = entry->run_into(in, {TensorRef{DType::f32, {2, 4}, y0.data()},
                                    TensorRef{DType::f32, {1, 4}, y1.data()}});
  EXPECT_EQ(bad.code(), rt::StatusCode::invalid_argument);
  EXPECT_NE(bad.message().find("output 'out0'"), std::string::npos) << bad.message();
}

// The kernels may not write memory they read: run_into refuses an output buffer that overlaps
// an input or another output, naming both.
TEST(Bundle, RunIntoRefusesOverlappingBuffers) {
  auto bundle = rt::Bundle::open(written_bundle("run_into_overlap").string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto entry = bundle->entry("forward");
  ASSERT_TRUE(entry.ok());
  std::vector<float> x = {1, 1, 1, 1, 0, 0}, y0(4), y1(6);
  std::vector<TensorRef> in = {TensorRef{DType::f32, {1, 4}, x.data()}};
  rt::Status into_input = entry->run_into(in, {TensorRef{DType::f32, {1, 4}, x.data() + 2},
                                               TensorRef{DType::f32, {1, 4}, y1.data()}});
  EXPECT_EQ(into_input.code(), rt::StatusCode::invalid_argument);
  EXPECT_NE(into_input.message().find("output 'out0' of entry 'forward' overlaps input 'x'"), std::string::npos)
      << into_input.message();
  rt::Status into_output = entry->run_into(in, {TensorRef{DType::f32, {1, 4}, y1.data()},
                                                TensorRef{DType::f32, {1, 4}, y1.data() + 2}});
  EXPECT_EQ(into_output.code(), rt::StatusCode::invalid_argument);
  EXPECT_NE(into_output.message().find("output 'out1' of entry 'forward' overlaps output 'out0'"), std::string::npos)
      << into_output.message();
  // Adjacent buffers share no byte: accepted.
  ASSERT_TRUE(entry->run_into(in, {TensorRef{DType::f32, {1, 4}, y1.data()}, TensorRef{DType::f32, {1, 4}, y0.data()}}).ok());
  EXPECT_EQ(std::vector<float>(y1.begin(), y1.begin() + 4), (std::vector<float>{4, 6, 8, 10}));
}

TEST(Bundle, UnknownEntryAndMissingDirectoryAreErrors) {
  auto bundle = rt::Bundle::open(written_bundle("unknown").string());
  ASSERT_TRUE(bundle.ok());
  auto e = bundle->entry("backward");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("entries: forward"), std::string::npos);
  auto missing = rt::Bundle::open("/nonexistent/m.aot");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), rt::StatusCode::not_found);
}

// The metadata API (what `aotrace inspect` prints) reads bundle.fb as open() does but loads no
// kernels: it describes a bundle whose kernel library is gone, which open() refuses.
TEST(Bundle, ReadBundleInfoDescribesItWithoutLoadingKernels) {
  fs::path dir = written_bundle("info");
  fs::remove(dir / "cpu/x86_64-unknown-linux-gnu.so");
  ASSERT_FALSE(rt::Bundle::open(dir.string()).ok());
  rt::Result<rt::BundleInfo> info = rt::read_bundle_info(dir.string());
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->name, "tiny");
  EXPECT_EQ(info->triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(info->format_major, rt::kFormatMajor);
  ASSERT_EQ(info->cpu_libraries.size(), 1u);
  EXPECT_EQ(info->cpu_libraries[0].path, "cpu/x86_64-unknown-linux-gnu.so");
  ASSERT_EQ(info->weights.size(), 2u);
  EXPECT_EQ(info->weights[1].name, "extra");
  EXPECT_EQ(info->weights[1].dtype, DType::i64);
  EXPECT_EQ(info->weights[1].offset, 64u);
  ASSERT_EQ(info->entries.size(), 1u);
  const rt::EntryInfo& e = info->entries[0];
  EXPECT_EQ(e.name, "forward");
  EXPECT_EQ(e.output_tree, "(0, 1)");
  ASSERT_EQ(e.variants.size(), 2u);
  const rt::VariantInfo& v = e.variants[1];
  EXPECT_EQ(v.name, "v1");
  EXPECT_EQ(v.profiles, std::vector<std::string>{"batch=2"});
  ASSERT_EQ(v.inputs.size(), 1u);
  EXPECT_EQ(v.inputs[0].shape, (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(v.guards.size(), 4u);
  EXPECT_EQ(v.guards[2].text, "L['x'].size()[0] == 2");
  EXPECT_EQ(v.guards[2].origin, "model.py:12");
  ASSERT_EQ(v.assumptions.size(), 1u);
  EXPECT_EQ(v.assumptions[0].text, "L['self'].training == False");
  EXPECT_EQ(v.kernels, (std::vector<std::string>{"k_add_bias_b2", "k_scale2_n8", "k_copy_n8"}));
  EXPECT_EQ(v.arena_bytes, 64);
  EXPECT_EQ(v.arena_bytes_at_min, 64);
  EXPECT_FALSE(info->files.empty());
  auto missing = rt::read_bundle_info("/nonexistent/m.aot");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), rt::StatusCode::not_found);
}

TEST(Bundle, MissingKernelSymbolIsRefusedAtOpen) {
  artifacts::BundleSpec spec = tiny_bundle_spec();
  spec.entries[0].variants[1].plan.calls[0].symbol = "k_not_there";
  fs::path dir = fresh_temp_dir("nosym") / "m.aot";
  artifacts::write_bundle(spec, dir);
  auto bundle = rt::Bundle::open(dir.string());
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.status().message().find("kernel 'k_not_there' is missing"), std::string::npos)
      << bundle.status().message();
}

TEST(Bundle, CApiRunsAndReportsErrors) {
  fs::path dir = written_bundle("capi");
  aotrace_bundle* b = nullptr;
  ASSERT_EQ(aotrace_bundle_open(dir.c_str(), &b), 0) << aotrace_last_error();
  size_t n = 0;
  ASSERT_EQ(aotrace_entry_num_outputs(b, "forward", &n), 0);
  EXPECT_EQ(n, 2u);
  float x[4] = {0, 0, 0, 0}, y0[4], y1[4];
  int64_t shape[2] = {1, 4}, bad_shape[2] = {3, 4};
  aotrace_tensor in = {0, 2, shape, x};
  aotrace_tensor outs[2] = {{0, 2, shape, y0}, {0, 2, shape, y1}};
  ASSERT_EQ(aotrace_entry_run(b, "forward", &in, 1, outs, 2), 0) << aotrace_last_error();
  EXPECT_EQ(y0[3], 8.0f);
  aotrace_tensor wrong = {0, 2, bad_shape, x};
  EXPECT_EQ(aotrace_entry_run(b, "forward", &wrong, 1, outs, 2),
            static_cast<int>(rt::StatusCode::invalid_argument));
  EXPECT_NE(std::string(aotrace_last_error()).find("got 3"), std::string::npos);
  // Which variant, and the output shapes to allocate, before running.
  size_t variant = 99;
  const char* name = nullptr;
  ASSERT_EQ(aotrace_entry_select(b, "forward", &in, 1, &variant, &name), 0) << aotrace_last_error();
  EXPECT_EQ(variant, 0u);
  EXPECT_STREQ(name, "v0");
  EXPECT_EQ(aotrace_entry_select(b, "forward", &wrong, 1, &variant, nullptr), static_cast<int>(rt::StatusCode::invalid_argument));
  int64_t dims[4] = {0, 0, 0, 0};
  size_t rank = 0;
  ASSERT_EQ(aotrace_entry_output_shape(b, "forward", &in, 1, 1, dims, 4, &rank), 0) << aotrace_last_error();
  EXPECT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], 1);
  EXPECT_EQ(dims[1], 4);
  EXPECT_EQ(aotrace_entry_output_shape(b, "forward", &in, 1, 0, dims, 1, &rank), static_cast<int>(rt::StatusCode::invalid_argument));
  EXPECT_EQ(rank, 2u);
  EXPECT_NE(std::string(aotrace_last_error()).find("more than max_rank 1"), std::string::npos);
  EXPECT_EQ(aotrace_entry_output_shape(b, "forward", &in, 1, 2, dims, 4, &rank), static_cast<int>(rt::StatusCode::invalid_argument));
  aotrace_bundle_close(b);
}

// Entry::run and run_into say which variant ran; variant_profiles names its profiles.
TEST(Bundle, RunSaysWhichVariantRanAndItsProfiles) {
  fs::path dir = written_bundle("which_variant");
  auto bundle = rt::Bundle::open(dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto entry = bundle->entry("forward");
  ASSERT_TRUE(entry.ok());
  std::vector<float> x(8, 1.0f);
  size_t variant = 99;
  auto outs = entry->run({TensorRef{DType::f32, {2, 4}, x.data()}}, &variant);
  ASSERT_TRUE(outs.ok()) << outs.status().message();
  EXPECT_EQ(variant, 1u);
  EXPECT_EQ(entry->variant_profiles(variant), std::vector<std::string>{"batch=2"});
  std::vector<float> y0(4), y1(4);
  ASSERT_TRUE(entry->run_into({TensorRef{DType::f32, {1, 4}, x.data()}},
                              {TensorRef{DType::f32, {1, 4}, y0.data()}, TensorRef{DType::f32, {1, 4}, y1.data()}},
                              &variant)
                  .ok());
  EXPECT_EQ(variant, 0u);
  EXPECT_EQ(entry->variant_profiles(0), std::vector<std::string>{"batch=1"});
  variant = 99;
  EXPECT_FALSE(entry->run({TensorRef{DType::f32, {3, 4}, x.data()}}, &variant).ok());
  EXPECT_EQ(variant, 99u) << "a guard miss leaves the variant alone";
}

// From C: after aotrace_entry_call, the variant that ran and each output's shape and dtype.
TEST(Bundle, CApiCallGivesTheVariantAndEachOutputsShapeAndDtype) {
  fs::path dir = written_bundle("capi_call");
  const char* failure = c_api_call_tiny_bundle(dir.c_str());
  EXPECT_EQ(failure, nullptr) << failure;
}

}  // namespace
}  // namespace aotrace::testing
