// artifacts/ — the bundle (DESIGN §5): what the compiler writes. The reader and the runtime live
// in artifacts/runtime/ (shipped alone, C++17, no compiler headers); see aotrace_runtime.h there.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace aotrace::artifacts {

struct TensorSpec {
  std::string name;            // input: parameter name; output: "out0", "out1", …
  ir::DType dtype = ir::DType::f32;
  ir::Shape shape;             // dynamic dims: SymExprs of the variant's symbols
  std::string source;          // input: "L['x']"
};

// A shape symbol of a variant (format 1.5): read from dim `dim` of input `input`.
struct SymbolSpec {
  std::string name;
  int input = 0, dim = 0;
  ir::SymRange range;
};

// One golden vector: inputs and the outputs torch eager gives for them (make_golden).
struct GoldenPair {
  std::vector<ir::HostTensor> inputs;   // one per VariantSpec::inputs, same dtype and shape
  std::vector<ir::HostTensor> outputs;  // one per VariantSpec::outputs, then per updated input
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
  // Inputs the entry changes in place (ir::Graph::input_updates): the plan's Output buffer
  // outputs.size() + k holds the new value of input updated_inputs[k].
  std::vector<int> updated_inputs;
  // The variant draws random numbers (ir::Graph::rng_input): the plan's Input buffer
  // inputs.size() is the generator state the runtime fills per call; golden pairs hold it after
  // the inputs.
  bool draws_random = false;
  // The shape symbols, in the order of ir::Graph::symbols (the kernels' `symbols` argument).
  std::vector<SymbolSpec> symbols;
  // The plan of the same graph for a CUDA GPU (format 1.8): kernels of BundleSpec::cuda_images,
  // each call with its launch (KernelCall::threads, block); Weight indices as in `plan`.
  std::optional<ir::ExecutionPlan> cuda_plan;
};

// A dim declared `{buckets: [...]}` (format 1.7): which input axes the runtime pads, with what,
// and which output axes it slices back (found by compile's padding check).
struct BucketSpec {
  struct Axis {
    int index = 0, axis = 0;
    double pad = 0;  // inputs
  };
  std::string dim;
  std::vector<int64_t> sizes;
  std::vector<Axis> inputs, outputs;
};

struct EntrySpec {
  std::string name;
  std::vector<VariantSpec> variants;
  std::vector<BucketSpec> buckets;
};

struct WeightSpec {
  std::string name;                   // "fc1.weight"
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;
  std::shared_ptr<const ir::Bytes> data;
};

// The kernels built once more for a faster CPU than the baseline (format 1.2): the same symbols
// and plans, so the runtime may load it instead of BundleSpec::cpu_library.
struct CpuLibrarySpec {
  std::string cpu;                        // "x86-64-v4": written to cpu/<triple>.<cpu>.so
  std::vector<std::string> cpu_features;  // required to load it
  ir::Bytes library;                      // the linked shared library
};

// A CUDA image (format 1.8): every variant's CUDA kernels as a cubin for `arch`, or as PTX
// (`ptx`) that drivers of newer GPUs compile. Written to cuda/<arch>.cubin or cuda/<arch>.ptx.
struct CudaImageSpec {
  std::string arch;  // "sm_90"
  bool ptx = false;
  ir::Bytes bytes;
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
  // Faster builds of cpu_library, fastest first: the runtime loads the first whose features the
  // device has, else cpu_library (the portable baseline).
  std::vector<CpuLibrarySpec> faster_cpu_libraries;
  // The CUDA kernels of the variants' cuda_plans (targets: [cuda]); empty for a CPU-only bundle.
  // cpu_library may then be empty (a CUDA-only bundle: its variants' plans have no calls).
  std::vector<CudaImageSpec> cuda_images;
  std::string cuda_math;  // "tf32", "f16", "bf16": the CUDA kernels' matmuls on tensor cores; empty: f32
};

// The golden pair of a variant whose graph is `graph` (static shapes): `eager`, a real call of
// the entry in torch (inputs one per graph input, outputs in Graph::outputs order), when it is
// given and fits the graph's input and output types; empty when its inputs and outputs together
// exceed `max_elements`. Otherwise (`fallback_reason` says why: a capture bug) the fallback:
// inputs from a fixed-seed generator (floats in [-1, 1)) and outputs from ir::evaluate, slow on
// big graphs; empty when an input is not floating point or the inputs exceed `max_elements`.
std::vector<GoldenPair> make_golden(const ir::Graph& graph, const std::optional<GoldenPair>& eager,
                                    std::string* fallback_reason = nullptr,
                                    int64_t max_elements = 1 << 20);

// Writes the bundle directory `out` (created; replaced if it is a bundle): bundle.fb,
// weights.bin, cpu/<triple>.so (and cpu/<triple>.<cpu>.so per faster library), graphs/*.json,
// report.json, runtime/ (the runtime sources + CMakeLists.txt). The old bundle is replaced only
// by a complete new one.
void write_bundle(const BundleSpec&, const std::filesystem::path& out);

// user_error unless write_bundle may put a bundle at `out`: nothing is there, or an aotrace
// bundle (a directory holding bundle.fb), or an empty directory. Anything else is the user's and
// is never replaced. write_bundle checks it too; a compile calls it first, before any work.
void check_bundle_output(const std::filesystem::path& out);

// One file of a bundle: its path relative to the bundle directory, and its bytes.
struct BundleFile {
  std::string path;
  std::string bytes;
};
// The regular files of the bundle directory `dir`, sorted by path (what a compile cache keeps).
std::vector<BundleFile> read_bundle_files(const std::filesystem::path& dir);
// Writes `files` verbatim as the bundle `out` (a cached bundle), with write_bundle's rules: `out`
// is checked first, and an old bundle is replaced only by the complete new one.
void write_bundle_copy(const std::vector<BundleFile>& files, const std::filesystem::path& out);
// An identity of what write_bundle copies into every bundle from outside the compiler's binary
// (the runtime sources and the schema header): their names and content hashes.
std::string shipped_sources_identity();

}  // namespace aotrace::artifacts
