#include "tiny_bundle.h"

#include <unistd.h>

#include <fstream>
#include <iterator>

#include <xxhash.h>

namespace aotrace::testing {
namespace fs = std::filesystem;
using namespace artifacts;

namespace {

ir::Guard guard(ir::Guard::Kind kind, int dim, int64_t value, std::string source, int line) {
  ir::Guard g;
  g.kind = kind;
  g.input = 0;
  g.dim = dim;
  g.value = value;
  g.source = std::move(source);
  if (line > 0) g.origin = SourceLoc{"model.py", line, 0, "forward"};
  return g;
}

VariantSpec variant(int batch) {
  std::string b = std::to_string(batch), n = std::to_string(batch * 4);
  VariantSpec v;
  v.name = "v" + std::to_string(batch - 1);
  v.profiles = {"batch=" + b};
  v.inputs = {{"x", ir::DType::f32, {batch, 4}, "L['x']"}};
  v.outputs = {{"out0", ir::DType::f32, {batch, 4}, ""}, {"out1", ir::DType::f32, {batch, 4}, ""}};
  v.output_tree.kind = ir::OutputTree::Kind::Tuple;
  v.output_tree.children.resize(2);
  v.output_tree.children[1].leaf = 1;
  ir::Guard dtype = guard(ir::Guard::Kind::DType, 0, 0, "L['x']", 0);
  dtype.dtype = ir::DType::f32;
  v.guards = {guard(ir::Guard::Kind::Rank, 0, 2, "L['x']", 3), dtype,
              guard(ir::Guard::Kind::DimEq, 0, batch, "L['x']", 12),
              guard(ir::Guard::Kind::DimEq, 1, 4, "L['x']", 7)};
  v.assumptions = {{"L['self'].training == False", SourceLoc{"model.py", 20, 0, ""}}};
  int64_t bytes = batch * 16;
  using K = ir::PlanBuffer::Kind;
  v.plan.buffers = {{K::Input, 0, 0, bytes}, {K::Weight, 0, 0, 16}, {K::Arena, 0, 0, bytes},
                    {K::Output, 0, 0, bytes}, {K::Output, 1, 0, bytes}};
  v.plan.calls = {{"k_add_bias_b" + b, {0, 1, 2}}, {"k_scale2_n" + n, {2, 3}}, {"k_copy_n" + n, {2, 4}}};
  v.plan.arena_bytes = 64;
  v.graph_json = "{\"variant\": \"" + v.name + "\"}\n";
  return v;
}

// z = x + y for x, y of `shape`, by `kernel` (test_kernels.c): rank, dtype and dim guards on both.
VariantSpec add_variant(const std::string& name, std::vector<int64_t> shape, const std::string& kernel) {
  VariantSpec v;
  v.name = name;
  v.profiles = {name};
  const ir::Shape dims(shape.begin(), shape.end());
  v.inputs = {{"x", ir::DType::f32, dims, "L['x']"}, {"y", ir::DType::f32, dims, "L['y']"}};
  v.outputs = {{"out0", ir::DType::f32, dims, ""}};
  for (int input = 0; input < 2; ++input) {
    std::string source = input == 0 ? "L['x']" : "L['y']";
    ir::Guard rank = guard(ir::Guard::Kind::Rank, 0, static_cast<int64_t>(shape.size()), source, 2);
    ir::Guard dtype = guard(ir::Guard::Kind::DType, 0, 0, source, 2);
    dtype.dtype = ir::DType::f32;
    rank.input = dtype.input = input;
    v.guards.push_back(rank);
    v.guards.push_back(dtype);
    for (size_t d = 0; d < shape.size(); ++d) {
      ir::Guard dim = guard(ir::Guard::Kind::DimEq, static_cast<int>(d), shape[d], source, 3);
      dim.input = input;
      v.guards.push_back(dim);
    }
  }
  int64_t bytes = 4;
  for (int64_t d : shape) bytes *= d;
  using K = ir::PlanBuffer::Kind;
  v.plan.buffers = {{K::Input, 0, 0, bytes}, {K::Input, 1, 0, bytes}, {K::Output, 0, 0, bytes}};
  v.plan.calls = {{kernel, {0, 1, 2}}};
  v.graph_json = "{\"variant\": \"" + name + "\"}\n";
  return v;
}

}  // namespace

BundleSpec parallel_bundle_spec() {
  BundleSpec spec;
  spec.name = "parallel";
  spec.triple = "x86_64-unknown-linux-gnu";
  spec.toolchain = "test kernels (system C compiler)";
  spec.report_json = "{\"name\": \"parallel\"}\n";
  std::string so = read_bytes(RT_TEST_KERNELS_SO);
  spec.cpu_library.assign(so.begin(), so.end());
  spec.entries.push_back({"add", {add_variant("v0", {16}, "k_add_n16"),
                                  add_variant("v1", {100003}, "k_add_n100003")}});
  spec.entries.push_back({"add_nested", {add_variant("v0", {64, 1000}, "k_add_nested_64x1000")}});
  return spec;
}

BundleSpec tiny_bundle_spec() {
  BundleSpec spec;
  spec.name = "tiny";
  spec.triple = "x86_64-unknown-linux-gnu";
  spec.toolchain = "test kernels (system C compiler)";
  spec.report_json = "{\"name\": \"tiny\"}\n";
  std::string so = read_bytes(RT_TEST_KERNELS_SO);
  spec.cpu_library.assign(so.begin(), so.end());
  std::vector<float> bias = {1, 2, 3, 4};
  auto bias_bytes = std::make_shared<ir::Bytes>(reinterpret_cast<const uint8_t*>(bias.data()),
                                                reinterpret_cast<const uint8_t*>(bias.data() + 4));
  spec.weights.push_back({"bias", ir::DType::f32, {4}, bias_bytes});
  auto extra = std::make_shared<ir::Bytes>(24, 7);
  spec.weights.push_back({"extra", ir::DType::i64, {3}, extra});
  spec.entries.push_back({"forward", {variant(1), variant(2)}});
  return spec;
}

fs::path fresh_temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() /
                 ("aotrace_rt_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string without_footer(const std::string& bundle_fb) {
  return bundle_fb.substr(0, bundle_fb.size() - 16);
}

std::string with_footer(const std::string& flatbuffer) {
  uint64_t hash = XXH3_64bits(flatbuffer.data(), flatbuffer.size());
  std::string out = flatbuffer + "AOTBXXH3";
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(hash >> (8 * i)));
  return out;
}

}  // namespace aotrace::testing
