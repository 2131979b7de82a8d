// driver::compile (driver/compile.h): capture every profile, refuse graph breaks, group profiles
// into variants, lower each variant, link the CPU library and write the bundle; then the depfile,
// and the bundle into the compile cache. A cache hit writes the stored bundle without running Python.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <xxhash.h>

#include "artifacts/artifacts.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "driver/compile.h"
#include "driver/driver.h"
#include "lowering/lowering.h"

namespace aotrace::driver {

using nlohmann::json;

namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<int64_t> static_dims(const ir::TensorType& t) {
  auto s = t.static_shape();
  AOT_CHECK(s.has_value(), "a variant with dynamic dims reached the bundle writer");
  return *s;
}

json graph_json(const ir::Graph& g, const std::string& entry, const std::string& variant) {
  json inputs = json::array(), weights = json::array(), outputs = json::array();
  for (const auto& in : g.inputs) inputs.push_back({{"name", in.name}, {"type", g.type(in.value).str()}, {"source", in.source}});
  for (const auto& w : g.weights) weights.push_back({{"name", w.name}, {"type", g.type(w.value).str()}, {"source", w.source}});
  for (size_t i = 0; i < g.num_result_outputs(); ++i) outputs.push_back(g.type(g.outputs[i]).str());
  json updated = json::array();
  for (const auto& u : g.input_updates) updated.push_back(g.inputs.at(static_cast<size_t>(u.input)).name);
  return {{"entry", entry}, {"variant", variant}, {"inputs", inputs}, {"weights", weights},
          {"outputs", outputs}, {"output_tree", g.output_tree.str()}, {"updated_inputs", updated},
          {"nodes", g.nodes.size()}, {"text", g.str()}};
}

// Adds the weights the plan reads (of the lowered graph: pre-packed ones included, originals
// that only fed a packing left out) to the bundle's table, each tensor once, and remaps the plan.
// Weights are the same when their type and bytes are: a source names where a weight came from,
// not what it holds (two entries' models each have an `L['self'].encoder.weight`).
void add_weights(const ir::Graph& g, ir::ExecutionPlan& plan, artifacts::BundleSpec& bundle,
                 std::map<std::string, std::vector<int64_t>>& index_by_content) {
  std::vector<int64_t> global(g.weights.size(), -1);
  std::vector<bool> read(g.weights.size(), false);
  for (const auto& b : plan.buffers)
    if (b.kind == ir::PlanBuffer::Kind::Weight) read.at(static_cast<size_t>(b.index)) = true;
  for (size_t i = 0; i < g.weights.size(); ++i) {
    if (!read[i]) continue;
    const auto& w = g.weights[i];
    AOT_CHECK(w.data, "weight " + w.name + " without data");
    const std::string key = g.type(w.value).str() + "|" + std::to_string(XXH3_64bits(w.data->data(), w.data->size()));
    std::vector<int64_t>& same_hash = index_by_content[key];
    for (int64_t k : same_hash)
      if (*bundle.weights[static_cast<size_t>(k)].data == *w.data) global[i] = k;
    if (global[i] < 0) {
      bundle.weights.push_back({w.name, g.type(w.value).dtype, static_dims(g.type(w.value)), w.data});
      global[i] = static_cast<int64_t>(bundle.weights.size() - 1);
      same_hash.push_back(global[i]);
    }
  }
  for (auto& b : plan.buffers)
    if (b.kind == ir::PlanBuffer::Kind::Weight) b.index = global.at(static_cast<size_t>(b.index));
}

// The features of `options.cpu`'s kernels that the runtime can check on the device.
std::vector<std::string> checkable_cpu_features(const lowering::Options& options) {
  std::vector<std::string> out;
  for (const auto& f : lowering::target_cpu_features(options))
    if (rt::cpu_feature_known(f)) out.push_back(f);
  return out;
}

artifacts::VariantSpec variant_spec(const ProfileCapture& pc, const std::string& name) {
  const ir::Graph& g = pc.capture.graph;
  artifacts::VariantSpec v;
  v.name = name;
  v.profiles = {pc.profile->name};
  // The symbols in the kernels' order (Graph::symbols), each read from the dim its range
  // guard checks (the symbol's first use among the inputs).
  for (const auto& [symbol, range] : g.symbols) {
    const ir::Guard* binding = nullptr;
    for (const ir::Guard& guard : pc.capture.guards)
      if (guard.kind == ir::Guard::Kind::DimRange && guard.symbol == symbol) binding = &guard;
    AOT_CHECK(binding, "symbol " + symbol + " has no range guard to read it from");
    v.symbols.push_back({symbol, binding->input, binding->dim, range});
  }
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (static_cast<int>(i) != g.rng_input)
      v.inputs.push_back({g.inputs[i].name, g.type(g.inputs[i].value).dtype, g.type(g.inputs[i].value).shape,
                          g.inputs[i].source});
  // The generator state comes after the call's inputs (the runtime's Input buffer inputs.size()).
  AOT_CHECK(g.rng_input < 0 || g.rng_input + 1 == static_cast<int>(g.inputs.size()), "the rng input is not the last input");
  v.draws_random = g.rng_input >= 0;
  for (size_t i = 0; i < g.num_result_outputs(); ++i)
    v.outputs.push_back({"out" + std::to_string(i), g.type(g.outputs[i]).dtype, g.type(g.outputs[i]).shape, ""});
  v.output_tree = g.output_tree;
  for (const ir::InputUpdate& u : g.input_updates) v.updated_inputs.push_back(u.input);
  v.guards = pc.capture.guards;
  v.assumptions = pc.capture.assumptions;
  v.graph_json = graph_json(g, pc.entry->name, name).dump(1);
  return v;
}

// The variant's golden pair from torch eager (Interpreter::golden_call: the capture's real call
// of the entry); from ir::evaluate only when eager's outputs do not fit the graph, with a warning.
// `noted`: the notes said so far in this compile (each once).
std::vector<artifacts::GoldenPair> golden_of(const ProfileCapture& pc, const std::string& variant,
                                             std::set<std::string>& noted) {
  const ir::Graph& g = pc.capture.graph;
  embed::EagerCall call = embed::Interpreter::instance().golden_call(pc.entry->call, pc.capture);
  std::optional<artifacts::GoldenPair> eager;
  if (call.has_outputs) {
    eager.emplace();
    for (const auto& in : g.inputs)  // the graph's inputs among the call's (YAML order), by name
      for (size_t k = 0; k < pc.inputs.size() && k < call.inputs.size(); ++k)
        if (pc.inputs[k].name == in.name) eager->inputs.push_back(call.inputs[k]);
    eager->outputs = std::move(call.outputs);
  }
  if (!call.widened.empty()) {
    std::string ops;
    for (const std::string& op : call.widened) ops += (ops.empty() ? "" : ", ") + op;
    if (noted.insert(pc.entry->name + ": " + ops).second)
      std::cerr << "aotrace: note: entry '" << pc.entry->name << "': torch's CPU build has no float16/bfloat16 kernels for "
                << ops << "; its golden vectors compute them in float32 and round the results, as a GPU does\n";
  }
  std::string why;
  std::vector<artifacts::GoldenPair> golden = artifacts::make_golden(g, eager, &why);
  if (g.rng_input >= 0) why.clear();  // random numbers: the reference's, by design
  if (!why.empty())
    std::cerr << "aotrace: warning: entry '" << pc.entry->name << "', variant " << variant
              << ": golden vectors from the reference interpreter, not torch eager (" << why
              << "); this is a bug in aotrace's capture, please report it\n";
  return golden;
}


// The identity of a file by path, size and modification time (not content: for large files
// that change only with an install, such as this executable and the package database).
std::string stat_identity(const std::filesystem::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return p.string() + " missing\n";
  return p.string() + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "\n";
}

// The compile cache's base key (driver.h): everything a bundle depends on besides the files the
// script reads, known without running Python.
//   - aotrace itself: version, this executable, the runtime sources every bundle ships;
//   - the Python environment: Debian's package database and the package folders, whose mtimes
//     change when a package (torch, numpy) is installed, upgraded or removed;
//   - the spec's path (the report names it) and the options, with the triple and CPUs resolved
//     for this host (the default builds a library for the host's x86-64 level);
//   - with the cuda target, the GPU archs and the toolkit's ptxas and libdevice;
//   - environment variables that change what capture accepts or reports.
std::string cache_base_key(const std::filesystem::path& yaml, const CompileOptions& options, const lowering::Options& lo,
                           const lowering::Options* cuda) {
  std::string m = "aotrace compile cache 1\n" + std::string(AOTRACE_VERSION) + "\n";
  std::error_code ec;
  m += stat_identity(std::filesystem::read_symlink("/proc/self/exe", ec));
  m += artifacts::shipped_sources_identity();
  for (const char* p : {"/var/lib/dpkg/status", "/usr/lib/python3/dist-packages", "/usr/lib/python3.11",
                        "/usr/local/lib/python3.11/dist-packages"})
    m += stat_identity(p);
  m += "spec " + std::filesystem::absolute(yaml).lexically_normal().string() + "\n";
  m += "triple " + options.triple + " -> " + lowering::resolved_triple(lo) + "\n";
  m += "cpu " + options.cpu + " ->";
  for (const std::string& cpu : lowering::kernel_cpus(lo)) {
    lowering::Options one = lo;
    one.cpu = cpu;
    m += " " + cpu + "(" + join(checkable_cpu_features(one), ",") + ")";
  }
  m += "\n";
  m += "winograd " + std::to_string(static_cast<int>(lo.winograd)) + " tile " + std::to_string(lo.winograd_tile) + "\n";
  if (cuda != nullptr) {  // the toolkit (its ptxas and libdevice) and the archs
    const std::string home = lowering::check_cuda_toolkit(*cuda);
    m += "cuda " + join(cuda->cuda_archs, ",") + " math " + std::to_string(static_cast<int>(cuda->cuda_math)) +
         " warp-reduce-min " + std::to_string(cuda->cuda_warp_reduce_min) + " vector-elements " +
         std::to_string(cuda->cuda_vector_elements) +  " gemm-stages " + std::to_string(cuda->cuda_gemm_stages) +
         " split-reduce-chunk " + std::to_string(cuda->cuda_split_reduce_chunk) + " block-row-min " +
         std::to_string(cuda->cuda_block_row_min) + "\n" +
         stat_identity(home + "/bin/ptxas") +
         stat_identity(home + "/nvvm/libdevice/libdevice.10.bc");
  }
  for (const char* var : {"AOTRACE_STRICT_BINDING", "AOTRACE_LIBRARY_FRAMES"})
    if (const char* v = std::getenv(var)) m += std::string(var) + "=" + v + "\n";
  return hash_hex(m);
}

// The cache this compile uses, or none: --no-cache, AOTRACE_NO_CACHE without --cache-dir,
// --dump or AOTRACE_DUMP (a dump is asked of the lowering, which a hit skips), or a folder that cannot be
// used (a warning: the compile goes on without it).
std::optional<CompileCache> open_cache(const CompileOptions& options) {
  if (options.no_cache || !options.dump.empty() || std::getenv("AOTRACE_DUMP") || !options.cuda_emulation_library.empty())
    return std::nullopt;
  const char* off = std::getenv("AOTRACE_NO_CACHE");
  if (options.cache_dir.empty() && off && *off && std::string(off) != "0") return std::nullopt;
  const std::filesystem::path dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  std::string why;
  std::optional<CompileCache> cache = CompileCache::open(dir, options.cache_max_mb << 20, &why);
  if (!cache)
    std::cerr << "aotrace: warning: compiling without the compile cache: " << why
              << "\n  hint: pass a writable --cache-dir, or --no-cache to silence this\n";
  return cache;
}

// Codegen's objects in the compile cache (lowering::ObjectCache): keyed by the compile's base key
// (aotrace's identity and the options) and what codegen says the object is compiled from.
class CachedObjects : public lowering::ObjectCache {
 public:
  CachedObjects(const CompileCache& cache, std::string base_key) : cache_(cache), base_key_(std::move(base_key)) {}
  std::optional<ir::Bytes> lookup(const std::string& material) const override {
    std::optional<std::string> bytes = cache_.lookup_object(key(material));
    if (!bytes) return std::nullopt;
    return ir::Bytes(bytes->begin(), bytes->end());
  }
  void store(const std::string& material, const ir::Bytes& object) const override {
    std::string why;  // a cache that cannot keep an object costs a later compile time, no more
    (void)cache_.store_object(key(material), std::string(object.begin(), object.end()), &why);
  }

 private:
  std::string key(const std::string& material) const { return hash_hex(base_key_ + "\n" + material); }
  const CompileCache& cache_;
  std::string base_key_;
};

// The files a compile read, for the depfile and the cache: the spec, then what Python read.
std::vector<std::filesystem::path> compile_inputs(const std::filesystem::path& yaml) {
  std::vector<std::filesystem::path> deps = {std::filesystem::absolute(yaml).lexically_normal()};
  for (const auto& f : embed::Interpreter::instance().files_read())
    if (f != deps.front()) deps.push_back(f);
  return deps;
}

// The depfile's target: the bundle's bundle.fb, written last, so that it is the newest file.
std::filesystem::path depfile_target(const std::filesystem::path& out) {
  return (out.has_filename() ? out : out.parent_path()) / "bundle.fb";
}

// A compile served from the cache: the stored bundle, written as a fresh one would be.
int compile_from_cache(const CompileCache::Entry& hit, const std::filesystem::path& out,
                       const CompileOptions& options, const CompileCache& cache,
                       std::chrono::steady_clock::time_point start) {
  artifacts::write_bundle_copy(hit.files, out);
  if (!options.depfile.empty()) write_depfile(options.depfile, depfile_target(out), hit.deps);
  if (!options.report.empty()) {
    // Nothing ran: the report says so, with the bundle's own report (capture, guards, plans).
    json stored;
    for (const artifacts::BundleFile& f : hit.files)
      if (f.path == "report.json") stored = json::parse(f.bytes, nullptr, false);
    write_output_file(options.report,
                              json{{"bundle", out.string()}, {"cache", "hit"}, {"cache_dir", cache.dir().string()},
                                   {"seconds", seconds_since(start)}, {"summary", hit.summary}, {"bundle_report", stored}}
                                      .dump(2) + "\n",
                              "report", "--report");
  }
  std::cerr << "aotrace: compiled " << hit.summary << " -> " << out.string() << " in " << seconds_since(start)
            << " s (cache hit: nothing was captured or lowered; " << cache.dir().string() << ")\n";
  return 0;
}

// Lowers the planned variants on `jobs` threads, in plan order; take(i) waits for variant i.
// Lowering is pure C++ and LLVM (each codegen in its own LLVMContext): the Python-side work
// (golden vectors) stays on the calling thread, in order, so that the bundle is the same for
// any --jobs.
class ParallelLowering {
 public:
  struct Task {
    const ir::Graph* graph;
    std::string prefix;
    const lowering::Options* options;  // the CPU's or the GPU's (outlives the lowering)
  };
  ParallelLowering(std::vector<Task> tasks, int jobs)
      : tasks_(std::move(tasks)), results_(tasks_.size()), errors_(tasks_.size()),
        seconds_(tasks_.size()), done_(tasks_.size(), false) {
    const size_t threads = std::min<size_t>(static_cast<size_t>(std::max(1, jobs)), tasks_.size());
    for (size_t t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~ParallelLowering() {
    stop_ = true;  // a failed compile does not wait for variants it will not use
    for (std::thread& w : workers_) w.join();
  }
  lowering::LoweredVariant take(size_t i, double* seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_[i]; });
    if (errors_[i]) std::rethrow_exception(errors_[i]);
    *seconds = seconds_[i];
    return std::move(*results_[i]);
  }

 private:
  void work() {
    for (size_t i; !stop_ && (i = next_++) < tasks_.size();) {
      const auto start = std::chrono::steady_clock::now();
      std::optional<lowering::LoweredVariant> lv;
      std::exception_ptr error;
      try {
        lv = lowering::lower_graph(*tasks_[i].graph, tasks_[i].prefix, *tasks_[i].options);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      results_[i] = std::move(lv);
      errors_[i] = error;
      seconds_[i] = seconds_since(start);
      done_[i] = true;
      cv_.notify_all();
    }
  }
  std::vector<Task> tasks_;
  std::vector<std::optional<lowering::LoweredVariant>> results_;
  std::vector<std::exception_ptr> errors_;
  std::vector<double> seconds_;
  std::vector<bool> done_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
};

bool has_target(const shape_profiles::ProfileSet& spec, const std::string& target) {
  return std::find(spec.targets.begin(), spec.targets.end(), target) != spec.targets.end();
}

// lowering::check_cuda_toolkit, its error placed at the spec's `cuda` target (at `cuda_math`
// when that is what the archs cannot do).
void check_cuda_toolkit_for(const shape_profiles::ProfileSet& spec, const lowering::Options& lo) {
  try {
    lowering::check_cuda_toolkit(lo);
  } catch (const UserError& e) {
    size_t i = 0;
    while (i < spec.targets.size() && spec.targets[i] != "cuda") ++i;
    SourceLoc at = i < spec.target_locs.size() ? spec.target_locs[i] : e.loc();
    if (lo.cuda_math != lowering::Options::CudaMath::f32 && spec.cuda_math_loc.known()) {
      // The archs would do with f32 math: it is the tensor-core math they cannot.
      lowering::Options f32 = lo;
      f32.cuda_math = lowering::Options::CudaMath::f32;
      try {
        lowering::check_cuda_toolkit(f32);
        at = spec.cuda_math_loc;
      } catch (const UserError&) {
      }
    }
    throw UserError(e.what(), at, e.hint(), e.notes());
  }
}

}  // namespace

void check_targets(const shape_profiles::ProfileSet& spec) {
  lowering::Options lo;
  lo.device = lowering::Options::Device::cuda;
  if (has_target(spec, "cuda")) check_cuda_toolkit_for(spec, lo);
}

namespace {

// The lowering options of `targets: [cuda]`: the CPU's, for the GPU archs of --cuda-arch;
// user_error before any capture when the toolkit cannot build them, or when --cuda-arch is given
// to a spec without the cuda target.
lowering::Options cuda_options(const shape_profiles::ProfileSet& spec, const CompileOptions& options,
                               const lowering::Options& cpu) {
  lowering::Options lo = cpu;
  lo.device = lowering::Options::Device::cuda;
  lo.extra_cpus.clear();
  lo.object_cache = nullptr;  // the cache keeps CPU objects
  if (!options.cuda_archs.empty()) lo.cuda_archs = options.cuda_archs;
  if (options.cuda_warp_reduce_min > 0) lo.cuda_warp_reduce_min = options.cuda_warp_reduce_min;
  if (options.cuda_vector_elements > 0) lo.cuda_vector_elements = options.cuda_vector_elements;
  if (options.cuda_gemm_stages > 0) lo.cuda_gemm_stages = options.cuda_gemm_stages;
  if (options.cuda_split_reduce_chunk > 0) lo.cuda_split_reduce_chunk = options.cuda_split_reduce_chunk;
  if (options.cuda_block_row_min > 0) lo.cuda_block_row_min = options.cuda_block_row_min;
  lo.cuda_math = lowering::cuda_math_named(spec.cuda_math).value_or(lowering::Options::CudaMath::f32);
  // The first CUDA flag given, if any: each needs the cuda target.
  std::string flag;
  for (const auto& [given, name] : {std::pair{!options.cuda_archs.empty(), "--cuda-arch"},
                                    {options.cuda_warp_reduce_min > 0, "--cuda-warp-reduce-min"},
                                    {options.cuda_vector_elements > 0, "--cuda-vector-elements"},
                                    {options.cuda_gemm_stages > 0, "--cuda-gemm-stages"},
                                    {options.cuda_split_reduce_chunk > 0, "--cuda-split-reduce-chunk"},
                                    {options.cuda_block_row_min > 0, "--cuda-block-row-min"}})
    if (given && flag.empty()) flag = name;
  if (has_target(spec, "cuda")) check_cuda_toolkit_for(spec, lo);
  else if (!flag.empty()) {
    user_error(flag + " is given, but the spec's targets have no cuda", spec.target_locs.empty() ? SourceLoc{} : spec.target_locs[0],
               "add cuda to the spec's targets (`targets: [cpu, cuda]`), or drop " + flag);
  }
  return lo;
}

}  // namespace

int compile(const std::filesystem::path& yaml, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  lowering::Options lo;
  lo.triple = options.triple;
  lo.cpu = options.cpu;
  lo.winograd = options.winograd;
  lo.winograd_tile = options.winograd_tile;
  lo.dump = options.dump;
  // Everything the user gave is checked before the script runs: a capture takes seconds.
  lowering::check_target(lo);
  auto spec = shape_profiles::parse_profile_file(yaml);
  const bool for_cpu = has_target(spec, "cpu"), for_cuda = has_target(spec, "cuda");
  const lowering::Options lo_cuda = cuda_options(spec, options, lo);
  lowering::Options lo_emulation = lo_cuda;  // --cuda-emulation-library: the CUDA kernels as host code
  lo_emulation.cuda_grid_emulation = true;
  const bool emulation = !options.cuda_emulation_library.empty();
  if (emulation && !for_cuda)
    user_error("--cuda-emulation-library is given, but the spec's targets have no cuda",
               spec.target_locs.empty() ? SourceLoc{} : spec.target_locs[0], "add cuda to the spec's targets");
  std::filesystem::path out = options.output.empty() ? std::filesystem::path(spec.name + ".aot") : options.output;
  artifacts::check_bundle_output(out);
  if (!options.depfile.empty()) check_depfile_writable(options.depfile);
  if (!options.report.empty()) check_output_file(options.report, "report", "--report");
  std::optional<CompileCache> cache = open_cache(options);
  const std::string base_key = cache ? cache_base_key(yaml, options, lo, for_cuda ? &lo_cuda : nullptr) : std::string();
  if (cache)
    if (std::optional<CompileCache::Entry> hit = cache->lookup(base_key))
      return compile_from_cache(*hit, out, options, *cache, start);
  // A miss still reuses the objects of kernel modules compiled before (an unchanged entry's).
  std::optional<CachedObjects> objects_cache;
  if (cache) lo.object_cache = &objects_cache.emplace(*cache, base_key);

  auto captures = capture_all(spec, [&](const ProfileCapture& pc) {
    if (!options.quiet)
      std::cerr << "aotrace: captured " << pc.entry->name << ", profile " << pc.profile->name << " in "
                << std::setprecision(3) << pc.capture.seconds << " s\n" << std::setprecision(6);
  });
  refuse_graph_breaks(captures);
  // The planned variants against max_variants before any lowering.
  check_max_variants(spec, captures);
  std::vector<std::vector<PlannedVariant>> plans;  // per entry
  size_t planned_variants = 0;
  for (const auto& entry : spec.entries) planned_variants += plans.emplace_back(plan_variants(captures, entry)).size();

  // The portable baseline, and by default on x86-64 this host's faster level too: each variant
  // is scheduled once and code-generated per CPU; the runtime picks a library at load.
  // `targets: [cuda]` alone builds no CPU kernels.
  const std::vector<std::string> cpus = for_cpu ? lowering::kernel_cpus(lo) : std::vector<std::string>{};
  if (for_cpu) lo.extra_cpus.assign(cpus.begin() + 1, cpus.end());
  artifacts::BundleSpec bundle;
  bundle.name = spec.name;
  bundle.triple = lowering::resolved_triple(lo);
  bundle.toolchain = "LLVM 16";
  if (for_cpu) {
    bundle.cpu = lowering::resolved_cpu(lo);
    // The preflight lists the features the runtime can check on the device.
    bundle.cpu_features = checkable_cpu_features(lo);
  }
  std::vector<ir::Bytes> cuda_bitcode;  // per variant
  std::vector<ir::Bytes> emulation_objects;  // per variant, --cuda-emulation-library
  std::map<std::string, std::vector<int64_t>> weight_index;  // add_weights: by type and content
  std::vector<std::vector<ir::Bytes>> objects(cpus.size());  // per CPU, per variant
  json report_profiles = json::array();
  json report_variants = json::array();  // --report
  int kernels = 0, cuda_kernels = 0;
  size_t lowered = 0;
  // --timings: seconds per phase, summed over variants, in the order phases first ran.
  std::vector<std::pair<std::string, double>> phase_seconds;
  auto add_time = [&](const std::string& phase, double seconds) {
    for (auto& [name, s] : phase_seconds)
      if (name == phase) return void(s += seconds);
    phase_seconds.push_back({phase, seconds});
  };
  for (const ProfileCapture& pc : captures) add_time("capture", pc.capture.seconds);

  // Every variant's lowering, --jobs at a time (each also builds its extra CPUs' code in threads):
  // per variant, the CPU's then the GPU's, as the targets ask.
  std::vector<ParallelLowering::Task> tasks;
  for (size_t e = 0; e < spec.entries.size(); ++e)
    for (size_t v = 0; v < plans[e].size(); ++v) {
      const ir::Graph* graph = &captures[plans[e][v].captures.front()].capture.graph;
      const std::string prefix = spec.entries[e].name + "_v" + std::to_string(v) + "_";
      if (for_cpu) tasks.push_back({graph, prefix, &lo});
      if (for_cuda) tasks.push_back({graph, prefix, &lo_cuda});
      if (emulation) tasks.push_back({graph, prefix, &lo_emulation});
    }
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int per_variant = static_cast<int>(std::max<size_t>(1, cpus.size()));
  ParallelLowering lowerings(std::move(tasks), options.jobs > 0 ? options.jobs : std::max(1, hardware / per_variant));
  size_t task = 0;
  std::set<std::string> noted;
  for (size_t e = 0; e < spec.entries.size(); ++e) {
    const shape_profiles::EntrySpec& entry = spec.entries[e];
    artifacts::EntrySpec es;
    es.name = entry.name;
    for (const PlannedVariant& planned : plans[e]) {
      const ProfileCapture& pc = captures[planned.captures.front()];
      const std::string vname = "v" + std::to_string(es.variants.size());
      artifacts::VariantSpec vs = variant_spec(pc, vname);
      const auto golden_start = std::chrono::steady_clock::now();
      vs.golden = golden_of(pc, vname, noted);
      const double golden_seconds = seconds_since(golden_start);
      double lowering_seconds = 0;
      lowering::LoweredVariant lv;  // the CPU's; `plan` stays empty without the cpu target
      if (for_cpu) {
        lv = lowerings.take(task++, &lowering_seconds);
        for (const lowering::PassTiming& pt : lv.timings) add_time("lowering: " + pt.pass, pt.seconds);
        vs.plan = std::move(lv.plan);
        add_weights(lv.graph, vs.plan, bundle, weight_index);
        objects[0].push_back(std::move(lv.object));
        for (size_t i = 0; i < lv.extra_objects.size(); ++i)
          objects[i + 1].push_back(std::move(lv.extra_objects[i]));
        kernels += static_cast<int>(vs.plan.calls.size());
      }
      if (for_cuda) {
        double seconds = 0;
        lowering::LoweredVariant gpu = lowerings.take(task++, &seconds);
        lowering_seconds += seconds;
        for (const lowering::PassTiming& pt : gpu.timings) add_time("lowering (cuda): " + pt.pass, pt.seconds);
        vs.cuda_plan = std::move(gpu.plan);
        add_weights(gpu.graph, *vs.cuda_plan, bundle, weight_index);
        cuda_bitcode.push_back(std::move(gpu.object));
        cuda_kernels += static_cast<int>(vs.cuda_plan->calls.size());
        if (!for_cpu) {  // the report's kernels, their nodes and the passes
          lv.graph = std::move(gpu.graph);
          lv.timings = std::move(gpu.timings);
        }
      }
      if (emulation) emulation_objects.push_back(lowerings.take(task++, &lowering_seconds).object);
      add_time("golden vectors", golden_seconds);
      // Timings are printed, not stored: the same inputs must give a byte-identical bundle.
      if (!options.quiet) {
        std::string profiles;
        for (size_t k : planned.captures) profiles += (profiles.empty() ? "" : ", ") + captures[k].profile->name;
        std::cerr << "aotrace: [" << ++lowered << "/" << planned_variants << "] " << entry.name << " " << vname
                  << " (" << profiles << "): lowered in " << std::setprecision(3)
                  << lowering_seconds << " s";
        if (golden_seconds >= 0.05) std::cerr << ", golden vectors " << golden_seconds << " s";
        std::cerr << "\n" << std::setprecision(6);
      }
      if (!options.report.empty()) {
        // The CPU's plan, or without the cpu target the GPU's.
        const ir::ExecutionPlan& plan = for_cpu ? vs.plan : *vs.cuda_plan;
        json kernels = json::array();
        for (const ir::KernelCall& call : plan.calls) {
          json nodes = json::array();
          for (int32_t n : call.nodes) {
            const ir::Node& node = lv.graph.nodes[static_cast<size_t>(n)];
            nodes.push_back({{"op", std::string(ir::op_name(node.op))},
                             {"source", node.loc.known() ? node.loc.file + ":" + std::to_string(node.loc.line) : ""}});
          }
          kernels.push_back({{"symbol", call.symbol}, {"what", call.what}, {"nodes", nodes}});
        }
        json guards = json::array(), phases = json::array();
        for (const ir::Guard& g : vs.guards) guards.push_back(g.str());
        for (const lowering::PassTiming& pt : lv.timings) phases.push_back({{"pass", pt.pass}, {"seconds", pt.seconds}});
        int64_t weight_bytes = 0;
        for (const ir::PlanBuffer& b : plan.buffers)
          if (b.kind == ir::PlanBuffer::Kind::Weight) weight_bytes += b.size_bytes;
        std::vector<std::string> profile_names;
        for (size_t k : planned.captures) profile_names.push_back(captures[k].profile->name);
        report_variants.push_back({{"entry", entry.name}, {"variant", vname}, {"profiles", profile_names},
                                   {"capture_seconds", pc.capture.seconds}, {"lowering_seconds", lowering_seconds},
                                   {"golden_seconds", golden_seconds}, {"phases", phases}, {"guards", guards},
                                   {"arena_bytes", plan.arena_bytes}, {"weight_bytes", weight_bytes},
                                   {"kernels", kernels}});
        if (for_cuda) {
          report_variants.back()["cuda_kernels"] = vs.cuda_plan->calls.size();
          report_variants.back()["cuda_arena_bytes"] = vs.cuda_plan->arena_bytes;
        }
      }
      for (size_t k = 0; k < planned.captures.size(); ++k) {
        const ProfileCapture& member = captures[planned.captures[k]];
        if (k > 0) vs.profiles.push_back(member.profile->name);
        json rp = explain_json(member, false);
        rp["variant"] = vname;
        rp.erase("compile_times");  // wall-clock: kept out of the bundle, which is deterministic
        report_profiles.push_back(rp);
      }
      es.variants.push_back(std::move(vs));
    }
    const auto buckets_start = std::chrono::steady_clock::now();
    es.buckets = check_padding_buckets(spec, entry, captures);
    if (!es.buckets.empty()) add_time("padding check (eager)", seconds_since(buckets_start));
    bundle.entries.push_back(std::move(es));
  }
  const auto link_start = std::chrono::steady_clock::now();
  if (for_cpu) bundle.cpu_library = lowering::link_cpu_library(objects[0], lo);
  for (size_t i = cpus.size(); i-- > 1;) {  // fastest first
    lowering::Options faster = lo;
    faster.cpu = cpus[i];
    faster.extra_cpus.clear();
    bundle.faster_cpu_libraries.push_back(
        {cpus[i], checkable_cpu_features(faster), lowering::link_cpu_library(objects[i], faster)});
  }
  add_time("link (ld.lld)", seconds_since(link_start));
  if (for_cuda) {
    const auto ptxas_start = std::chrono::steady_clock::now();
    lowering::CudaLibrary cuda = lowering::link_cuda_kernels(cuda_bitcode, lo_cuda);
    for (auto& [arch, cubin] : cuda.cubins) bundle.cuda_images.push_back({arch, false, std::move(cubin)});
    if (lo_cuda.cuda_math != lowering::Options::CudaMath::f32) bundle.cuda_math = lowering::cuda_math_name(lo_cuda.cuda_math);
    bundle.cuda_images.push_back({cuda.ptx_arch, true, ir::Bytes(cuda.ptx.begin(), cuda.ptx.end())});
    add_time("link (NVPTX, ptxas)", seconds_since(ptxas_start));
  }
  if (emulation) {
    const ir::Bytes library = lowering::link_cpu_library(emulation_objects, lo);
    std::ofstream file(options.cuda_emulation_library, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(library.data()), static_cast<std::streamsize>(library.size()));
    if (!file) user_error("cannot write " + options.cuda_emulation_library.string());
  }
  json entries = json::array();
  for (const auto& e : spec.entries) {
    json inputs = json::array();
    for (const auto& in : e.inputs) inputs.push_back({{"name", in.name}, {"dtype", ir::dtype_torch_name(in.dtype)}});
    entries.push_back({{"name", e.name}, {"call", e.call}, {"inputs", inputs}});
  }
  json report = {{"name", spec.name},
                 {"script", spec.script.string()},
                 {"entries", entries},
                 {"tool", std::string("aotrace ") + AOTRACE_VERSION},
                 {"spec", std::filesystem::absolute(yaml).lexically_normal().string()},
                 {"triple", bundle.triple},
                 {"cpus", cpus},
                 {"profiles", report_profiles}};
  bundle.report_json = report.dump(2);

  const auto write_start = std::chrono::steady_clock::now();
  artifacts::write_bundle(bundle, out);
  add_time("write the bundle", seconds_since(write_start));
  const std::vector<std::filesystem::path> deps = compile_inputs(yaml);
  if (!options.depfile.empty()) write_depfile(options.depfile, depfile_target(out), deps);
  size_t variants = 0;
  for (const auto& e : bundle.entries) variants += e.variants.size();
  std::vector<std::string> targets = cpus;  // "x86-64-v2", …, "CUDA sm_80, sm_90 (PTX sm_80)[ with tf32 tensor cores]"
  if (for_cuda) {
    std::string gpus;
    for (const artifacts::CudaImageSpec& image : bundle.cuda_images)
      gpus += image.ptx ? " (PTX " + image.arch + ")" : (gpus.empty() ? "CUDA " : ", ") + image.arch;
    if (!bundle.cuda_math.empty()) gpus += " with " + bundle.cuda_math + " tensor cores";
    targets.push_back(gpus);
  }
  const std::string summary = std::to_string(spec.profiles.size() * spec.entries.size()) + " profile(s) into " +
                              std::to_string(variants) + " variant(s), " +
                              (for_cpu ? std::to_string(kernels) + " kernel(s), " : "") +
                              (for_cuda ? std::to_string(cuda_kernels) + " CUDA kernel(s), " : "") +
                              std::to_string(bundle.weights.size()) + " weight(s), kernels for " + join(targets, " and ");
  std::string cache_note;
  if (cache) {
    std::string why;
    const bool stored = cache->store(base_key, {deps, artifacts::read_bundle_files(out), summary}, &why);
    cache_note = stored ? " (cache miss: stored in " + cache->dir().string() + ")" : "";
    if (!stored) std::cerr << "aotrace: warning: the bundle was not stored in the compile cache: " << why << "\n";
  }
  const double total = seconds_since(start);
  std::cerr << "aotrace: compiled " << summary << " -> " << out.string() << " in " << total << " s"
            << cache_note << "\n";
  if (!options.report.empty()) {
    json phases = json::array();
    for (const auto& [name, sec] : phase_seconds) phases.push_back({{"phase", name}, {"seconds", sec}});
    json libraries = json::array();
    if (for_cpu) libraries.push_back({{"cpu", cpus.front()}, {"bytes", bundle.cpu_library.size()}});
    for (const auto& l : bundle.faster_cpu_libraries) libraries.push_back({{"cpu", l.cpu}, {"bytes", l.library.size()}});
    for (const auto& image : bundle.cuda_images)
      libraries.push_back({{"cuda", image.arch}, {"kind", image.ptx ? "ptx" : "cubin"}, {"bytes", image.bytes.size()}});
    write_output_file(options.report,
                              json{{"bundle", out.string()}, {"spec", std::filesystem::absolute(yaml).lexically_normal().string()},
                                   {"cache", cache ? "miss" : "off"}, {"seconds", total}, {"summary", summary},
                                   {"phases", phases}, {"libraries", libraries}, {"variants", report_variants}}
                                      .dump(2) + "\n",
                              "report", "--report");
  }
  if (options.timings) {
    // codegen's LLVM phases (codegen.llvm-*) are part of codegen's time, and the extra CPUs'
    // codegen runs alongside the first: the shares of the lines do not add up to 100%.
    std::cerr << "aotrace: timings (" << variants << " variant(s), " << total << " s in all; codegen.* is part of codegen, "
              << "codegen-CPU runs alongside codegen):\n";
    for (const auto& [name, s] : phase_seconds) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-36s %9.3f s %6.1f%%\n", name.c_str(), s, 100 * s / total);
      std::cerr << line;
    }
  }
  return 0;
}

}  // namespace aotrace::driver
