// write_bundle (artifacts.h): every file of the bundle into a temporary directory next to the
// output, then bundle.fb listing their sizes and hashes, then one rename into place, so that an
// existing bundle is only replaced by a complete one. Deterministic: sorted, no timestamps.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>

#include <xxhash.h>

#include "artifacts/artifacts.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/npy.h"
#include "artifacts/writer_private.h"

namespace aotrace::artifacts {
namespace fs = std::filesystem;
using ir::Bytes;
namespace {

[[noreturn]] void write_failed(const fs::path& out, const std::string& why) {
  user_error("cannot write bundle " + out.string() + ": " + why, {},
             "check that the output directory exists and is writable");
}

// Writes files under `root` and remembers each one's size and hash for bundle.fb.
class BundleFiles {
 public:
  BundleFiles(fs::path root, fs::path out) : root_(std::move(root)), out_(std::move(out)) {}

  void write(const std::string& rel, const void* data, size_t size) { write_pieces(rel, {{data, size}}); }
  void write(const std::string& rel, const std::string& text) { write(rel, text.data(), text.size()); }

  // One file from pieces written in order (weights.bin: no copy of every weight into one buffer),
  // hashed as it goes.
  void write_pieces(const std::string& rel, const std::vector<std::pair<const void*, size_t>>& pieces) {
    fs::path path = root_ / rel;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    XXH3_state_t* state = XXH3_createState();
    AOT_CHECK(state != nullptr && XXH3_64bits_reset(state) == XXH_OK, "cannot start a hash");
    size_t size = 0;
    for (const auto& [data, n] : pieces) {
      f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
      (void)XXH3_64bits_update(state, data, n);
      size += n;
    }
    const uint64_t hash = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    f.close();
    if (ec || !f) write_failed(out_, "cannot write " + path.string());
    records_.push_back({rel, size, hash});
  }

  std::vector<FileRecord> sorted_records() const {
    std::vector<FileRecord> r = records_;
    std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    return r;
  }

 private:
  fs::path root_, out_;
  std::vector<FileRecord> records_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  AOT_CHECK(in.good(), "cannot read runtime source " + path.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// weights.bin: each weight at a 64-byte aligned offset, zero padding between.
std::vector<WeightPlacement> write_weights(const BundleSpec& spec, BundleFiles& files) {
  static const std::array<uint8_t, 64> zeros{};
  std::vector<WeightPlacement> placements;
  std::vector<std::pair<const void*, size_t>> pieces;
  size_t offset = 0;
  for (const WeightSpec& w : spec.weights) {
    AOT_CHECK(w.data != nullptr, "weight '" + w.name + "' has no data");
    const size_t aligned = (offset + 63) / 64 * 64;
    if (aligned != offset) pieces.emplace_back(zeros.data(), aligned - offset);
    placements.push_back({aligned, w.data->size()});
    pieces.emplace_back(w.data->data(), w.data->size());
    offset = aligned + w.data->size();
  }
  if (!spec.weights.empty()) files.write_pieces("weights.bin", pieces);
  return placements;
}

// runtime/: the runtime sources, sorted, plus the generated schema header, so that
// `cmake -S NAME.aot/runtime` builds aotrace_run without the compiler.
void write_runtime(BundleFiles& files) {
  std::vector<fs::path> sources;
  for (const auto& e : fs::directory_iterator(AOTRACE_RUNTIME_SOURCE_DIR))
    if (e.is_regular_file()) sources.push_back(e.path());
  std::sort(sources.begin(), sources.end());
  for (const fs::path& p : sources) files.write("runtime/" + p.filename().string(), read_file(p));
  files.write("runtime/bundle_generated.h", read_file(AOTRACE_BUNDLE_SCHEMA_HEADER));
}

Bytes npy_bytes(const ir::HostTensor& t) {
  static_assert(static_cast<int>(ir::DType::b8) == static_cast<int>(rt::DType::b8),
                "ir::DType and rt::DType must have the same order");
  rt::TensorRef ref(static_cast<rt::DType>(t.dtype), t.shape, const_cast<uint8_t*>(t.data.data()));
  rt::Result<std::string> bytes = rt::npy_serialize(ref);
  AOT_CHECK(bytes.ok(), "golden tensor: " + bytes.status().message());
  return Bytes(bytes->begin(), bytes->end());
}

// golden/: each variant's golden pairs as .npy files (golden_path).
void write_golden(const BundleSpec& spec, BundleFiles& files) {
  for (const EntrySpec& e : spec.entries)
    for (const VariantSpec& v : e.variants)
      for (size_t k = 0; k < v.golden.size(); ++k) {
        const GoldenPair& g = v.golden[k];
        AOT_CHECK(g.inputs.size() == v.inputs.size() + (v.draws_random ? 1 : 0) &&
                      g.outputs.size() == v.outputs.size() + v.updated_inputs.size(),
                  "golden pair of variant " + v.name + " does not match its inputs and outputs");
        for (size_t i = 0; i < g.inputs.size(); ++i) {
          Bytes b = npy_bytes(g.inputs[i]);
          files.write(golden_path(e.name, v.name, k, "in", i), b.data(), b.size());
        }
        for (size_t i = 0; i < g.outputs.size(); ++i) {
          Bytes b = npy_bytes(g.outputs[i]);
          files.write(golden_path(e.name, v.name, k, "out", i), b.data(), b.size());
        }
      }
}

bool safe_file_name(const std::string& s) {
  return !s.empty() && s.find('/') == std::string::npos && s != "." && s != "..";
}

void check_spec(const BundleSpec& spec) {
  for (const EntrySpec& e : spec.entries) {
    AOT_CHECK(safe_file_name(e.name), "entry name '" + e.name + "' cannot name a file");
    AOT_CHECK(!e.variants.empty(), "entry '" + e.name + "' has no variants");
    for (const VariantSpec& v : e.variants)
      AOT_CHECK(safe_file_name(v.name), "variant name '" + v.name + "' cannot name a file");
  }
  AOT_CHECK(spec.cpu_library.empty() || safe_file_name(spec.triple),
            "a CPU library needs a target triple");
  AOT_CHECK(spec.faster_cpu_libraries.empty() || !spec.cpu_library.empty(),
            "faster CPU libraries need a baseline CPU library");
  std::set<std::string> cpus = {spec.cpu};
  for (const CpuLibrarySpec& l : spec.faster_cpu_libraries) {
    AOT_CHECK(safe_file_name(l.cpu) && cpus.insert(l.cpu).second,
              "faster CPU library for '" + l.cpu + "' cannot be told from the others");
    AOT_CHECK(!l.library.empty(), "faster CPU library for '" + l.cpu + "' is empty");
  }
  std::set<std::string> images;
  for (const CudaImageSpec& image : spec.cuda_images) {
    AOT_CHECK(safe_file_name(image.arch) && images.insert(cuda_image_path(image)).second,
              "CUDA image for '" + image.arch + "' cannot be told from the others");
    AOT_CHECK(!image.bytes.empty(), "CUDA image for '" + image.arch + "' is empty");
  }
  for (const EntrySpec& e : spec.entries)
    for (const VariantSpec& v : e.variants)
      AOT_CHECK(v.cuda_plan.has_value() == !spec.cuda_images.empty(),
                "variant " + e.name + "." + v.name + " needs a CUDA plan exactly when the bundle has CUDA images");
}

// Moves `tmp` to `out`; an existing `out` is removed only after `tmp` is complete.
void move_into_place(const fs::path& tmp, const fs::path& out) {
  std::error_code ec;
  fs::path old = out.parent_path() / ("." + out.filename().string() + ".old-" + std::to_string(::getpid()));
  bool had_old = fs::exists(out, ec);
  if (had_old) {
    fs::rename(out, old, ec);
    if (ec) write_failed(out, "cannot move the old bundle aside: " + ec.message());
  }
  fs::rename(tmp, out, ec);
  if (ec) {
    if (had_old) fs::rename(old, out, ec);
    write_failed(out, "cannot rename " + tmp.string() + " into place");
  }
  if (had_old) fs::remove_all(old, ec);
}

}  // namespace

// Every file of the bundle into `tmp`, bundle.fb last.
namespace {
void write_bundle_files(const BundleSpec& spec, const fs::path& tmp, const fs::path& out) {
  BundleFiles files(tmp, out);
  std::vector<WeightPlacement> placements = write_weights(spec, files);
  std::string cpu_library;
  if (!spec.cpu_library.empty()) {
    cpu_library = "cpu/" + spec.triple + ".so";
    files.write(cpu_library, spec.cpu_library.data(), spec.cpu_library.size());
  }
  for (const CpuLibrarySpec& l : spec.faster_cpu_libraries)
    files.write(faster_cpu_library_path(spec.triple, l.cpu), l.library.data(), l.library.size());
  for (const CudaImageSpec& image : spec.cuda_images)
    files.write(cuda_image_path(image), image.bytes.data(), image.bytes.size());
  for (const EntrySpec& e : spec.entries)
    for (const VariantSpec& v : e.variants)
      files.write("graphs/" + e.name + "." + v.name + ".json", v.graph_json);
  write_golden(spec, files);
  files.write("report.json", spec.report_json);
  write_runtime(files);

  std::vector<uint8_t> toc = build_bundle_fb(spec, files.sorted_records(), placements, cpu_library);
  std::ofstream f(tmp / "bundle.fb", std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(toc.data()), static_cast<std::streamsize>(toc.size()));
  f.close();
  if (!f) write_failed(out, "cannot write bundle.fb");
}
}  // namespace

namespace {
fs::path output_dir(const fs::path& out_arg) {  // "dir/" is "dir"
  return out_arg.has_filename() ? out_arg : out_arg.parent_path();
}
}  // namespace

void check_bundle_output(const fs::path& out_arg) {
  const fs::path out = output_dir(out_arg);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    write_failed(out, ec.message());
  if (!fs::exists(st)) return;
  const std::string hint = "remove it or choose another -o";
  if (fs::is_symlink(st))
    user_error(out.string() + " exists and is a symbolic link, not an aotrace bundle", {}, hint);
  if (!fs::is_directory(st))
    user_error(out.string() + " exists and is a file, not an aotrace bundle", {}, hint);
  if (fs::is_regular_file(fs::symlink_status(out / "bundle.fb", ec))) return;
  if (fs::is_empty(out, ec) && !ec) return;  // nothing in it to lose
  user_error(out.string() + " exists and is not an aotrace bundle (a directory without bundle.fb)", {}, hint);
}

namespace {
// A fresh temporary directory next to `out`, where a bundle is written before move_into_place.
fs::path temporary_next_to(const fs::path& out) {
  fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  fs::path tmp = parent / ("." + out.filename().string() + ".tmp-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) || ec) write_failed(out, ec.message());
  return tmp;
}

// Runs `write(tmp)`, then moves tmp into place; a failed write leaves `out` as it was and no
// temporary behind.
template <class Write>
void write_then_move(const fs::path& out, Write write) {
  const fs::path tmp = temporary_next_to(out);
  std::error_code ec;
  try {
    write(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  move_into_place(tmp, out);
}
}  // namespace

void write_bundle(const BundleSpec& spec, const fs::path& out_arg) {
  check_spec(spec);
  check_bundle_output(out_arg);
  const fs::path out = output_dir(out_arg);
  write_then_move(out, [&](const fs::path& tmp) { write_bundle_files(spec, tmp, out); });
}

std::vector<BundleFile> read_bundle_files(const fs::path& dir) {
  std::vector<BundleFile> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    AOT_CHECK(in.good() || in.eof(), "cannot read back " + it->path().string());
    files.push_back({fs::relative(it->path(), dir).generic_string(), std::move(bytes)});
  }
  AOT_CHECK(!ec, "cannot list " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return files;
}

void write_bundle_copy(const std::vector<BundleFile>& files, const fs::path& out_arg) {
  check_bundle_output(out_arg);
  const fs::path out = output_dir(out_arg);
  write_then_move(out, [&](const fs::path& tmp) {
    for (const BundleFile& f : files) {
      const fs::path rel(f.path);
      AOT_CHECK(!rel.is_absolute() && rel.lexically_normal().string().rfind("..", 0) != 0,
                "a cached bundle file escapes the bundle: " + f.path);
      std::error_code ec;
      fs::create_directories((tmp / rel).parent_path(), ec);
      std::ofstream o(tmp / rel, std::ios::binary | std::ios::trunc);
      o.write(f.bytes.data(), static_cast<std::streamsize>(f.bytes.size()));
      o.close();
      if (ec || !o) write_failed(out, "cannot write " + (tmp / rel).string());
    }
  });
}

std::string shipped_sources_identity() {
  std::vector<fs::path> sources = {AOTRACE_BUNDLE_SCHEMA_HEADER};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(AOTRACE_RUNTIME_SOURCE_DIR, ec))
    if (e.is_regular_file()) sources.push_back(e.path());
  std::sort(sources.begin(), sources.end());
  std::string id;
  for (const fs::path& p : sources) {
    const std::string bytes = read_file(p);
    id += p.filename().string() + " " + std::to_string(XXH3_64bits(bytes.data(), bytes.size())) + "\n";
  }
  return id;
}

}  // namespace aotrace::artifacts
