// Bundle::open: bundle.fb (bundle_reader.cpp), then integrity of every file, weights.bin mapped,
// the CPU kernels loaded with every symbol resolved, the arenas allocated (for cuda: the GPU's
// module, weights and run slots instead, cuda_run.cpp).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bundle_data.h"

namespace aotrace::rt {
namespace {

Status corrupt(const std::string& dir, const std::string& what) {
  return Status(StatusCode::data_loss, "bundle " + dir + " is corrupt: " + what);
}

// Maps `path` read-only; an empty file maps to {nullptr, 0}.
Result<std::unique_ptr<MappedFile>> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(StatusCode::io_error, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  auto file = std::make_unique<MappedFile>();
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      file->data = p;
      file->size = static_cast<size_t>(st.st_size);
    }
  }
  int err = errno;
  ::close(fd);
  if (st.st_size > 0 && !file->data)
    return Status(StatusCode::io_error, "cannot map " + path + ": " + std::strerror(err));
  return file;
}

bool safe_relative_path(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (p.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

Status verify_file(const BundleData& b, const FileData& f, bool verify_hash) {
  if (!safe_relative_path(f.path)) return corrupt(b.dir, "file path '" + f.path + "' leaves the bundle");
  std::string path = b.dir + "/" + f.path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return corrupt(b.dir, "file " + f.path + " is missing");
  if (static_cast<uint64_t>(st.st_size) != f.size)
    return corrupt(b.dir, "file " + f.path + " has " + std::to_string(st.st_size) +
                              " bytes, bundle.fb says " + std::to_string(f.size));
  if (!verify_hash) return Status::Ok();
  auto mapped = map_file(path);
  if (!mapped.ok()) return mapped.status();
  uint64_t hash = XXH3_64bits((*mapped)->data, (*mapped)->size);
  if (hash != f.xxh3) return corrupt(b.dir, "file " + f.path + " does not match its XXH3 hash");
  return Status::Ok();
}

bool listed(const BundleData& b, const std::string& path) {
  for (const FileData& f : b.files)
    if (f.path == path) return true;
  return false;
}

Status map_weights(BundleData& b) {
  if (b.weights.empty()) return Status::Ok();
  if (!listed(b, "weights.bin")) return corrupt(b.dir, "weights.bin is not listed in bundle.fb");
  auto mapped = map_file(b.dir + "/weights.bin");
  if (!mapped.ok()) return mapped.status();
  b.weights_file = std::move(*mapped);
  for (const WeightData& w : b.weights)
    if (w.offset % 64 != 0 || w.offset > b.weights_file->size ||
        w.size > b.weights_file->size - w.offset)
      return corrupt(b.dir, "weight '" + w.name + "' lies outside weights.bin");
  return Status::Ok();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Hardware preflight: before any kernel is loaded, this CPU must have every feature of one of the
// kernel libraries; the fastest such library is chosen (the baseline when no faster one runs).
Status select_cpu_library(BundleData& b, const OpenOptions& options) {
  int chosen = rt::choose_cpu_library(b.cpu_libraries, options.disabled_cpu_features);
  if (chosen >= 0) {
    b.cpu_library = static_cast<size_t>(chosen);
    return Status::Ok();
  }
  const CpuLibraryInfo& base = b.cpu_libraries.front();
  const std::string compiled_for = "bundle " + b.dir + " has kernels compiled for CPU " +
                                   (base.cpu.empty() ? std::string("(unknown)") : base.cpu);
  std::vector<std::string> missing = missing_cpu_features(base.features);
  if (missing.empty())
    return Status(StatusCode::unsupported,
                  compiled_for + ", which need CPU features disabled by "
                  "OpenOptions::disabled_cpu_features or AOTRACE_DISABLE_CPU_FEATURES (needs " +
                      joined(base.features) + "); disable only features the baseline does not need");
  return Status(StatusCode::unsupported,
                compiled_for + ", which need CPU features this machine lacks: " + joined(missing) +
                    " (needs " + joined(base.features) +
                    "); recompile with a --cpu this machine supports, e.g. --cpu x86-64-v2");
}

Status load_kernels(BundleData& b, const OpenOptions& options) {
  bool has_calls = false;
  for (const EntryData& e : b.entries)
    for (const VariantData& v : e.variants) has_calls |= !v.calls.empty();
  if (!has_calls) return Status::Ok();
  const std::string& baseline = b.cpu_libraries.front().path;
  if (baseline.empty() || !listed(b, baseline))
    return corrupt(b.dir, "plans call kernels but no CPU library is listed");
  if (!triple_matches_host(b.triple))
    return Status(StatusCode::unsupported, "bundle " + b.dir + " has CPU kernels for " +
                                               b.triple + ", which this machine cannot run");
  if (Status s = select_cpu_library(b, options); !s.ok()) return s;
  const std::string& library = b.cpu_libraries[b.cpu_library].path;
  std::string path = b.dir + "/" + library;
  b.library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!b.library) return Status(StatusCode::io_error, std::string("cannot load ") + path + ": " + ::dlerror());
  for (EntryData& e : b.entries)
    for (VariantData& v : e.variants)
      for (CallData& c : v.calls) {
        c.fn = reinterpret_cast<aotrace_kernel_fn>(::dlsym(b.library, c.symbol.c_str()));
        if (!c.fn) return corrupt(b.dir, "kernel '" + c.symbol + "' is missing from " + library);
      }
  return Status::Ok();
}

// A bundle without CPU kernels (`targets: [cuda]`) needs a GPU: refused here, with what to do.
Status check_cuda_only(const BundleData& b) {
  if (b.cuda_images.empty() || !b.cpu_libraries.front().path.empty()) return Status::Ok();
  std::string images;
  for (const CudaImageInfo& image : b.cuda_images) images += (images.empty() ? "" : ", ") + std::string(image.ptx ? "PTX " : "") + image.arch;
  const std::string what = "bundle " + b.dir + " has CUDA kernels only (" + images + ")";
  const std::string fix = "compile the model with `targets: [cpu, cuda]` to run its CPU kernels on this machine";
  const CudaDeviceInfo gpu = probe_cuda_device();
  if (!gpu.driver)
    return Status(StatusCode::unsupported, what + ", and this machine has no CUDA driver (" + gpu.error +
                                               "): run it on a machine with an NVIDIA driver, or " + fix);
  return Status(StatusCode::unsupported, what + ", and it was opened for the CPU: open it for the GPU "
                                         "(OpenOptions::device = cuda, `--device cuda`), or " + fix);
}

// One run slot per variant up front, so that single-threaded use never allocates scratch.
Status allocate_arenas(BundleData& b) {
  for (EntryData& e : b.entries)
    for (VariantData& v : e.variants) {
      size_t max_args = 0;
      for (const CallData& c : v.calls) max_args = std::max(max_args, c.buffers.size());
      v.slots = std::make_unique<RunSlotPool>(v.arena_bytes, v.buffers.size(), max_args);
      std::unique_ptr<RunSlot> slot = v.slots->take();
      if (!slot) return Status(StatusCode::io_error, "cannot allocate the arena of variant " + v.name +
                                                         " (" + std::to_string(v.arena_bytes) + " bytes)");
      v.slots->give_back(std::move(slot));
    }
  return Status::Ok();
}

}  // namespace

bool triple_matches_host(const std::string& triple) {
#if defined(__x86_64__)
  return triple.rfind("x86_64", 0) == 0;
#elif defined(__aarch64__)
  return triple.rfind("aarch64", 0) == 0 || triple.rfind("arm64", 0) == 0;
#else
  return true;
#endif
}

std::unique_ptr<RunSlot> RunSlotPool::take() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      std::unique_ptr<RunSlot> slot = std::move(free_.back());
      free_.pop_back();
      return slot;
    }
  }
  auto slot = std::make_unique<RunSlot>();
  if (arena_bytes_ > 0) {
    size_t bytes = (static_cast<size_t>(arena_bytes_) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) return nullptr;
    slot->arena = {static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); }};
  }
  slot->pointers.resize(num_buffers_);
  slot->args.reserve(max_call_args_);
  return slot;
}

void RunSlotPool::give_back(std::unique_ptr<RunSlot> slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(slot));
}

MappedFile::~MappedFile() {
  if (data) ::munmap(data, size);
}

BundleData::~BundleData() {
  if (library) ::dlclose(library);
}

const uint8_t* BundleData::weight_ptr(size_t index) const {
  return static_cast<const uint8_t*>(weights_file->data) + weights[index].offset;
}

Result<Bundle> Bundle::open(const std::string& dir, const OpenOptions& options) {
  auto read = read_bundle_fb(dir, options);
  if (!read.ok()) return read.status();
  std::shared_ptr<BundleData> data = std::move(*read);
  for (const FileData& f : data->files)
    if (Status s = verify_file(*data, f, options.verify_hashes); !s.ok()) return s;
  if (Status s = map_weights(*data); !s.ok()) return s;
  // Device guards hold the declared device only where the bundle runs: on a GPU an input
  // declared `device: cuda` must be GPU memory, the others may be either (host tensors are copied
  // in); on the CPU every input is host memory, so a `device: cuda` guard is relaxed there.
  for (EntryData& e : data->entries)
    for (VariantData& v : e.variants)
      for (GuardData& g : v.guards)
        if (g.kind == GuardKind::Device) g.any_device = g.device != options.device;
  if (options.device == DeviceKind::cuda) {
    // The CUDA kernels only: the CPU library is not loaded, the kernels need no thread pool.
    if (Status s = open_cuda(*data, options); !s.ok()) return s;
    if (Status s = start_thread_pool(*data, 1); !s.ok()) return s;
    return Bundle(std::move(data));
  }
  if (Status s = check_cuda_only(*data); !s.ok()) return s;
  if (Status s = load_kernels(*data, options); !s.ok()) return s;
  if (Status s = allocate_arenas(*data); !s.ok()) return s;
  if (Status s = start_thread_pool(*data, options.num_threads); !s.ok()) return s;
  return Bundle(std::move(data));
}

Result<Entry> Bundle::entry(const std::string& name) const {
  std::string names;
  for (const EntryData& e : data_->entries) {
    if (e.name == name) return Entry(data_, &e);
    names += (names.empty() ? "" : ", ") + e.name;
  }
  return Status(StatusCode::not_found,
                "bundle " + data_->dir + " has no entry '" + name + "' (entries: " + names + ")");
}

std::vector<std::string> Bundle::entry_names() const {
  std::vector<std::string> names;
  for (const EntryData& e : data_->entries) names.push_back(e.name);
  return names;
}

const std::string& Bundle::name() const { return data_->name; }
uint32_t Bundle::format_major() const { return data_->format_major; }
uint32_t Bundle::format_minor() const { return data_->format_minor; }
const std::string& Bundle::tool_version() const { return data_->tool_version; }
const std::string& Bundle::toolchain() const { return data_->toolchain; }
const std::string& Bundle::triple() const { return data_->triple; }
const std::string& Bundle::cpu() const { return data_->cpu_libraries[data_->cpu_library].cpu; }
const std::vector<std::string>& Bundle::cpu_features() const {
  return data_->cpu_libraries[data_->cpu_library].features;
}
const std::string& Bundle::cpu_library() const { return data_->cpu_libraries[data_->cpu_library].path; }
const std::vector<CpuLibraryInfo>& Bundle::cpu_libraries() const { return data_->cpu_libraries; }
const std::vector<CudaImageInfo>& Bundle::cuda_images() const { return data_->cuda_images; }

std::vector<std::string> known_features() {
  return {"output-constants", "input-updates", "scalar-inputs", "random", "dynamic-dims", "value-guards",
          "padding-buckets", "cuda", "cuda-inputs", "cuda-math"};
}

}  // namespace aotrace::rt
