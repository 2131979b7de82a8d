// End-to-end: `aotrace compile` each example, run every profile's bundle with the runtime in
// this process, and compare with torch eager computed here through the embedded interpreter.
// Guard misses through `aotrace run` exit 1 with a message naming the input.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "artifacts/runtime/aotrace_c.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/npy.h"
#include "embed/embed.h"
#include "shape_profiles/shape_profiles.h"
#include "tests/support/subprocess.h"

namespace fs = std::filesystem;
using namespace aotrace;
using test::expect_contains;
using test::quote;
using test::run_command;

namespace {

// The end-to-end tolerance for f32 (issue 2): |got - want| <= atol + rtol * |want|.
constexpr double kAtol = 1e-5, kRtol = 1e-4;

const fs::path kExamples = fs::path(AOTRACE_SOURCE_DIR) / "examples";

fs::path temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("aotrace-e2e-" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Compiles a spec once per test process.
fs::path compiled(const fs::path& spec) {
  static std::map<fs::path, fs::path> done;
  if (auto it = done.find(spec); it != done.end()) return it->second;
  fs::path out = temp_dir() / (spec.stem().string() + ".aot");
  auto r = run_command(quote(AOTRACE_CLI) + " compile " + quote(spec.string()) + " -o " + quote(out.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  done[spec] = out;
  return out;
}

// A spec compiled (once per process) with its script run in the embedded interpreter, for
// eager references, and its bundle opened.
struct CompiledSpec {
  shape_profiles::ProfileSet spec;
  rt::Result<rt::Bundle> bundle;
};

CompiledSpec open_compiled(const fs::path& spec_path) {
  const fs::path bundle_dir = compiled(spec_path);
  CompiledSpec c{shape_profiles::parse_profile_file(spec_path), rt::Bundle::open(bundle_dir.string())};
  embed::Interpreter::instance().run_script(c.spec.script);
  return c;
}

const fs::path kDynamicSpec = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "dynamic" / "dynamic.yaml";

// Floats from N(0, 1); integers in [0, 16), valid as token ids or indices of the test models.
ir::HostTensor random_tensor(ir::DType dtype, const std::vector<int64_t>& shape, std::mt19937& rng) {
  ir::HostTensor t = ir::HostTensor::zeros(dtype, shape);
  std::normal_distribution<float> dist;
  std::uniform_int_distribution<int> ints(0, 15);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, ir::is_floating(dtype) ? dist(rng) : ints(rng));
  return t;
}

rt::TensorRef ref(ir::HostTensor& t) {
  rt::TensorRef r;
  r.dtype = static_cast<rt::DType>(t.dtype);  // both enums follow the schema order
  r.shape = t.shape;
  r.data = t.data.data();
  return r;
}

void expect_close(const rt::Tensor& got, const ir::HostTensor& want, const std::string& what,
                  double atol, double rtol) {
  ASSERT_EQ(got.shape(), want.shape) << what;
  ASSERT_EQ(static_cast<int>(got.dtype()), static_cast<int>(want.dtype)) << what;
  ir::HostTensor g{want.dtype, want.shape, ir::Bytes(static_cast<const uint8_t*>(got.data()),
                                                      static_cast<const uint8_t*>(got.data()) + got.nbytes())};
  double worst = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double err = std::abs(g.get(i) - want.get(i));
    worst = std::max(worst, err);
    if (!(err <= atol + rtol * std::abs(want.get(i)))) ++bad;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " elements outside atol/rtol; max abs error " << worst;
}

// The same for two runtime tensors (the CUDA kernels' results against the CPU kernels').
void expect_close(const rt::Tensor& got, const rt::Tensor& want, const std::string& what = "",
                  double atol = kAtol, double rtol = kRtol) {
  const auto* bytes = static_cast<const uint8_t*>(want.data());
  expect_close(got, ir::HostTensor{static_cast<ir::DType>(want.dtype()), want.shape(), ir::Bytes(bytes, bytes + want.nbytes())},
               what, atol, rtol);
}

// Runs `call` eagerly and entry `e` of the bundle on `inputs`, and compares every output; the
// variant that ran goes to `variant`, and run must name the one select chose (a padded call's
// bucket included).
void check_call_against_eager(const rt::Entry& e, const std::string& call, std::vector<ir::HostTensor>& inputs,
                              const std::string& what, double atol, double rtol, std::string* variant = nullptr) {
  std::vector<ir::HostTensor> want = embed::Interpreter::instance().run_eager(call, inputs);
  std::vector<rt::TensorRef> refs;
  for (auto& t : inputs) refs.push_back(ref(t));
  auto v = e.select(refs);
  ASSERT_TRUE(v.ok()) << what << ": " << v.status().message();
  if (variant) *variant = e.variant_name(*v);
  size_t ran = e.num_variants();
  auto got = e.run(refs, &ran);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().message();
  EXPECT_EQ(ran, *v) << what << ": run names variant " << ran << ", select chose " << *v;
  ASSERT_EQ(got->size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) expect_close((*got)[i], want[i], what + " out" + std::to_string(i), atol, rtol);
}

void check_example_against_eager(const fs::path& spec_path, double atol = kAtol, double rtol = kRtol) {
  auto [spec, bundle] = open_compiled(spec_path);
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  std::mt19937 rng(1234);
  int checked = 0;
  for (const auto& entry : spec.entries) {
    auto e = bundle->entry(entry.name);
    ASSERT_TRUE(e.ok()) << e.status().message();
    for (const auto& profile : spec.profiles) {
      std::vector<ir::HostTensor> inputs;
      for (const auto& in : entry.inputs) inputs.push_back(random_tensor(in.dtype, spec.concrete_shape(in, profile), rng));
      check_call_against_eager(*e, entry.call, inputs, entry.name + " profile " + profile.name, atol, rtol);
      if (::testing::Test::HasFatalFailure()) return;
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(spec.entries.size() * spec.profiles.size()));
  EXPECT_GE(checked, 2);
}

// Sizes of the dynamic dims per entry of tests/e2e/dynamic ({"t": 7}).
using EntrySizes = std::map<std::string, std::vector<std::map<std::string, int64_t>>>;

// Each entry of `spec` but nested_encoder (its masks need building) run from `bundle` at each of
// its `sizes` on random inputs, against eager; `variants_used` (if given) gets the variants
// that ran. Returns the calls checked (stops at a fatal failure).
int check_entries_at_sizes(const shape_profiles::ProfileSet& spec, const rt::Bundle& bundle, EntrySizes& sizes,
                           std::mt19937& rng, const std::string& where,
                           std::map<std::string, std::set<std::string>>* variants_used = nullptr) {
  int checked = 0;
  for (const auto& entry : spec.entries) {
    if (entry.name == "nested_encoder") continue;
    auto e = bundle.entry(entry.name);
    EXPECT_TRUE(e.ok()) << e.status().message();
    EXPECT_TRUE(sizes.count(entry.name)) << entry.name;
    if (!e.ok()) return checked;
    for (const auto& dims : sizes[entry.name]) {
      shape_profiles::Profile p;
      p.dims = dims;
      std::string dim;
      for (const auto& [k, v] : dims) dim += (dim.empty() ? "" : ",") + k + "=" + std::to_string(v);
      std::vector<ir::HostTensor> inputs;
      for (const auto& in : entry.inputs) inputs.push_back(random_tensor(in.dtype, spec.concrete_shape(in, p), rng));
      std::string variant;
      check_call_against_eager(*e, entry.call, inputs, entry.name + " " + dim + where, 1e-4, 1e-4, &variant);
      if (::testing::Test::HasFatalFailure()) return checked;
      if (variants_used != nullptr) (*variants_used)[entry.name].insert(variant);
      ++checked;
    }
  }
  return checked;
}

// Issue 13: one bundle of dynamic-dim variants (tests/e2e/dynamic) run at every size of each
// range against eager; dispatch takes the static variant at its size (opt, 1), the symbolic one
// elsewhere, and a size outside the range is a guard miss naming the dim and its declaration.
TEST(DynamicDims, EverySizeOfEveryRangeMatchesEager) {
  const fs::path& spec_path = kDynamicSpec;
  auto [spec, bundle] = open_compiled(spec_path);
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  std::mt19937 rng(99);
  std::map<std::string, std::set<std::string>> variants_used;
  // The small models at every size of their range; issue 13's encoder and resnet18 at the
  // sizes the issue names.
  EntrySizes sizes;
  for (int64_t t = 1; t <= 16; ++t) sizes["gpt2"].push_back({{"t", t}});
  for (const char* name : {"causal_encoder", "size_arithmetic", "branchy"})
    for (int64_t seq = 8; seq <= 40; ++seq) sizes[name].push_back({{"seq", seq}});
  for (int64_t len : {32, 33, 57, 64, 100, 127, 128}) sizes["padded_encoder"].push_back({{"len", len}});
  for (auto [batch, hw] : std::vector<std::pair<int64_t, int64_t>>{{1, 64}, {1, 160}, {2, 96}, {3, 256}, {16, 64}})
    sizes["resnet18"].push_back({{"batch", batch}, {"hw", hw}});
  const int checked = check_entries_at_sizes(spec, *bundle, sizes, rng, "", &variants_used);
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_EQ(checked, 16 + 3 * 33 + 7 + 5);
  // The encoder: one dynamic variant for [32, 128]; resnet18: batch 1 static, then dynamic.
  EXPECT_EQ(bundle->entry("padded_encoder")->num_variants(), 1u);
  EXPECT_EQ(variants_used["resnet18"], (std::set<std::string>{"v0", "v1"}));
  // Static variants first: size 1 and the opt size, then the ranges (branchy's split in two).
  auto gpt2 = bundle->entry("gpt2");
  ASSERT_TRUE(gpt2.ok());
  ASSERT_EQ(gpt2->num_variants(), 2u);
  EXPECT_TRUE(gpt2->dynamic_dims(0).empty());
  ASSERT_EQ(gpt2->dynamic_dims(1).size(), 1u);
  EXPECT_EQ(gpt2->dynamic_dims(1)[0].name, "t");
  EXPECT_EQ(gpt2->dynamic_dims(1)[0].min, 2);
  EXPECT_EQ(gpt2->inputs(1)[0].dims, (std::vector<std::string>{"", "t"}));
  EXPECT_EQ(variants_used["gpt2"], (std::set<std::string>{"v0", "v1"}));
  EXPECT_EQ(variants_used["branchy"], (std::set<std::string>{"v0", "v1", "v2"}));
  EXPECT_EQ(bundle->entry("branchy")->num_variants(), 3u);
  // Outside the range: the miss names the dim, its value and where the YAML declares it.
  ir::HostTensor big = random_tensor(ir::DType::f32, {3, 41}, rng);
  std::vector<rt::TensorRef> refs = {ref(big)};
  auto miss = bundle->entry("branchy")->run(refs);
  ASSERT_FALSE(miss.ok());
  expect_contains(miss.status().message(), "seq = 41 is outside [25, 40] declared at " + spec_path.string() + ":37:3");
  expect_contains(miss.status().message(), "seq = 41 is outside [8, 24] declared at");
  // The selftest runs every variant's golden pair (taken at the range's largest size).
  size_t pairs = 0;
  rt::Status st = bundle->selftest(&pairs);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_GE(pairs, 10u);  // every variant whose golden pair fits the size limit
}

const fs::path kBucketsDir = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "buckets";

// Issue 15: an encoder bundle with seq in buckets [16, 32, 64, 128] at every length 1..128
// against eager: lengths between buckets are padded up (src with 0, the mask with True) and cut
// back; half the calls mask their own last quarter too. The bucket's variant runs, and a length
// above the last bucket is refused, saying so.
TEST(PaddingBuckets, EveryLengthTo128MatchesEagerOnTheValidPositions) {
  auto [spec, bundle] = open_compiled(kBucketsDir / "buckets.yaml");
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto e = bundle->entry("forward");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->num_variants(), 4u);
  std::mt19937 rng(7);
  std::set<std::string> variants;
  for (int64_t len = 1; len <= 128; ++len) {
    std::vector<ir::HostTensor> inputs = {random_tensor(ir::DType::f32, {1, len, 64}, rng),
                                          ir::HostTensor::zeros(ir::DType::b8, {1, len})};
    if (len % 2 == 0)
      for (int64_t i = len - len / 4; i < len; ++i) inputs[1].set(i, 1);
    std::string variant;
    check_call_against_eager(*e, "model", inputs, "seq " + std::to_string(len), 1e-4, 1e-4, &variant);
    if (::testing::Test::HasFatalFailure()) return;
    const int64_t bucket = len <= 16 ? 16 : len <= 32 ? 32 : len <= 64 ? 64 : 128;
    EXPECT_EQ(variant, e->variant_name(bucket == 16 ? 0 : bucket == 32 ? 1 : bucket == 64 ? 2 : 3)) << len;
    variants.insert(variant);
  }
  EXPECT_EQ(variants.size(), 4u);
  ir::HostTensor src = random_tensor(ir::DType::f32, {1, 129, 64}, rng), mask = ir::HostTensor::zeros(ir::DType::b8, {1, 129});
  auto miss = e->run({ref(src), ref(mask)});
  ASSERT_FALSE(miss.ok());
  expect_contains(miss.status().message(), "dim 'seq' is 129 (input 'src' dim 1), above the last bucket 128");
  // The inputs must agree on the dim.
  ir::HostTensor short_mask = ir::HostTensor::zeros(ir::DType::b8, {1, 20});
  ir::HostTensor src30 = random_tensor(ir::DType::f32, {1, 30, 64}, rng);
  auto disagree = e->run({ref(src30), ref(short_mask)});
  ASSERT_FALSE(disagree.ok());
  expect_contains(disagree.status().message(), "input 'mask' dim 1 is 20 but input 'src' dim 1 is 30");
  // inspect lists the bucketed dim: both inputs padded, the one output cut back.
  auto shown = run_command(quote(AOTRACE_CLI) + " inspect " + quote(compiled(kBucketsDir / "buckets.yaml").string()));
  EXPECT_EQ(shown.exit_code, 0) << shown.output;
  expect_contains(shown.output, "dim seq in buckets [16, 32, 64, 128]: calls padded up to a bucket (2 input axes), 1 output axes cut back");
}

// A model whose outputs change with the padding (a mean over the sequence) is refused at compile
// time, naming the output, the first differing index and the cause.
TEST(PaddingBuckets, AModelThatDoesNotMaskItsPaddingIsRefused) {
  const fs::path out = temp_dir() / "nomask.aot";
  auto r = run_command(quote(AOTRACE_CLI) + " compile " + quote((kBucketsDir / "nomask.yaml").string()) + " -o " +
                       quote(out.string()) + " --no-cache");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  expect_contains(r.output, "dim 'seq' = 1 padded up to the bucket 16 changes output 0 of entry 'forward': at [0, 0]");
  expect_contains(r.output, "nomask.yaml:11:3");
  expect_contains(r.output, "the model does not mask padded positions");
  EXPECT_FALSE(fs::exists(out));
}

// A key-padding mask alone takes torch 1.13's nested-tensor path, whose output has zeros at the
// padded positions: the bundle matches eager for left-aligned masks with a full row (rows of
// every length, 0 included) at several sizes of the range, and refuses the masks where eager
// would cut the sequence or take the padded path, saying why and where.
TEST(DynamicDims, NestedTensorPathMatchesEagerAndItsMaskIsGuarded) {
  const fs::path& spec_path = kDynamicSpec;
  auto [spec, bundle] = open_compiled(spec_path);
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto e = bundle->entry("nested_encoder");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->num_variants(), 1u);
  const shape_profiles::EntrySpec* entry = nullptr;
  for (const auto& x : spec.entries)
    if (x.name == "nested_encoder") entry = &x;
  ASSERT_TRUE(entry);
  std::mt19937 rng(7);
  // Row r of the mask pads from lengths[r] on.
  auto mask_of = [](int64_t len, const std::vector<int64_t>& lengths) {
    ir::HostTensor m = ir::HostTensor::zeros(ir::DType::b8, {static_cast<int64_t>(lengths.size()), len});
    for (size_t r = 0; r < lengths.size(); ++r)
      for (int64_t j = 0; j < len; ++j) m.set(static_cast<int64_t>(r) * len + j, j >= lengths[r] ? 1.0 : 0.0);
    return m;
  };
  int checked = 0;
  for (int64_t len : {32, 57, 128})
    for (const std::vector<int64_t>& lengths :
         std::vector<std::vector<int64_t>>{{len, len / 2, 1}, {3, len, 0}, {len, len, len}}) {
      std::vector<ir::HostTensor> inputs{random_tensor(ir::DType::f32, {3, len, 64}, rng), mask_of(len, lengths)};
      check_call_against_eager(*e, entry->call, inputs, "nested_encoder len=" + std::to_string(len), 1e-4, 1e-4);
      if (::testing::Test::HasFatalFailure()) return;
      ++checked;
    }
  EXPECT_EQ(checked, 9);
  // Eager would return 40 of the 57 positions: the guard refuses, naming the encoder's line.
  ir::HostTensor x = random_tensor(ir::DType::f32, {3, 57, 64}, rng);
  ir::HostTensor short_rows = mask_of(57, {40, 20, 1});
  auto miss = e->run({ref(x), ref(short_rows)});
  ASSERT_FALSE(miss.ok());
  expect_contains(miss.status().message(), "every row ends in padding: torch's nested-tensor path would return a shorter sequence");
  expect_contains(miss.status().message(), "torch._nested_tensor_from_mask_left_aligned(L['padding'], L['padding'].logical_not())");
  expect_contains(miss.status().message(), "dynamic.py:");
  // Padding before a token: eager keeps the padded path; the guard refuses it too.
  ir::HostTensor holes = mask_of(57, {57, 57, 57});
  holes.set(57 + 2, 1.0);
  miss = e->run({ref(x), ref(holes)});
  ASSERT_FALSE(miss.ok());
  expect_contains(miss.status().message(), "row 1 has padding at 2 and a token at 3: it is not left-aligned");
}

// inspect shows each variant's dynamic dims and its arena at the dims' minima and maxima (the
// runtime allocates the maxima); a static variant has one peak.
TEST(DynamicDims, InspectShowsTheDimsAndTheArenaAtTheirMinimaAndMaxima) {
  const fs::path bundle_dir = compiled(kDynamicSpec);
  auto r = run_command(quote(AOTRACE_CLI) + " inspect " + quote(bundle_dir.string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  int dynamic = 0, fixed = 0;
  for (const auto& e : j["entries"])
    for (const auto& v : e["variants"]) {
      const int64_t at_max = v["arena_bytes"].get<int64_t>(), at_min = v["arena_bytes_at_min"].get<int64_t>();
      if (v["dynamic_dims"].empty()) {
        EXPECT_EQ(at_min, at_max) << e["name"] << " " << v["name"];
        ++fixed;
        continue;
      }
      if (at_max > 0) {  // branchy has no arena
        EXPECT_LT(at_min, at_max) << e["name"] << " " << v["name"];
      }
      ++dynamic;
      if (e["name"] == "padded_encoder") {
        // seq 32 against 128: activations 4x smaller, attention scores 16x.
        EXPECT_LT(at_min * 4, at_max) << at_min << " " << at_max;
        EXPECT_EQ(v["dynamic_dims"][0]["name"], "len");
      }
    }
  EXPECT_GE(dynamic, 6);
  EXPECT_GE(fixed, 3);
  r = run_command(quote(AOTRACE_CLI) + " inspect " + quote(bundle_dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "dynamic dim len in [32, 128]");
  expect_contains(r.output, "at their minima (allocated once, at open, for the maxima)");
}

TEST(Examples, MlpModuleMatchesEagerForEveryProfile) { check_example_against_eager(kExamples / "mlp" / "mlp.yaml"); }

// Issue 4's models (torchvision CNNs, a ViT, a TransformerEncoder stack, the GPT-2-style test
// model) compiled into one bundle, run by the runtime at batch 1 and 4; f32 tolerance of issue 4.
TEST(Models, EveryModelMatchesEagerAtBatch1And4) {
  check_example_against_eager(fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "models" / "models.yaml", 1e-4, 1e-4);
}

// The golden vectors `compile` stores come from torch eager (issue 5: no reference interpreter
// at compile time): eager here, on the stored inputs, gives the stored outputs; the kernels pass
// them (selftest); gpt2's token ids are small integers, not the capture's zeros.
TEST(Models, GoldenVectorsAreEagerOutputsAndTheKernelsPassThem) {
  const fs::path spec_path = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "models" / "models.yaml";
  auto [spec, bundle] = open_compiled(spec_path);
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  const fs::path bundle_dir = compiled(spec_path);  // its golden files
  auto& interp = embed::Interpreter::instance();
  size_t pairs = 0, variants = 0;
  rt::Status selftest = bundle->selftest(&pairs);
  EXPECT_TRUE(selftest.ok()) << selftest.message();
  auto host = [](const rt::Tensor& t) {
    const auto* p = static_cast<const uint8_t*>(t.data());
    return ir::HostTensor{static_cast<ir::DType>(t.dtype()), t.shape(), ir::Bytes(p, p + t.nbytes())};
  };
  for (const auto& entry : spec.entries) {
    auto e = bundle->entry(entry.name);
    ASSERT_TRUE(e.ok()) << e.status().message();
    for (size_t v = 0; v < e->num_variants(); ++v, ++variants) {
      const std::string stem = (bundle_dir / "golden" / (entry.name + "." + e->variant_name(v) + ".0.")).string();
      std::vector<ir::HostTensor> inputs;
      for (size_t i = 0; i < entry.inputs.size(); ++i) {
        auto t = rt::npy_read(stem + "in" + std::to_string(i) + ".npy");
        ASSERT_TRUE(t.ok()) << t.status().message();
        inputs.push_back(host(*t));
      }
      if (entry.name == "gpt2") {
        double most = 0;
        for (int64_t i = 0; i < inputs[0].numel(); ++i) most = std::max(most, inputs[0].get(i));
        EXPECT_EQ(most, 3) << "golden token ids of gpt2 " << e->variant_name(v);
      }
      std::vector<ir::HostTensor> want = interp.run_eager(entry.call, inputs);
      for (size_t i = 0; i < want.size(); ++i) {
        auto got = rt::npy_read(stem + "out" + std::to_string(i) + ".npy");
        ASSERT_TRUE(got.ok()) << got.status().message();
        expect_close(*got, want[i], stem + "out" + std::to_string(i), 1e-5, 1e-5);
      }
    }
  }
  EXPECT_EQ(pairs, variants);
  EXPECT_GE(variants, spec.entries.size());
}

// nanoGPT's `(logits, None)`: the None is a constant of the output tree, kept in the bundle and
// read back by the runtime; the outputs are the tensors alone.
TEST(Models, NoneInTheOutputIsAConstantOfTheTree) {
  const fs::path bundle_dir = compiled(fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "models" / "models.yaml");
  auto bundle = rt::Bundle::open(bundle_dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto e = bundle->entry("gpt2_without_targets");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->output_tree(), "(0, None)");
  ASSERT_EQ(e->output_nodes().size(), 3u);
  EXPECT_EQ(e->output_nodes()[2].kind, rt::OutputNode::Kind::Constant);
  EXPECT_EQ(e->output_nodes()[2].value, "None");
  auto r = run_command(quote(AOTRACE_CLI) + " inspect " + quote(bundle_dir.string()));
  EXPECT_NE(r.output.find("output tree (0, None)"), std::string::npos) << r.output;
}

// Integer inputs the entry rejects in [0, 4) (an embedding of 2 rows) keep the capture's zeros in
// the golden vectors, which the bundle then passes.
TEST(Models, GoldenIntegerInputsTheEntryRejectsStayZero) {
  const fs::path dir = temp_dir() / "embedding";
  fs::create_directories(dir);
  std::ofstream(dir / "embedding.py") << "import torch\ntorch.manual_seed(0)\n"
                                         "two_rows = torch.nn.Embedding(2, 3).eval()\n";
  std::ofstream(dir / "embedding.yaml")
      << "version: 1\nname: embedding\nscript: embedding.py\nentries:\n  forward:\n    call: two_rows\n"
         "    inputs:\n      idx: {dtype: int64, shape: [2, n]}\ndims:\n  n: [5]\n";
  const fs::path bundle_dir = compiled(dir / "embedding.yaml");
  auto idx = rt::npy_read((bundle_dir / "golden" / "forward.v0.0.in0.npy").string());
  ASSERT_TRUE(idx.ok()) << idx.status().message();
  ASSERT_EQ(idx->numel(), 10);
  for (int64_t i = 0; i < idx->numel(); ++i) EXPECT_EQ(idx->data_as<int64_t>()[i], 0) << i;
  auto bundle = rt::Bundle::open(bundle_dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  size_t pairs = 0;
  rt::Status selftest = bundle->selftest(&pairs);
  EXPECT_TRUE(selftest.ok()) << selftest.message();
  EXPECT_EQ(pairs, 1u);
}

// A float16 or bfloat16 model (a GPU's and an LLM's usual dtypes) compiles, stores golden
// vectors of its dtype (bfloat16 as '<V2' .npy files, its bits, as NumPy saves
// ml_dtypes.bfloat16) and passes them; `run` on a file of the input (for bfloat16 a float32 file,
// rounded to nearest even) writes outputs that match eager in the model's dtype (bfloat16
// widened to float32). Torch 1.13's CPU build lacks float16 layer_norm, linear, gelu and softmax:
// eager runs them widened to float32 and rounded, and compile says so.
// The model of check_low_precision_model in temp_dir()/DTYPE_TARGETS: net.py and net.yaml.
fs::path write_low_precision_model(const std::string& dtype, const std::string& targets) {
  const fs::path dir = temp_dir() / (dtype + "_" + std::to_string(std::hash<std::string>{}(targets)));
  fs::create_directories(dir);
  std::ofstream(dir / "net.py") << "import torch\ntorch.manual_seed(0)\n"
                                   "net = torch.nn.Sequential(torch.nn.LayerNorm(64), torch.nn.Linear(64, 48),\n"
                                   "                          torch.nn.GELU(), torch.nn.Softmax(-1)).to(torch."
                                << dtype << ").eval()\n";
  std::ofstream(dir / "net.yaml") << "version: 1\nname: net\nscript: net.py\nentries:\n  forward:\n    call: net\n"
                                     "    inputs:\n      x: {dtype: " << dtype << ", shape: [20, 64]}\ntargets: " << targets << "\n";
  return dir;
}

void check_low_precision_model(const std::string& dtype) {
  const bool bf16 = dtype == "bfloat16";
  const ir::DType low = bf16 ? ir::DType::bf16 : ir::DType::f16;
  const fs::path dir = write_low_precision_model(dtype, "[cpu]");
  const fs::path bundle_dir = dir / "net.aot";
  auto compiled = run_command(quote(AOTRACE_CLI) + " compile -q --no-cache " + quote((dir / "net.yaml").string()) +
                              " -o " + quote(bundle_dir.string()));
  ASSERT_EQ(compiled.exit_code, 0) << compiled.output;
  const std::string note = "note: entry 'forward': torch's CPU build has no float16/bfloat16 kernels for layer_norm, "
                           "linear, gelu, softmax; its golden vectors compute them in float32 and round the results";
  if (bf16)
    EXPECT_EQ(compiled.output.find("note:"), std::string::npos) << compiled.output;
  else
    expect_contains(compiled.output, note);
  std::ifstream golden(bundle_dir / "golden" / "forward.v0.0.in0.npy", std::ios::binary);
  std::string header(128, '\0');
  golden.read(header.data(), static_cast<std::streamsize>(header.size()));
  expect_contains(header, bf16 ? "'descr': '<V2'" : "'descr': '<f2'");
  auto verified = run_command(quote(AOTRACE_CLI) + " run " + quote(bundle_dir.string()) + " --selftest");
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  expect_contains(verified.output, "1 golden pair(s) match");

  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  ir::HostTensor rounded = ir::HostTensor::zeros(low, {20, 64});  // HostTensor::set rounds to even
  rt::Tensor x(bf16 ? rt::DType::f32 : rt::DType::f16, {20, 64});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = i == 1 ? 1.00390625f : 3 * normal(rng);  // [1]: halfway between bfloat16 1 and 1.0078125
    rounded.set(i, v);
    if (bf16) x.data_as<float>()[i] = v;
  }
  if (bf16) ASSERT_EQ(rounded.get(1), 1.0);  // to even
  if (!bf16) std::memcpy(x.data(), rounded.data.data(), x.nbytes());
  ASSERT_TRUE(rt::npy_write((dir / "x.npy").string(), x.ref()).ok());
  auto r = run_command(quote(AOTRACE_CLI) + " run " + quote(bundle_dir.string()) + " --input x=" +
                       quote((dir / "x.npy").string()) + " --output-dir " + quote((dir / "out").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, bf16 ? "result  bfloat16 [20, 48] (as float32)" : "result  float16 [20, 48]\n");
  // A file of another dtype is a guard miss, whose hint says what to save instead.
  rt::Tensor wrong(bf16 ? rt::DType::f64 : rt::DType::f32, {20, 64});
  ASSERT_TRUE(rt::npy_write((dir / "wrong.npy").string(), wrong.ref()).ok());
  auto refused = run_command(quote(AOTRACE_CLI) + " run " + quote(bundle_dir.string()) + " --input x=" +
                             quote((dir / "wrong.npy").string()));
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  expect_contains(refused.output, bf16 ? "guard L['input'].dtype == torch.bfloat16 failed (got float64)"
                                       : "guard L['input'].dtype == torch.float16 failed (got float32)");
  expect_contains(refused.output, bf16 ? "hint: save input x as float32 (rounded to bfloat16 here): "
                                         "numpy.save(FILE, array.astype(numpy.float32))"
                                       : "hint: save input x as float16: numpy.save(FILE, array.astype(numpy.float16))");
  auto got = rt::npy_read((dir / "out" / "out0.npy").string());
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->dtype(), bf16 ? rt::DType::f32 : rt::DType::f16);
  const auto* bytes = static_cast<const uint8_t*>(got->data());
  const ir::HostTensor g{bf16 ? ir::DType::f32 : ir::DType::f16, got->shape(), ir::Bytes(bytes, bytes + got->nbytes())};

  embed::Interpreter::instance().run_script(dir / "net.py");
  std::vector<ir::HostTensor> want = embed::Interpreter::instance().run_eager("net", {rounded});
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(want[0].dtype, low);
  ASSERT_EQ(want[0].numel(), g.numel());
  int64_t bad = 0;
  for (int64_t i = 0; i < want[0].numel(); ++i) {
    const double w = want[0].get(i), v = g.get(i);
    if (bf16) {
      uint32_t bits;
      std::memcpy(&bits, &got->data_as<float>()[i], 4);
      EXPECT_EQ(bits & 0xffffu, 0u) << i << ": not a bfloat16 widened";
    }
    // A few units in the last place: kernels round a fused chain once, eager after every op.
    bad += !(std::abs(v - w) <= (bf16 ? 1.6e-2 : 2e-3) * std::abs(w) + 1e-4);
  }
  EXPECT_EQ(bad, 0) << "of " << want[0].numel();
}

TEST(LowPrecision, Float16ModelsCompileRunAndMatchEager) { check_low_precision_model("float16"); }
TEST(LowPrecision, BFloat16ModelsCompileRunFromFloat32FilesAndMatchEager) { check_low_precision_model("bfloat16"); }

// torch's bfloat16 linear, addmm and baddbmm add the bias (times beta) to the f32 sums (times
// alpha) and round once; rounding the product first and again after the bias puts 26 to 63 of
// each output's 1536 elements more than one unit in the last place from eager's. Each output must
// be eager's within one unit (the sums' order differs: vdpbf16ps, or the widened FMA path), and
// nearly all of them equal.
TEST(LowPrecision, BFloat16LinearAndAddmmAddTheBiasBeforeTheirOneRounding) {
  const fs::path dir = temp_dir() / "bf16_bias";
  fs::create_directories(dir);
  std::ofstream(dir / "bias.py")
      << "import torch\ntorch.manual_seed(0)\n"
         "lin = torch.nn.Linear(64, 48).to(torch.bfloat16).eval()\n"
         "b = torch.randn(48).to(torch.bfloat16)\n"
         "def f(x):\n"
         "    wt = lin.weight.t()\n"
         "    return (lin(x), torch.addmm(b, x, wt),\n"
         "            torch.baddbmm(b, x.unsqueeze(0), wt.unsqueeze(0), beta=0.5, alpha=2)[0])\n";
  std::ofstream(dir / "bias.yaml") << "version: 1\nname: bias\nscript: bias.py\nentries:\n  forward:\n    call: f\n"
                                      "    inputs:\n      x: {dtype: bfloat16, shape: [32, 64]}\n";
  auto [spec, bundle] = open_compiled(dir / "bias.yaml");
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto e = bundle->entry("forward");
  ASSERT_TRUE(e.ok()) << e.status().message();
  std::mt19937 rng(7);
  std::vector<ir::HostTensor> inputs = {random_tensor(ir::DType::bf16, {32, 64}, rng)};
  std::vector<ir::HostTensor> want = embed::Interpreter::instance().run_eager("f", inputs);
  std::vector<rt::TensorRef> refs = {ref(inputs[0])};
  auto got = e->run(refs);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 3u);
  for (size_t o = 0; o < 3; ++o) {
    const rt::Tensor& g = (*got)[o];
    ASSERT_EQ(g.dtype(), rt::DType::bf16);
    ASSERT_EQ(g.numel(), want[o].numel());
    // bfloat16 bits (sign and magnitude) as integers in the values' order: units apart.
    auto rank = [](uint16_t b) { return (b & 0x8000u) ? -int(b & 0x7fffu) : int(b); };
    const auto* bits = static_cast<const uint16_t*>(g.data());
    int64_t differ = 0, far = 0;
    for (int64_t i = 0; i < g.numel(); ++i) {
      uint16_t w;
      std::memcpy(&w, want[o].data.data() + 2 * i, 2);
      const int units = std::abs(rank(bits[i]) - rank(w));
      differ += units != 0;
      far += units > 1;
    }
    EXPECT_EQ(far, 0) << "output " << o << ": elements more than one unit from eager";
    EXPECT_LE(differ, g.numel() / 100) << "output " << o << ": elements that differ from eager";
  }
}

TEST(Examples, PlainFunctionMatchesEagerForEveryProfile) {
  check_example_against_eager(kExamples / "function" / "function.yaml");
}

// An input of 512 MB (f32 [131072, 1024]): explain, compile and run succeed, and the bundle keeps
// no golden vectors of that size.
TEST(LargeInput, FiveHundredMegabytesCompileAndRun) {
  const fs::path dir = temp_dir() / "large";
  fs::create_directories(dir);
  std::ofstream(dir / "big.py") << "def f(x):\n    return (x * 2).sum(-1)\n";
  std::ofstream(dir / "big.yaml") << "version: 1\nname: big\nscript: big.py\nentries:\n  forward:\n"
                                     "    call: f\n    inputs:\n      x: {dtype: float32, shape: [131072, 1024]}\n";
  auto explain = run_command(quote(AOTRACE_CLI) + " explain " + quote((dir / "big.yaml").string()));
  ASSERT_EQ(explain.exit_code, 0) << explain.output;
  auto compile = run_command(quote(AOTRACE_CLI) + " compile " + quote((dir / "big.yaml").string()) + " -o " +
                             quote((dir / "big.aot").string()));
  ASSERT_EQ(compile.exit_code, 0) << compile.output;
  EXPECT_LT(fs::file_size(dir / "big.aot" / "bundle.fb"), 1u << 20);
  {
    rt::Tensor x(rt::DType::f32, {131072, 1024});
    float* p = static_cast<float*>(x.data());
    for (int64_t i = 0; i < 131072 * 1024; ++i) p[i] = static_cast<float>(i % 3);
    ASSERT_TRUE(rt::npy_write((dir / "x.npy").string(), x.ref()).ok());
  }
  auto run = run_command(quote(AOTRACE_CLI) + " run " + quote((dir / "big.aot").string()) + " --input x=" +
                         quote((dir / "x.npy").string()) + " --output-dir " + quote((dir / "out").string()));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto out = rt::npy_read((dir / "out" / "out0.npy").string());
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->shape(), (std::vector<int64_t>{131072}));
  const float* o = static_cast<const float*>(out->data());
  for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{65536}, int64_t{131071}}) {
    double want = 0;
    for (int64_t c = 0; c < 1024; ++c) want += 2.0 * static_cast<double>((r * 1024 + c) % 3);
    EXPECT_NEAR(o[r], want, 1e-3) << "row " << r;
  }
  fs::remove_all(dir);
}

// Guard misses through the CLI: exit 1 and a message naming the input and the rejecting guards.
class GuardMiss : public ::testing::Test {
 protected:
  void write(const std::string& name, rt::DType dtype, std::vector<int64_t> shape) {
    rt::Tensor t(dtype, std::move(shape));
    ASSERT_TRUE(rt::npy_write((temp_dir() / name).string(), t.ref()).ok());
  }
  test::CommandResult run_mlp(const std::string& input) {
    return run_command(quote(AOTRACE_CLI) + " run " + quote(compiled(kExamples / "mlp" / "mlp.yaml").string()) +
                       " --input x=" + quote((temp_dir() / input).string()) + " --output-dir " +
                       quote((temp_dir() / "guard-out").string()));
  }
};

TEST_F(GuardMiss, MatchingInputRuns) {
  write("x8.npy", rt::DType::f32, {8, 784});
  auto r = run_mlp("x8.npy");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto out = rt::npy_read((temp_dir() / "guard-out" / "out0.npy").string());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->shape(), (std::vector<int64_t>{8, 10}));
}

TEST_F(GuardMiss, WrongBatch) {
  write("x5.npy", rt::DType::f32, {5, 784});
  auto r = run_mlp("x5.npy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("input 'x' has shape [5, 784]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("L['x'].size()[0] == 8 failed (got 5)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("L['x'].size()[0] == 32 failed (got 5)"), std::string::npos) << r.output;
}

TEST_F(GuardMiss, WrongDtype) {
  write("x8d.npy", rt::DType::f64, {8, 784});
  auto r = run_mlp("x8d.npy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("input 'x'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("float64"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("L['x'].dtype == torch.float32"), std::string::npos) << r.output;
  expect_contains(r.output, "hint: save input x as float32: numpy.save(FILE, array.astype(numpy.float32))");
}

TEST_F(GuardMiss, WrongRank) {
  write("x1d.npy", rt::DType::f32, {784});
  auto r = run_mlp("x1d.npy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("input 'x'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("L['x'].dim() == 2"), std::string::npos) << r.output;
}

// An entry that changes its inputs in place (a KV-cache write, an in-place scale): the runtime
// writes their new values back into the caller's tensors, as eager leaves them; the selftest
// checks them; inspect lists them; `aotrace run` writes them as updated_NAME.npy.
TEST(InputUpdates, AreWrittenBackAsEagerLeavesThem) {
  const fs::path dir = temp_dir() / "updates";
  fs::create_directories(dir);
  std::ofstream(dir / "updates.py") << "import torch\n"
                                       "def step(cache, new, x):\n"
                                       "    cache[:, 2:4] = new\n"
                                       "    x.mul_(2.0)\n"
                                       "    return (cache * x[:, :1]).sum(dim=1)\n";
  std::ofstream(dir / "updates.yaml")
      << "version: 1\nname: updates\nscript: updates.py\nentries:\n  step:\n    call: step\n"
         "    inputs:\n      cache: {dtype: float32, shape: [b, 8]}\n      new: {dtype: float32, shape: [b, 2]}\n"
         "      x: {dtype: float32, shape: [b, 3]}\ndims:\n  b: [1, 3]\n";
  const fs::path bundle_dir = compiled(dir / "updates.yaml");
  auto bundle = rt::Bundle::open(bundle_dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  size_t pairs = 0;
  rt::Status selftest = bundle->selftest(&pairs);
  EXPECT_TRUE(selftest.ok()) << selftest.message();
  EXPECT_EQ(pairs, 2u);
  auto e = bundle->entry("step");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->num_outputs(), 1u);
  EXPECT_EQ(e->updated_inputs(0), (std::vector<int32_t>{0, 2}));

  auto& interp = embed::Interpreter::instance();
  interp.run_script(dir / "updates.py");
  std::mt19937 rng(5);
  std::vector<ir::HostTensor> inputs = {random_tensor(ir::DType::f32, {3, 8}, rng),
                                        random_tensor(ir::DType::f32, {3, 2}, rng),
                                        random_tensor(ir::DType::f32, {3, 3}, rng)};
  std::vector<ir::HostTensor> want = interp.run_eager("step", inputs, {{0, 1}, {2, 2}});
  ASSERT_EQ(want.size(), 3u);
  std::vector<rt::TensorRef> refs;
  for (auto& t : inputs) refs.push_back(ref(t));
  auto got = e->run(refs);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_EQ(got->size(), 1u);
  expect_close((*got)[0], want[0], "out0", kAtol, kRtol);
  auto as_tensor = [](const ir::HostTensor& h) {
    rt::Tensor t(static_cast<rt::DType>(h.dtype), h.shape);
    std::memcpy(t.data(), h.data.data(), h.data.size());
    return t;
  };
  expect_close(as_tensor(inputs[0]), want[1], "cache written back", 0, 0);
  expect_close(as_tensor(inputs[2]), want[2], "x written back", 0, 0);

  auto r = run_command(quote(AOTRACE_CLI) + " inspect " + quote(bundle_dir.string()));
  EXPECT_NE(r.output.find("updates input cache in place"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("updates input x in place"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("input-updates"), std::string::npos) << r.output;
  const fs::path in = bundle_dir / "golden";
  const fs::path out = dir / "run";
  r = run_command(quote(AOTRACE_CLI) + " run " + quote(bundle_dir.string()) + " --input cache=" +
                  quote((in / "step.v1.0.in0.npy").string()) + " --input new=" + quote((in / "step.v1.0.in1.npy").string()) +
                  " --input x=" + quote((in / "step.v1.0.in2.npy").string()) + " --output-dir " + quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"out0.npy", "updated_cache.npy", "updated_x.npy"}) EXPECT_TRUE(fs::exists(out / f)) << f;
  auto cache = rt::npy_read((out / "updated_cache.npy").string());
  auto golden = rt::npy_read((in / "step.v1.0.out1.npy").string());
  ASSERT_TRUE(cache.ok() && golden.ok());
  ASSERT_EQ(cache->nbytes(), golden->nbytes());
  EXPECT_EQ(std::memcmp(cache->data(), golden->data(), cache->nbytes()), 0);
}

// Inputs beyond tensors: a tuple and a dict of tensors (flattened as pair.0, feats.gain) and
// Python scalars (0-d int64/float64/bool inputs, compiled in, guarded at run time).
TEST(NonTensorInputs, ContainersAndScalarsMatchEagerAndScalarsAreGuarded) {
  const fs::path dir = temp_dir() / "nontensor";
  fs::create_directories(dir);
  std::ofstream(dir / "net.py") << "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"
                                   "class Net(nn.Module):\n"
                                   "    def __init__(self):\n"
                                   "        super().__init__()\n"
                                   "        self.fc = nn.Linear(4, 4)\n"
                                   "    def forward(self, x, pair, feats, n, scale, causal):\n"
                                   "        a, b = pair\n"
                                   "        h = self.fc(x + a * b) * scale\n"
                                   "        for _ in range(n):\n"
                                   "            h = torch.tanh(h) + 1\n"
                                   "        if causal:\n"
                                   "            h = h + feats['bias']\n"
                                   "        return h * feats['gain'], n\n"
                                   "net = Net()\n";
  std::ofstream(dir / "net.yaml")
      << "version: 1\nname: net\nscript: net.py\nentries:\n  forward:\n    call: net\n    inputs:\n"
         "      x: {dtype: float32, shape: [b, 4]}\n"
         "      pair: {type: tuple, items: [{dtype: float32, shape: [b, 4]}, {dtype: float32, shape: [b, 4]}]}\n"
         "      feats: {type: dict, items: {bias: {dtype: float32, shape: [4]}, gain: {dtype: float32, shape: [b, 4]}}}\n"
         "      n: {type: int, value: 2}\n      scale: {type: float, value: 0.5}\n      causal: {type: bool, value: true}\n"
         "dims:\n  b: [1, 3]\n";
  const fs::path bundle_dir = compiled(dir / "net.yaml");
  auto bundle = rt::Bundle::open(bundle_dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  size_t pairs = 0;
  rt::Status selftest = bundle->selftest(&pairs);
  EXPECT_TRUE(selftest.ok()) << selftest.message();
  EXPECT_EQ(pairs, 2u);
  auto e = bundle->entry("forward");
  ASSERT_TRUE(e.ok()) << e.status().message();
  ASSERT_EQ(e->num_inputs(), 8u);
  EXPECT_EQ(e->inputs(0)[1].name, "pair.0");
  EXPECT_EQ(e->inputs(0)[4].name, "feats.gain");
  EXPECT_EQ(e->output_tree(), "(0, 2)");
  double value = 0;
  EXPECT_TRUE(e->scalar_input(0, 6, &value));
  EXPECT_EQ(value, 0.5);
  EXPECT_FALSE(e->scalar_input(0, 0));

  using K = embed::CaptureArg::Kind;
  const std::vector<embed::CaptureArg> args = {
      {K::Tensor, "x", 0, {}},
      {K::Tuple, "pair", -1, {{K::Tensor, "0", 1, {}}, {K::Tensor, "1", 2, {}}}},
      {K::Dict, "feats", -1, {{K::Tensor, "bias", 3, {}}, {K::Tensor, "gain", 4, {}}}},
      {K::Scalar, "n", 5, {}}, {K::Scalar, "scale", 6, {}}, {K::Scalar, "causal", 7, {}}};
  auto& interp = embed::Interpreter::instance();
  interp.run_script(dir / "net.py");
  std::mt19937 rng(3);
  for (int64_t b : {1, 3}) {
    std::vector<ir::HostTensor> inputs = {
        random_tensor(ir::DType::f32, {b, 4}, rng), random_tensor(ir::DType::f32, {b, 4}, rng),
        random_tensor(ir::DType::f32, {b, 4}, rng), random_tensor(ir::DType::f32, {4}, rng),
        random_tensor(ir::DType::f32, {b, 4}, rng), ir::HostTensor::zeros(ir::DType::i64, {}),
        ir::HostTensor::zeros(ir::DType::f64, {}), ir::HostTensor::zeros(ir::DType::b8, {})};
    inputs[5].set(0, 2);
    inputs[6].set(0, 0.5);
    inputs[7].set(0, 1);
    std::vector<ir::HostTensor> want = interp.run_eager("net", inputs, {}, args);
    ASSERT_EQ(want.size(), 1u);
    std::vector<rt::TensorRef> refs;
    for (auto& t : inputs) refs.push_back(ref(t));
    auto got = e->run(refs);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->size(), 1u);
    expect_close((*got)[0], want[0], "b=" + std::to_string(b), kAtol, kRtol);
    inputs[5].set(0, 3);  // another n: the program would differ, the guard says so
    auto miss = e->run(refs);
    ASSERT_FALSE(miss.ok());
    EXPECT_NE(miss.status().message().find("guard L['n'] == 2 failed (got the value 3)"), std::string::npos)
        << miss.status().message();
  }
  auto r = run_command(quote(AOTRACE_CLI) + " inspect " + quote(bundle_dir.string()));
  EXPECT_NE(r.output.find("scalar-inputs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("guard L['causal'] == True"), std::string::npos) << r.output;
}

// Two entries whose models have weights of the same name and shape but different values
// (`L['self'].fc.weight` in both): each entry reads its own. Equal weights are stored once.
TEST(Bundle, WeightsAreSharedByContentNotByName) {
  const fs::path dir = temp_dir() / "two_models";
  fs::create_directories(dir);
  std::ofstream(dir / "two.py") << "import torch\nimport torch.nn as nn\n"
                                   "class M(nn.Module):\n"
                                   "    def __init__(self, seed):\n"
                                   "        super().__init__()\n"
                                   "        torch.manual_seed(seed)\n"
                                   "        self.fc = nn.Linear(4, 4)\n"
                                   "    def forward(self, x):\n"
                                   "        return self.fc(x)\n"
                                   "a, b = M(1), M(2)\n"
                                   "also_a = a\n";
  std::ofstream(dir / "two.yaml") << "version: 1\nname: two\nscript: two.py\nentries:\n"
                                     "  a: {call: a, inputs: {x: {dtype: float32, shape: [2, 4]}}}\n"
                                     "  b: {call: b, inputs: {x: {dtype: float32, shape: [2, 4]}}}\n"
                                     "  also_a: {call: also_a, inputs: {x: {dtype: float32, shape: [2, 4]}}}\n";
  const fs::path bundle_dir = compiled(dir / "two.yaml");
  auto bundle = rt::Bundle::open(bundle_dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto& interp = embed::Interpreter::instance();
  interp.run_script(dir / "two.py");
  std::mt19937 rng(9);
  std::vector<ir::HostTensor> inputs = {random_tensor(ir::DType::f32, {2, 4}, rng)};
  for (const char* name : {"a", "b", "also_a"}) {
    auto e = bundle->entry(name);
    ASSERT_TRUE(e.ok()) << e.status().message();
    std::vector<ir::HostTensor> want = interp.run_eager(name, inputs);
    auto got = e->run({ref(inputs[0])});
    ASSERT_TRUE(got.ok()) << got.status().message();
    expect_close((*got)[0], want[0], name, kAtol, kRtol);
  }
  auto r = run_command(quote(AOTRACE_CLI) + " inspect " + quote(bundle_dir.string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  std::vector<std::string> names;  // a's and b's weight and bias (also_a's are a's)
  for (const auto& w : j["weights"]) names.push_back(w["name"].get<std::string>());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"fc.bias", "fc.bias", "fc.weight", "fc.weight"}));
}

// Random numbers (a VAE's reparameterisation): the bundle draws from its own generator, a new
// sample per call, the same sequence after the same manual_seed, with the moments of N(0, 1);
// its golden pair (the reference's numbers for a fixed state) passes the selftest.
TEST(Random, SamplesDifferPerCallRepeatPerSeedAndAreStandardNormal) {
  const fs::path dir = temp_dir() / "random";
  fs::create_directories(dir);
  std::ofstream(dir / "vae.py") << "import torch\n"
                                   "def reparameterize(mu, logvar):\n"
                                   "    std = torch.exp(0.5 * logvar)\n"
                                   "    eps = torch.randn_like(std)\n"
                                   "    return mu + eps * std\n";
  std::ofstream(dir / "vae.yaml") << "version: 1\nname: vae\nscript: vae.py\nentries:\n"
                                     "  sample: {call: reparameterize, inputs: {mu: {dtype: float32, shape: [256, 256]},"
                                     " logvar: {dtype: float32, shape: [256, 256]}}}\n";
  const fs::path bundle_dir = compiled(dir / "vae.yaml");
  auto bundle = rt::Bundle::open(bundle_dir.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  size_t pairs = 0;
  rt::Status selftest = bundle->selftest(&pairs);
  EXPECT_TRUE(selftest.ok()) << selftest.message();
  EXPECT_EQ(pairs, 1u);
  auto e = bundle->entry("sample");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->draws_random());
  EXPECT_EQ(e->num_inputs(), 2u);  // the generator state is the runtime's
  rt::Tensor mu(rt::DType::f32, {256, 256}), logvar(rt::DType::f32, {256, 256});  // zeros: N(0, 1)
  auto call = [&] {
    auto r = e->run({mu.ref(), logvar.ref()});
    EXPECT_TRUE(r.ok()) << r.status().message();
    const float* p = (*r)[0].data_as<float>();
    return std::vector<float>(p, p + (*r)[0].numel());
  };
  e->manual_seed(5);
  const std::vector<float> first = call(), second = call();
  EXPECT_NE(first, second);
  e->manual_seed(5);
  EXPECT_EQ(call(), first);
  EXPECT_EQ(call(), second);
  double sum = 0, squares = 0;
  for (float v : first) sum += v, squares += static_cast<double>(v) * v;
  const double n = static_cast<double>(first.size()), mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(squares / n - mean * mean, 1.0, 0.02);
  // The C API seeds the same generator.
  aotrace_bundle* cb = nullptr;
  ASSERT_EQ(aotrace_bundle_open(bundle_dir.string().c_str(), &cb), 0) << aotrace_last_error();
  ASSERT_EQ(aotrace_entry_manual_seed(cb, "sample", 5), 0) << aotrace_last_error();
  const int64_t shape[2] = {256, 256};
  std::vector<float> out(first.size());
  const aotrace_tensor ins[2] = {{0, 2, shape, mu.data()}, {0, 2, shape, logvar.data()}};
  const aotrace_tensor outs[1] = {{0, 2, shape, out.data()}};
  ASSERT_EQ(aotrace_entry_run(cb, "sample", ins, 2, outs, 1), 0) << aotrace_last_error();
  EXPECT_EQ(out, first);
  aotrace_bundle_close(cb);
  auto r = run_command(quote(AOTRACE_CLI) + " inspect " + quote(bundle_dir.string()));
  EXPECT_NE(r.output.find("random"), std::string::npos) << r.output;
}

TEST(Bundle, HoldsOneVariantPerProfileAndTheDeclaredFiles) {
  const fs::path b = compiled(kExamples / "mlp" / "mlp.yaml");
  for (const char* f : {"bundle.fb", "weights.bin", "report.json", "graphs/forward.v0.json",
                        "runtime/CMakeLists.txt", "runtime/aotrace_runtime.h"})
    EXPECT_TRUE(fs::exists(b / f)) << f;
  auto bundle = rt::Bundle::open(b.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto e = bundle->entry("forward");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->num_variants(), 3u);
}

// The fake CUDA driver (tests/runtime/fake_cuda_driver.cpp) for the runtime's CUDA path: set up
// through the environment for the object's lifetime, with `kernels` the host-code library of
// `aotrace compile --cuda-emulation-library`.
struct FakeCudaStats {
  long launches, graphs_instantiated, graph_launches, modules_loaded, live_allocations, context_depth;
};
class FakeCuda {
 public:
  explicit FakeCuda(const fs::path& kernels, const std::string& arch = "") {
    ::setenv("AOTRACE_CUDA_DRIVER", FAKE_CUDA_DRIVER, 1);
    ::setenv("AOTRACE_FAKE_CUDA_KERNELS", kernels.c_str(), 1);
    if (!arch.empty()) ::setenv("AOTRACE_FAKE_CUDA_ARCH", arch.c_str(), 1);
    handle_ = ::dlopen(FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);  // the runtime's dlopen finds this one
    start_ = stats();
  }
  ~FakeCuda() {
    ::unsetenv("AOTRACE_CUDA_DRIVER");
    ::unsetenv("AOTRACE_FAKE_CUDA_KERNELS");
    ::unsetenv("AOTRACE_FAKE_CUDA_ARCH");
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  rt::OpenOptions options() const {
    rt::OpenOptions o;
    o.device = rt::DeviceKind::cuda;
    return o;
  }
  // The same for a command line: "AOTRACE_CUDA_DRIVER=... AOTRACE_FAKE_CUDA_KERNELS=... ".
  static std::string cli_env(const fs::path& kernels) {
    return "AOTRACE_CUDA_DRIVER=" + quote(FAKE_CUDA_DRIVER) + " AOTRACE_FAKE_CUDA_KERNELS=" + quote(kernels.string()) + " ";
  }
  // Counts since this object was made (live_allocations: now).
  FakeCudaStats stats() const {
    auto fn = reinterpret_cast<FakeCudaStats (*)()>(::dlsym(handle_, "fake_cuda_stats"));
    if (fn == nullptr) return {};
    FakeCudaStats s = fn();
    s.launches -= start_.launches;
    s.graphs_instantiated -= start_.graphs_instantiated;
    s.graph_launches -= start_.graph_launches;
    s.modules_loaded -= start_.modules_loaded;
    return s;
  }

 private:
  void* handle_ = nullptr;
  FakeCudaStats start_{};
};

// `spec` compiled into OUT with its CUDA kernels also as host code (--cuda-emulation-library
// KERNELS), for the fake driver.
test::CommandResult compile_with_emulation(const fs::path& spec, const fs::path& out, const fs::path& kernels) {
  return run_command(quote(AOTRACE_CLI) + " compile -q " + quote(spec.string()) + " -o " + quote(out.string()) +
                     " --cuda-emulation-library " + quote(kernels.string()));
}

// A copy of `spec` beside the bundles, its script named by absolute path, with `targets`.
fs::path with_targets(const fs::path& spec, const std::string& targets) {
  std::ifstream in(spec);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), out, line;
  std::istringstream lines(text);
  while (std::getline(lines, line)) {
    if (line.rfind("targets:", 0) == 0) continue;
    if (line.rfind("script: ", 0) == 0) line = "script: " + (spec.parent_path() / line.substr(8)).string();
    out += line + "\n";
  }
  const fs::path copy = temp_dir() / (spec.stem().string() + "_" + std::to_string(std::hash<std::string>{}(targets)) + ".yaml");
  std::ofstream(copy) << out << "targets: " << targets << "\n";
  return copy;
}

// Issue 17, without a GPU: every kernel of every e2e model goes through LLVM's NVPTX backend and
// the toolkit's ptxas into cubins for sm_80 and sm_90 (and PTX for sm_80), listed with their
// hashes; a CUDA-only bundle names the feature "cuda", and a runtime without a GPU driver
// refuses it saying what to do.
TEST(Cuda, EveryModelsKernelsAssembleForSm80AndSm90) {
  const fs::path spec = with_targets(fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "models" / "models.yaml", "[cuda]");
  const fs::path out = temp_dir() / "models_cuda.aot", emulation = temp_dir() / "models_cuda_emulation.so";
  auto r = compile_with_emulation(spec, out, emulation);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "CUDA kernel(s)");
  expect_contains(r.output, "kernels for CUDA sm_80, sm_90 (PTX sm_80)");
  auto shown = run_command(quote(AOTRACE_CLI) + " inspect --json " + quote(out.string()) + " 2>/dev/null");
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  const nlohmann::json j = nlohmann::json::parse(shown.output);
  EXPECT_NE(std::find(j["required_features"].begin(), j["required_features"].end(), "cuda"), j["required_features"].end());
  std::set<std::string> images;
  for (const auto& image : j["hardware"]["cuda_images"]) {
    images.insert(image["path"].get<std::string>());
    EXPECT_GT(image["size"].get<int64_t>(), 1000) << image.dump();
  }
  EXPECT_EQ(images, (std::set<std::string>{"cuda/sm_80.cubin", "cuda/sm_90.cubin", "cuda/sm_80.ptx"}));
  size_t variants = 0;
  for (const auto& e : j["entries"])
    for (const auto& v : e["variants"]) {
      ++variants;
      EXPECT_TRUE(v["kernels"].empty()) << v["name"];
      EXPECT_FALSE(v["cuda_kernels"].empty()) << v["name"];
    }
  EXPECT_EQ(variants, 26u);  // 13 models at batch 1 and 4
  // inspect's text says there are no CPU kernels rather than listing an empty CPU.
  shown = run_command(quote(AOTRACE_CLI) + " inspect " + quote(out.string()) + " 2>/dev/null");
  expect_contains(shown.output, "hardware: no CPU kernels (CUDA only; `targets: [cpu, cuda]` in the spec adds them)");
  EXPECT_EQ(shown.output.find(" 0 kernel(s)"), std::string::npos) << shown.output;
  expect_contains(shown.output, "CUDA kernel(s), device arena");
  // Every kernel the plans launch is an entry of the PTX (ptxas assembled all of it).
  std::ifstream ptx_file(out / "cuda" / "sm_80.ptx");
  const std::string ptx((std::istreambuf_iterator<char>(ptx_file)), std::istreambuf_iterator<char>());
  for (const auto& e : j["entries"])
    for (const auto& v : e["variants"])
      for (const auto& k : v["cuda_kernels"]) EXPECT_NE(ptx.find(".entry " + k.get<std::string>() + "("), std::string::npos) << k;
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto bundle = rt::Bundle::open(out.string());
  ASSERT_FALSE(bundle.ok());
  EXPECT_EQ(bundle.status().code(), rt::StatusCode::unsupported);
  expect_contains(bundle.status().message(), "has CUDA kernels only (sm_80, sm_90, PTX sm_80)");
  expect_contains(bundle.status().message(), "`targets: [cpu, cuda]`");
  if (driver == nullptr) expect_contains(bundle.status().message(), "this machine has no CUDA driver (libcuda.so.1");
  else ::dlclose(driver);
  // The runtime's CUDA path on every model (closures, symbols, arena, weights, launch sizes,
  // graphs) through the fake driver, which runs the kernels' grid functions on the CPU: each
  // variant's golden vectors, torch eager's.
  FakeCuda fake(emulation);
  auto on_gpu = rt::Bundle::open(out.string(), fake.options());
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().message();
  EXPECT_EQ(on_gpu->cuda_image(), "cuda/sm_90.cubin");
  size_t checked = 0;
  rt::Status s = on_gpu->selftest(&checked);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(checked, 26u);
  const FakeCudaStats stats = fake.stats();
  EXPECT_EQ(stats.graphs_instantiated, 26);  // one per variant: static shapes
  EXPECT_EQ(stats.graph_launches, 26);
  EXPECT_GE(stats.launches, 1388 - 100);     // every kernel call launched (a few have no threads)
  // `aotrace verify` of the CUDA-only bundle: on the (fake) GPU, else refused with the reason.
  const std::string env = FakeCuda::cli_env(emulation);
  auto verified = run_command(env + quote(AOTRACE_CLI) + " verify " + quote(out.string()));
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  expect_contains(verified.output, "every file's size and XXH3 hash match");
  expect_contains(verified.output, "26 golden pair(s) match on GPU 0 (sm_90");
  auto nowhere = run_command("AOTRACE_CUDA_DRIVER=/nonexistent/libcuda.so.1 " + quote(AOTRACE_CLI) + " verify " +
                             quote(out.string()));
  EXPECT_EQ(nowhere.exit_code, 1) << nowhere.output;
  expect_contains(nowhere.output, "the bundle has CUDA kernels only and cannot run here");
}

// check_low_precision_model's float16 and bfloat16 models on the (fake) GPU: their kernels
// (warp reductions computed in f32, the linear layer a tiled GEMM on the type's mma, emulated)
// pass the golden vectors from eager.
TEST(Cuda, Float16AndBFloat16ModelsPassTheirGoldenVectorsOnTheGpu) {
  for (const char* dtype : {"float16", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    const fs::path dir = write_low_precision_model(dtype, "[cuda]");
    const fs::path out = dir / "net_cuda.aot", emulation = dir / "net_emulation.so";
    auto r = compile_with_emulation(dir / "net.yaml", out, emulation);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto selftest = run_command(FakeCuda::cli_env(emulation) + quote(AOTRACE_CLI) + " run " + quote(out.string()) +
                                " --selftest --device cuda");
    EXPECT_EQ(selftest.exit_code, 0) << selftest.output;
    expect_contains(selftest.output, "1 golden pair(s) match (kernels cuda/sm_90.cubin on a sm_90 GPU)");
  }
}

// The dynamic-dim models (tests/e2e/dynamic) compiled for the GPU: their symbolic launch sizes,
// warp and split reductions and tiled GEMMs at several sizes of each range through the fake
// driver, against eager. (nanoGPT's masked attention at T = 1 once failed in LLVM's NVPTX
// selection: codegen.cpp gpu_entry.)
TEST(Cuda, DynamicModelsRunAtSeveralSizesOfEachRange) {
  const fs::path spec_path = with_targets(kDynamicSpec, "[cuda]");
  const fs::path out = temp_dir() / "dynamic_cuda.aot", emulation = temp_dir() / "dynamic_cuda_emulation.so";
  auto r = compile_with_emulation(spec_path, out, emulation);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const shape_profiles::ProfileSet spec = shape_profiles::parse_profile_file(kDynamicSpec);
  embed::Interpreter::instance().run_script(spec.script);
  FakeCuda fake(emulation);
  auto bundle = rt::Bundle::open(out.string(), fake.options());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  EntrySizes sizes;
  for (int64_t t : {1, 2, 7, 16}) sizes["gpt2"].push_back({{"t", t}});
  for (const char* name : {"causal_encoder", "size_arithmetic", "branchy"})
    for (int64_t seq : {8, 9, 24, 25, 40}) sizes[name].push_back({{"seq", seq}});
  for (int64_t len : {32, 57, 128}) sizes["padded_encoder"].push_back({{"len", len}});
  for (auto [batch, hw] : std::vector<std::pair<int64_t, int64_t>>{{1, 64}, {2, 96}})
    sizes["resnet18"].push_back({{"batch", batch}, {"hw", hw}});
  std::mt19937 rng(7);
  const int checked = check_entries_at_sizes(spec, *bundle, sizes, rng, " on the GPU");
  if (::testing::Test::HasFatalFailure()) return;
  EXPECT_EQ(checked, 4 + 3 * 5 + 3 + 2);
  EXPECT_GT(fake.stats().launches, 0);
}

// `options: {cuda_math: tf32}` (f16, bf16): the tiled matmuls and convs of resnet18 and GPT-2 on
// tensor cores (mma.sync in the PTX), run here through the fake driver (whose emulated mma
// reads the fragments through the PTX ISA's tables): the golden vectors (torch eager, f32) pass
// at the tolerance the bundle's math names, and miss f32's, as that arithmetic does (f32
// kernels are within 1e-5 of eager; measured at batch 4, of the largest output: TF32 and f16 up
// to 5.7e-4, bf16 up to 4.0e-3). The bundle names the feature "cuda-math" (1.8 runtimes would
// hold it to f32's tolerance).
TEST(Cuda, TensorCoreBundlesRunWithinTheirMathsTolerance) {
  const fs::path models = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "e2e" / "models";
  struct Math {
    std::string name;
    double above, below;  // the largest deviation from eager, relative to the largest output
  };
  for (const Math& math : {Math{"tf32", 1e-4, 5e-3}, Math{"f16", 1e-4, 5e-3}, Math{"bf16", 1e-3, 2e-2}}) {
    SCOPED_TRACE(math.name);
    const fs::path spec = temp_dir() / (math.name + "_models.yaml");
    std::ofstream(spec) << "version: 1\nname: " << math.name << "_models\nscript: " << (models / "models.py").string() << "\n"
                        << "entries:\n"
                        << "  resnet18: {call: resnet18, inputs: {x: {dtype: float32, shape: [batch, 3, 64, 64]}}}\n"
                        << "  gpt2: {call: gpt2, inputs: {idx: {dtype: int64, shape: [batch, 16]}}}\n"
                        << "dims: {batch: [4]}\ntargets: [cuda]\noptions: {cuda_math: " << math.name << "}\n";
    const fs::path out = temp_dir() / (math.name + "_models.aot"), emulation = temp_dir() / (math.name + "_models_emulation.so");
    auto r = compile_with_emulation(spec, out, emulation);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_contains(r.output, "kernels for CUDA sm_80, sm_90 (PTX sm_80) with " + math.name + " tensor cores");
    std::ifstream ptx_file(out / "cuda" / "sm_80.ptx");
    const std::string ptx((std::istreambuf_iterator<char>(ptx_file)), std::istreambuf_iterator<char>());
    expect_contains(ptx, math.name == "tf32" ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
                                             : "mma.sync.aligned.m16n8k16.row.col.f32." + math.name + "." + math.name + ".f32");
    auto shown = run_command(quote(AOTRACE_CLI) + " inspect " + quote(out.string()));
    expect_contains(shown.output, "matmul math " + math.name + " (tensor cores");
    expect_contains(shown.output, "required features: cuda, cuda-math");
    FakeCuda fake(emulation);
    auto bundle = rt::Bundle::open(out.string(), fake.options());
    ASSERT_TRUE(bundle.ok()) << bundle.status().message();
    size_t checked = 0;
    rt::Status s = bundle->selftest(&checked);
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(checked, 2u);
    for (const std::string model : {"resnet18", "gpt2"}) {
      auto e = bundle->entry(model);
      ASSERT_TRUE(e.ok()) << e.status().message();
      const std::string stem = (out / "golden" / (model + "." + e->variant_name(0) + ".0.")).string();
      auto in = rt::npy_read(stem + "in0.npy");
      auto want = rt::npy_read(stem + "out0.npy");
      ASSERT_TRUE(in.ok() && want.ok());
      auto got = e->run({in->ref()});
      ASSERT_TRUE(got.ok()) << got.status().message();
      const float* g = static_cast<const float*>((*got)[0].data());
      const float* w = static_cast<const float*>(want->data());
      double scale = 1, worst = 0;
      for (int64_t i = 0; i < want->numel(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(w[i])));
      for (int64_t i = 0; i < want->numel(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(g[i]) - w[i]) / scale);
      EXPECT_GT(worst, math.above) << model;
      EXPECT_LT(worst, math.below) << model;
    }
  }
}

// A bundle for `targets: [cpu, cuda]` runs its CPU kernels on a machine without a GPU: verify
// checks its golden vectors, and inspect lists the CUDA images beside the CPU libraries.
TEST(Cuda, ACpuAndCudaBundleRunsItsCpuKernelsHere) {
  const fs::path spec = with_targets(kExamples / "mlp" / "mlp.yaml", "[cpu, cuda]");
  const fs::path out = temp_dir() / "mlp_cpu_cuda.aot";
  auto r = run_command(quote(AOTRACE_CLI) + " compile -q --no-cache " + quote(spec.string()) + " -o " + quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "21 kernel(s), 21 CUDA kernel(s)");
  auto verified = run_command(quote(AOTRACE_CLI) + " verify " + quote(out.string()));
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  expect_contains(verified.output, "3 golden pair(s) match");
  expect_contains(verified.output, "CUDA kernels (sm_80, sm_90, PTX sm_80) not run");
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); driver == nullptr)
    expect_contains(verified.output, "no CUDA driver here (libcuda.so.1");
  else
    ::dlclose(driver);
  auto shown = run_command(quote(AOTRACE_CLI) + " inspect " + quote(out.string()));
  expect_contains(shown.output, "cuda images: 3 (run them with --device cuda)");
  expect_contains(shown.output, "cuda/sm_90.cubin: cubin for sm_90");
  expect_contains(shown.output, "7 CUDA kernel(s), device arena");
  // A CUDA tensor is refused with the reason, not read as host memory.
  auto bundle = rt::Bundle::open(out.string());
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto e = bundle->entry("forward");
  ASSERT_TRUE(e.ok());
  std::vector<float> x(784);
  auto run = e->run({rt::TensorRef(rt::DType::f32, {1, 784}, x.data(), {}, rt::DeviceKind::cuda)});
  ASSERT_FALSE(run.ok());
  expect_contains(run.status().message(), "on cuda (the bundle was opened for the CPU: open it with OpenOptions::device = cuda)");
}

// `device: cuda` on an input: on a GPU its device guard asks for GPU memory (a host tensor is a
// guard miss naming it), the run tool and bench put it there; on the CPU it is host memory as
// every input; the golden vectors pass on both.
TEST(Cuda, AnInputDeclaredOnCudaIsGuardedOnTheGpu) {
  const fs::path spec = temp_dir() / "mlp_device_cuda.yaml";
  std::ofstream(spec) << "version: 1\nname: mlp\nscript: " << (kExamples / "mlp" / "mlp.py").string()
                      << "\nentries:\n  forward:\n    call: model\n    inputs:\n"
                         "      x: {dtype: float32, shape: [4, 784], device: cuda}\n"
                         "targets: [cpu, cuda]\n";
  const fs::path out = temp_dir() / "mlp_device_cuda.aot", emulation = temp_dir() / "mlp_device_cuda.so";
  auto r = compile_with_emulation(spec, out, emulation);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  rt::Tensor x(rt::DType::f32, {4, 784});
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = std::sin(0.01f * static_cast<float>(i));
  const auto info = rt::read_bundle_info(out.string());
  ASSERT_TRUE(info.ok());
  EXPECT_NE(std::find(info->required_features.begin(), info->required_features.end(), "cuda-inputs"),
            info->required_features.end());
  auto cpu = rt::Bundle::open(out.string());
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  auto ce = cpu->entry("forward");
  EXPECT_EQ(ce->input_device(0, 0), rt::DeviceKind::cuda);
  auto want = ce->run({x.ref()});  // host memory on the CPU
  ASSERT_TRUE(want.ok()) << want.status().message();
  std::unique_ptr<void, int (*)(void*)> keep(::dlopen(FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL), ::dlclose);
  {
    FakeCuda fake(emulation);
    auto gpu = rt::Bundle::open(out.string(), fake.options());
    ASSERT_TRUE(gpu.ok()) << gpu.status().message();
    auto e = gpu->entry("forward");
    auto miss = e->run({x.ref()});
    ASSERT_FALSE(miss.ok());
    expect_contains(miss.status().message(), "L['x'].device == torch.device('cuda:0') failed (got cpu)");
    auto dx = gpu->allocate(rt::DType::f32, {4, 784});
    ASSERT_TRUE(dx.ok());
    ASSERT_TRUE(gpu->copy(dx->ref(), x.ref()).ok());
    auto got = e->run({dx->ref()});  // host outputs: copied out
    ASSERT_TRUE(got.ok()) << got.status().message();
    expect_close((*got)[0], (*want)[0], "output", 1e-4, 0);
    size_t checked = 0;
    EXPECT_TRUE(gpu->selftest(&checked).ok());
    EXPECT_EQ(checked, 1u);
  }
  ASSERT_TRUE(rt::npy_write((temp_dir() / "x_device.npy").string(), x.ref()).ok());
  const std::string env = FakeCuda::cli_env(emulation);
  auto ran = run_command(env + quote(AOTRACE_CLI) + " run " + quote(out.string()) + " --device cuda --input x=" +
                         quote((temp_dir() / "x_device.npy").string()) + " --output-dir " +
                         quote((temp_dir() / "device_out").string()));
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  auto written = rt::npy_read((temp_dir() / "device_out" / "out0.npy").string());
  ASSERT_TRUE(written.ok()) << written.status().message();
  expect_close(*written, (*want)[0], "out0.npy", 1e-4, 0);
  auto bench = run_command(env + quote(AOTRACE_CLI) + " bench " + quote(out.string()) + " --device cuda --iterations 2");
  EXPECT_EQ(bench.exit_code, 0) << bench.output;
}

// Inputs changed in place and random numbers on the (fake) GPU, against the same bundle's CPU
// kernels: new values written back into GPU tensors (device to device) and host tensors
// (device to host); the generator's draws the CPU's for the same seed and call.
TEST(Cuda, InputUpdatesAndRandomNumbersMatchTheCpu) {
  const fs::path dir = temp_dir() / "cuda_updates";
  fs::create_directories(dir);
  std::ofstream(dir / "step.py") << "import torch\n"
                                    "def step(cache, new, x):\n"
                                    "    cache[:, 2:4] = new\n"
                                    "    x.mul_(2.0)\n"
                                    "    return (cache * x[:, :1]).sum(dim=1) + 0.1 * torch.randn(cache.shape[0])\n";
  std::ofstream(dir / "step.yaml")
      << "version: 1\nname: step\nscript: step.py\nentries:\n  step:\n    call: step\n"
         "    inputs:\n      cache: {dtype: float32, shape: [3, 8]}\n      new: {dtype: float32, shape: [3, 2]}\n"
         "      x: {dtype: float32, shape: [3, 3]}\ntargets: [cpu, cuda]\n";
  const fs::path out = dir / "step.aot", emulation = dir / "step_emulation.so";
  auto r = compile_with_emulation(dir / "step.yaml", out, emulation);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  auto filled = [&](std::vector<int64_t> shape) {
    rt::Tensor t(rt::DType::f32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = unit(rng);
    return t;
  };
  const rt::Tensor cache0 = filled({3, 8}), new0 = filled({3, 2}), x0 = filled({3, 3});
  auto copy_of = [](const rt::Tensor& t) {
    rt::Tensor c(t.dtype(), t.shape());
    std::memcpy(c.data(), t.data(), t.nbytes());
    return c;
  };
  auto cpu = rt::Bundle::open(out.string());
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  auto ce = cpu->entry("step");
  ASSERT_TRUE(ce->draws_random());
  rt::Tensor cache_cpu = copy_of(cache0), x_cpu = copy_of(x0);
  ce->manual_seed(3);
  auto want = ce->run({cache_cpu.ref(), new0.ref(), x_cpu.ref()});
  ASSERT_TRUE(want.ok()) << want.status().message();
  std::unique_ptr<void, int (*)(void*)> keep(::dlopen(FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL), ::dlclose);
  FakeCuda fake(emulation);
  auto gpu = rt::Bundle::open(out.string(), fake.options());
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  auto e = gpu->entry("step");
  // Host tensors: copied in, the new values copied back out.
  rt::Tensor cache_host = copy_of(cache0), x_host = copy_of(x0);
  e->manual_seed(3);
  auto got = e->run({cache_host.ref(), new0.ref(), x_host.ref()});
  ASSERT_TRUE(got.ok()) << got.status().message();
  expect_close((*got)[0], (*want)[0], "output (host tensors)");
  expect_close(cache_host, cache_cpu, "cache written back (host)");
  expect_close(x_host, x_cpu, "x written back (host)");
  // GPU tensors: the new values written back on the GPU.
  auto dcache = gpu->allocate(rt::DType::f32, {3, 8}), dnew = gpu->allocate(rt::DType::f32, {3, 2}),
       dx = gpu->allocate(rt::DType::f32, {3, 3});
  ASSERT_TRUE(dcache.ok() && dnew.ok() && dx.ok());
  ASSERT_TRUE(gpu->copy(dcache->ref(), cache0.ref()).ok() && gpu->copy(dnew->ref(), new0.ref()).ok() &&
              gpu->copy(dx->ref(), x0.ref()).ok());
  e->manual_seed(3);
  auto on_gpu = e->run({dcache->ref(), dnew->ref(), dx->ref()});
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().message();
  expect_close((*on_gpu)[0], (*want)[0], "output (GPU tensors)");
  rt::Tensor cache_back(rt::DType::f32, {3, 8}), x_back(rt::DType::f32, {3, 3});
  ASSERT_TRUE(gpu->copy(cache_back.ref(), dcache->ref()).ok() && gpu->copy(x_back.ref(), dx->ref()).ok());
  expect_close(cache_back, cache_cpu, "cache written back (GPU)");
  expect_close(x_back, x_cpu, "x written back (GPU)");
  // The next call on the same inputs draws new numbers, as on the CPU.
  ASSERT_TRUE(gpu->copy(dcache->ref(), cache0.ref()).ok() && gpu->copy(dx->ref(), x0.ref()).ok());
  auto second = e->run({dcache->ref(), dnew->ref(), dx->ref()});
  ASSERT_TRUE(second.ok());
  EXPECT_NE(std::memcmp((*second)[0].data(), (*on_gpu)[0].data(), (*second)[0].nbytes()), 0);
}

// The runtime's CUDA path through the fake driver on a model with a dynamic batch: host tensors
// copied in and out, GPU tensors (Bundle::allocate, the C API's device pointers), one CUDA Graph
// per batch size replayed for a size seen before, against the same bundle's CPU kernels; and
// the refusals: a GPU tensor for a CPU-opened bundle, a misaligned device pointer, a GPU that no
// image fits, no driver. Everything allocated on the "GPU" is freed with the bundle.
TEST(Cuda, TheRuntimeRunsCudaKernelsWithGraphsAndDevicePointers) {
  const fs::path spec = temp_dir() / "mlp_dynamic_cuda.yaml";
  std::ofstream(spec) << "version: 1\nname: mlp\nscript: " << (kExamples / "mlp" / "mlp.py").string()
                      << "\nentries:\n  forward:\n    call: model\n    inputs:\n"
                         "      x: {dtype: float32, shape: [batch, 784]}\n"
                         "dims:\n  batch: {min: 1, max: 64}\ntargets: [cpu, cuda]\n";
  const fs::path out = temp_dir() / "mlp_dynamic_cuda.aot", emulation = temp_dir() / "mlp_dynamic_cuda.so";
  auto r = compile_with_emulation(spec, out, emulation);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto cpu = rt::Bundle::open(out.string());
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  // The fake driver stays loaded for the whole test, so that its count of live allocations
  // spans the bundles opened and closed below.
  std::unique_ptr<void, int (*)(void*)> keep(::dlopen(FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL), ::dlclose);
  ASSERT_NE(keep, nullptr) << ::dlerror();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  auto input = [&](int64_t batch) {
    rt::Tensor x(rt::DType::f32, {batch, 784});
    for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = unit(rng);
    return x;
  };
  {
    FakeCuda fake(emulation);
    auto gpu = rt::Bundle::open(out.string(), fake.options());
    ASSERT_TRUE(gpu.ok()) << gpu.status().message();
    EXPECT_EQ(gpu->device(), rt::DeviceKind::cuda);
    EXPECT_EQ(gpu->cuda_arch(), "sm_90");
    auto e = gpu->entry("forward");
    auto ce = cpu->entry("forward");
    ASSERT_TRUE(e.ok() && ce.ok());
    // Host tensors at batch 3, 5, 3 (the dynamic variant): a graph per new size only.
    for (int64_t batch : {3, 5, 3}) {
      rt::Tensor x = input(batch);
      auto want = ce->run({x.ref()});
      auto got = e->run({x.ref()});
      ASSERT_TRUE(want.ok() && got.ok()) << (got.ok() ? want.status().message() : got.status().message());
      expect_close((*got)[0], (*want)[0]);
    }
    EXPECT_EQ(fake.stats().graphs_instantiated, 2);
    EXPECT_EQ(fake.stats().graph_launches, 3);
    EXPECT_EQ(fake.stats().context_depth, 0) << "the runtime left its context pushed on the caller's thread";
    // Concurrent runs take separate run slots (streams, arenas, blocks): 4 threads at once.
    {
      std::vector<rt::Tensor> xs, wants;
      for (int64_t batch : {2, 3, 4, 6}) {
        xs.push_back(input(batch));
        auto w = ce->run({xs.back().ref()});
        ASSERT_TRUE(w.ok());
        wants.push_back(std::move((*w)[0]));
      }
      std::vector<std::string> failures(xs.size());
      std::vector<std::thread> threads;
      for (size_t t = 0; t < xs.size(); ++t)
        threads.emplace_back([&, t] {
          for (int k = 0; k < 5; ++k) {
            auto got = e->run({xs[t].ref()});
            if (!got.ok()) { failures[t] = got.status().message(); return; }
            for (int64_t i = 0; i < wants[t].numel(); ++i)
              if (std::fabs((*got)[0].data_as<float>()[i] - wants[t].data_as<float>()[i]) >
                  kAtol + kRtol * std::fabs(wants[t].data_as<float>()[i])) {
                failures[t] = "thread " + std::to_string(t) + ": element " + std::to_string(i) + " differs";
                return;
              }
          }
        });
      for (std::thread& th : threads) th.join();
      for (const std::string& f : failures) EXPECT_EQ(f, "");
    }
    // GPU tensors: in through Bundle::copy, run_into, out again.
    rt::Tensor x = input(5);
    auto want = ce->run({x.ref()});
    ASSERT_TRUE(want.ok());
    auto dx = gpu->allocate(rt::DType::f32, {5, 784});
    auto dy = gpu->allocate(rt::DType::f32, {5, 10});
    ASSERT_TRUE(dx.ok() && dy.ok());
    ASSERT_TRUE(gpu->copy(dx->ref(), x.ref()).ok());
    rt::Status s = e->run_into({dx->ref()}, {dy->ref()});
    ASSERT_TRUE(s.ok()) << s.message();
    rt::Tensor y(rt::DType::f32, {5, 10});
    ASSERT_TRUE(gpu->copy(y.ref(), dy->ref()).ok());
    expect_close(y, (*want)[0]);
    EXPECT_EQ(fake.stats().launches % 7, 0);  // whole plans only
    // The C API with device pointers.
    aotrace_open_options options;
    aotrace_open_options_init(&options);
    options.device = 1;
    aotrace_bundle* c_bundle = nullptr;
    ASSERT_EQ(aotrace_bundle_open_with_options(out.c_str(), &options, &c_bundle), 0) << aotrace_last_error();
    const int64_t x_shape[2] = {5, 784}, y_shape[2] = {5, 10};
    auto dz = gpu->allocate(rt::DType::f32, {5, 10});
    ASSERT_TRUE(dz.ok());
    const aotrace_tensor in{0, 2, x_shape, dx->data()}, result{0, 2, y_shape, dz->data()};
    ASSERT_EQ(aotrace_entry_run_device(c_bundle, "forward", &in, 1, &result, 1), 0) << aotrace_last_error();
    aotrace_bundle_close(c_bundle);
    rt::Tensor z(rt::DType::f32, {5, 10});
    ASSERT_TRUE(gpu->copy(z.ref(), dz->ref()).ok());
    expect_close(z, (*want)[0]);
    // A GPU tensor for the CPU-opened bundle, and a misaligned device pointer, are refused.
    auto refused = ce->run({dx->ref()});
    ASSERT_FALSE(refused.ok());
    expect_contains(refused.status().message(), "opened for the CPU");
    rt::TensorRef shifted(rt::DType::f32, {5, 784}, static_cast<char*>(dx->data()) + 4, {}, rt::DeviceKind::cuda);
    auto misaligned = e->run({shifted});
    ASSERT_FALSE(misaligned.ok());
    expect_contains(misaligned.status().message(), "aligned to less than 16 bytes");
    // Profiling launches kernel by kernel: one time per kernel call.
    auto profile = e->profile({x.ref()}, 2);
    ASSERT_TRUE(profile.ok()) << profile.status().message();
    const auto gpu_kernels = rt::read_bundle_info(out.string())->entries[0].variants[1].cuda_kernels;
    ASSERT_EQ(profile->size(), gpu_kernels.size());
    for (size_t k = 0; k < gpu_kernels.size(); ++k) {
      EXPECT_EQ((*profile)[k].symbol, gpu_kernels[k]);
      EXPECT_GT((*profile)[k].mean_ms, 0.0) << gpu_kernels[k];
    }
  }
  {
    FakeCuda fake(emulation);
    EXPECT_EQ(fake.stats().live_allocations, 0) << "GPU memory left allocated after the bundles closed";
  }
  {
    FakeCuda old_gpu(emulation, "sm_75");
    auto refused = rt::Bundle::open(out.string(), old_gpu.options());
    ASSERT_FALSE(refused.ok());
    expect_contains(refused.status().message(), "none of which runs on this sm_75 GPU: recompile with --cuda-arch sm_75");
  }
  {
    FakeCuda newer_gpu(emulation, "sm_120");  // the PTX, compiled by its driver
    auto gpu = rt::Bundle::open(out.string(), newer_gpu.options());
    ASSERT_TRUE(gpu.ok()) << gpu.status().message();
    EXPECT_EQ(gpu->cuda_image(), "cuda/sm_80.ptx");
    size_t checked = 0;
    EXPECT_TRUE(gpu->selftest(&checked).ok());
  }
  // The CLI: run and bench with --device cuda, verify running the CUDA kernels.
  const std::string env = FakeCuda::cli_env(emulation);
  auto verified = run_command(env + quote(AOTRACE_CLI) + " verify " + quote(out.string()));
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  expect_contains(verified.output, "CUDA kernels (sm_80, sm_90, PTX sm_80): 2 golden pair(s) match on GPU 0 (sm_90");
  auto selftest = run_command(env + quote(AOTRACE_CLI) + " run " + quote(out.string()) + " --selftest --device cuda");
  EXPECT_EQ(selftest.exit_code, 0) << selftest.output;
  expect_contains(selftest.output, "golden pair(s) match (kernels cuda/sm_90.cubin on a sm_90 GPU)");
  auto bench = run_command(env + quote(AOTRACE_CLI) + " bench " + quote(out.string()) +
                           " --shape x=4x784 --device cuda --iterations 3");
  EXPECT_EQ(bench.exit_code, 0) << bench.output;
  expect_contains(bench.output, "GPU 0 (sm_90, cuda/sm_90.cubin)");
  auto no_driver = run_command("AOTRACE_CUDA_DRIVER=/nonexistent/libcuda.so.1 " + quote(AOTRACE_CLI) + " run " +
                               quote(out.string()) + " --selftest --device cuda");
  EXPECT_EQ(no_driver.exit_code, 1) << no_driver.output;
  expect_contains(no_driver.output, "this machine has no CUDA driver (/nonexistent/libcuda.so.1");
  expect_contains(no_driver.output, "hint: `aotrace verify BUNDLE` lists what the bundle needs and what this machine has");
  auto bench_no_driver = run_command("AOTRACE_CUDA_DRIVER=/nonexistent/libcuda.so.1 " + quote(AOTRACE_CLI) + " bench " +
                                     quote(out.string()) + " --shape x=4x784 --device cuda --iterations 3");
  EXPECT_EQ(bench_no_driver.exit_code, 1) << bench_no_driver.output;
  expect_contains(bench_no_driver.output, "hint: `aotrace verify BUNDLE` lists what the bundle needs");
  auto missing = run_command(quote(AOTRACE_CLI) + " bench " + quote((out / "missing").string()));
  expect_contains(missing.output, "hint: check the path, or rebuild the bundle with `aotrace compile`");
}

// The compile cache keys on the GPU archs: another --cuda-arch is a miss that builds its own
// images, the same one a hit. --report counts each variant's CUDA kernels and sizes the images.
TEST(Cuda, TheCacheKeysOnTheArchsAndTheReportCountsCudaKernels) {
  const fs::path spec = with_targets(kExamples / "mlp" / "mlp.yaml", "[cpu, cuda]");
  const fs::path cache = temp_dir() / "cuda-cache", out = temp_dir() / "mlp_archs.aot", report = temp_dir() / "archs.json";
  const std::string compile = quote(AOTRACE_CLI) + " compile -q " + quote(spec.string()) + " -o " + quote(out.string()) +
                              " --cache-dir " + quote(cache.string());
  auto first = run_command(compile + " --cuda-arch sm_80 --report " + quote(report.string()));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  expect_contains(first.output, "cache miss");
  EXPECT_TRUE(fs::exists(out / "cuda" / "sm_80.cubin"));
  EXPECT_FALSE(fs::exists(out / "cuda" / "sm_90.cubin"));
  std::ifstream in(report);
  const nlohmann::json r = nlohmann::json::parse(in);
  ASSERT_EQ(r["variants"].size(), 3u);
  for (const auto& v : r["variants"]) EXPECT_EQ(v["cuda_kernels"], 7) << v.dump();
  size_t cuda_libraries = 0;
  for (const auto& l : r["libraries"]) cuda_libraries += l.contains("cuda") && l["bytes"].get<int64_t>() > 0;
  EXPECT_EQ(cuda_libraries, 2u);  // the sm_80 cubin and its PTX
  auto again = run_command(compile + " --cuda-arch sm_80");
  expect_contains(again.output, "cache hit");
  auto other = run_command(compile + " --cuda-arch sm_90");
  ASSERT_EQ(other.exit_code, 0) << other.output;
  expect_contains(other.output, "cache miss");
  EXPECT_TRUE(fs::exists(out / "cuda" / "sm_90.cubin"));
  EXPECT_TRUE(fs::exists(out / "cuda" / "sm_90.ptx"));
  EXPECT_FALSE(fs::exists(out / "cuda" / "sm_80.cubin"));
}

}  // namespace
