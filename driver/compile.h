// driver/ — compile(spec, options) -> bundle (DESIGN §1): capture every profile, plan the
// variants, lower them, write the bundle with its weights, golden vectors and report, through
// the compile cache and the depfile (driver.h). cli/ parses the command line and calls it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifacts/artifacts.h"
#include "embed/embed.h"
#include "lowering/lowering.h"
#include "shape_profiles/shape_profiles.h"

namespace aotrace::driver {

// One profile of one entry, captured.
struct ProfileCapture {
  const shape_profiles::EntrySpec* entry = nullptr;
  const shape_profiles::Profile* profile = nullptr;  // owned_profile's
  std::shared_ptr<const shape_profiles::Profile> owned_profile;  // a declared one or a range split's part
  std::vector<embed::CaptureInput> inputs;
  embed::Capture capture;
};

// A UserError when the spec's targets cannot be built here: `cuda` without the CUDA toolkit
// (lowering::check_cuda_toolkit, for the default archs).
void check_targets(const shape_profiles::ProfileSet& spec);

// The bucketed dims of `entry` (dims declared `{buckets: [...]}`), each proved safe to pad in
// eager at sizes below every bucket: which input axes the runtime pads and with what, which
// output axes it cuts back. UserError naming the output, index and cause when padding changes
// the valid region of an output (buckets.cpp).
std::vector<artifacts::BucketSpec> check_padding_buckets(const shape_profiles::ProfileSet& spec,
                                                         const shape_profiles::EntrySpec& entry,
                                                         const std::vector<ProfileCapture>& captures);

// Runs the spec's script and captures every profile of every entry; `on_captured`, when given,
// is called after each profile's capture (compile's progress lines).
std::vector<ProfileCapture> capture_all(const shape_profiles::ProfileSet& spec,
                                        const std::function<void(const ProfileCapture&)>& on_captured = {});
// How an entry's arguments are built from its inputs (the spec's tuples, lists and dicts).
embed::CaptureArg capture_arg(const shape_profiles::ArgSpec& a, const shape_profiles::EntrySpec& entry);

// The explain report of one profile (DESIGN §2, `explain --json`).
nlohmann::json explain_json(const ProfileCapture& pc, bool with_graph);
std::string explain_text(const ProfileCapture& pc, bool with_graph);
// Profiles whose graphs and guards come out the same share one variant (DESIGN §2).
std::string variant_key(const embed::Capture& c);
// The variants of one entry: indices into `captures`, most specific (fewest dynamic dims) first.
struct PlannedVariant {
  std::vector<size_t> captures;
};
std::vector<PlannedVariant> plan_variants(const std::vector<ProfileCapture>& captures,
                                          const shape_profiles::EntrySpec& entry);
// One line per planned variant (its profiles, sizes, and why it exists), for messages.
std::string variant_plan_text(const std::vector<ProfileCapture>& captures, const std::vector<PlannedVariant>& plan);
// user_error when an entry needs more variants than max_variants, listing them (before lowering).
void check_max_variants(const shape_profiles::ProfileSet& spec, const std::vector<ProfileCapture>& captures);
// user_error listing every graph break of the captures (compile refuses them); no-op when none.
void refuse_graph_breaks(const std::vector<ProfileCapture>& captures);

struct CompileOptions {
  std::filesystem::path output;  // empty: ./<name>.aot
  std::string triple;
  std::string cpu;
  // `targets: [cuda]`: the GPU archs ("sm_90"); empty: lowering::Options' default (sm_80, sm_90).
  std::vector<std::string> cuda_archs;
  std::filesystem::path depfile;  // empty: none
  // The compile cache (driver.h): `cache_dir` empty is the default folder
  // (driver::default_cache_dir), unless `no_cache` or AOTRACE_NO_CACHE in the environment.
  std::filesystem::path cache_dir;
  bool no_cache = false;
  uint64_t cache_max_mb = 2048;
  bool quiet = false;  // no progress lines, only the summary and warnings
  bool timings = false;  // a table of where the time went: capture, each lowering pass and LLVM phase, link
  lowering::Options::Winograd winograd = lowering::Options::Winograd::automatic;
  int64_t winograd_tile = 0;  // --winograd-tile: 0 (auto), 2 or 4
  std::vector<std::string> dump;  // --dump: passes whose result goes to stderr (no cache then)
  std::filesystem::path report;   // --report: a JSON file of what the compile did (empty: none)
  int jobs = 0;  // variants lowered at once; 0: the CPUs divided by the kernel libraries built per variant
  // Tests of the runtime's CUDA path without a GPU (hidden --cuda-emulation-library): also write
  // the bundle's CUDA kernels as host code, a shared library exporting each kernel's grid
  // function `SYMBOL.grid(closure, threads, block, block_dim, thread)` (lowering/cuda), which
  // the fake driver of runtime_tests runs for cuLaunchKernel. Needs the cuda target; no cache.
  std::filesystem::path cuda_emulation_library;
  // Measuring on a GPU (hidden --cuda-warp-reduce-min N): lowering::Options::cuda_warp_reduce_min
  // (0: its default). Needs the cuda target.
  int64_t cuda_warp_reduce_min = 0;
  // Measuring on a GPU (hidden --cuda-vector-elements N): lowering::Options::cuda_vector_elements
  // (0: its default). Needs the cuda target.
  int64_t cuda_vector_elements = 0;
  // Measuring on a GPU (hidden --cuda-gemm-stages N): lowering::Options::cuda_gemm_stages (0: its
  // default). Needs the cuda target.
  int64_t cuda_gemm_stages = 0;
  // Measuring on a GPU (hidden --cuda-split-reduce-chunk N): lowering::Options::cuda_split_reduce_chunk
  // (0: its default). Needs the cuda target.
  int64_t cuda_split_reduce_chunk = 0;
  // Measuring on a GPU (hidden --cuda-block-row-min N): lowering::Options::cuda_block_row_min (0:
  // its default). Needs the cuda target.
  int64_t cuda_block_row_min = 0;
};
// Compiles `yaml` into a bundle (options.output, default ./<name>.aot); prints progress and the
// summary on stderr. `options.dump` holds pass names of lowering::pass_names() (or "all"),
// already checked. Exit code 0; user errors are thrown as UserError.
int compile(const std::filesystem::path& yaml, const CompileOptions& options);

}  // namespace aotrace::driver
