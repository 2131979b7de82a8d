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
};

// Writes the bundle directory `out` (created; replaced if it exists): bundle.fb, weights.bin,
// cpu/<triple>.so, graphs/*.json, report.json, runtime/ (the runtime sources + CMakeLists.txt).
void write_bundle(const BundleSpec&, const std::filesystem::path& out);

}  // namespace aotrace::artifacts
