// artifacts/ — the bundle (DESIGN §5): what the compiler writes. The reader and the runtime live
// in artifacts/runtime/ (shipped alone, C++17, no compiler headers); see aotrace_runtime.h there.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace aotrace::artifacts {

struct TensorSpec {
  std::string name;            // input: parameter name; output: "out0", "out1", …
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;  // static dims (dynamic dims: a later format minor)
  std::string source;          // input: "L['x']"
};

// One golden vector: inputs and the outputs the captured graph gives for them (ir::evaluate).
struct GoldenPair {
  std::vector<ir::HostTensor> inputs;   // one per VariantSpec::inputs, same dtype and shape
  std::vector<ir::HostTensor> outputs;  // one per VariantSpec::outputs
};

struct VariantSpec {
  std::string name;                   // "v0", "v1", … unique in the entry
  std::vector<std::string> profiles;  // the profile names this variant serves
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;    // flattened output order
  ir::OutputTree output_tree;
  std::vector<ir::Guard> guards;      // checked by the runtime on every call, in this order
  std::vector<ir::Assumption> assumptions;
  ir::ExecutionPlan plan;             // PlanBuffer::Weight indices refer to BundleSpec::weights
  std::string graph_json;             // written to graphs/<entry>.<variant>.json
  std::vector<GoldenPair> golden;     // written to golden/<entry>.<variant>.<k>.{in,out}<i>.npy
};

struct EntrySpec {
  std::string name;
  std::vector<VariantSpec> variants;
};

struct WeightSpec {
  std::string name;                   // "fc1.weight"
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;
  std::shared_ptr<const ir::Bytes> data;
};

struct BundleSpec {
  std::string name;
  std::vector<EntrySpec> entries;
  std::vector<WeightSpec> weights;    // stored once, 64-byte aligned in weights.bin
  std::string triple;                 // "x86_64-unknown-linux-gnu"
  ir::Bytes cpu_library;              // the linked shared library, written to cpu/<triple>.so
  std::string report_json;            // written to report.json
  std::string toolchain;              // "LLVM 16.0.6"
  std::string cpu;                    // the CPU the kernels were compiled for ("x86-64-v2")
  std::vector<std::string> cpu_features;  // required at load (checked by the runtime)
};

// One golden pair for `graph` (static shapes): inputs from a fixed-seed generator (floats in
// [-1, 1)), outputs from ir::evaluate. Empty when an input is not floating point (its values may
// be indices the model must not get at random) or the inputs exceed `max_elements`.
std::vector<GoldenPair> make_golden(const ir::Graph& graph, int64_t max_elements = 1 << 20);

// Writes the bundle directory `out` (created; replaced if it exists): bundle.fb, weights.bin,
// cpu/<triple>.so, graphs/*.json, report.json, runtime/ (the runtime sources + CMakeLists.txt).
void write_bundle(const BundleSpec&, const std::filesystem::path& out);

}  // namespace aotrace::artifacts
