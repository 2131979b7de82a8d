// The compile cache (driver.h): manifests and bundle entries, written atomically, evicted
// least recently used first.
//
// An entry file: the magic line, a little-endian u64 header length, the JSON header
// {"deps": [paths], "files": [{"path", "size"}], "summary"}, the files' bytes in that order, and the
// XXH3-64 of everything before it, so that a truncated or damaged entry reads as a miss.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "driver/driver.h"

namespace aotrace::driver {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kLayout = "v1";  // a new layout gets a new folder beside the old
constexpr std::string_view kMagic = "AOTRACE-CACHE-ENTRY 1\n";
// A temporary older than this belongs to a process that died while writing it.
constexpr auto kStaleTemporary = std::chrono::hours(1);

std::optional<std::string> read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return bytes;
}

std::string u64_bytes(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

uint64_t read_u64(std::string_view s) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[static_cast<size_t>(i)]);
  return v;
}

// Writes `bytes` to `final_path` through a unique temporary in `tmp_dir` and a rename: readers
// see the old file or the new one, never a part; concurrent writers of the same name both
// succeed (the last rename wins, and both wrote the same content).
bool write_atomically(const fs::path& tmp_dir, const fs::path& final_path, const std::string& bytes, std::string* why) {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = tmp_dir / (final_path.filename().string() + "." + std::to_string(::getpid()) + "." +
                                  std::to_string(counter++) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      *why = "cannot write " + tmp.string();
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) {
    *why = "cannot rename " + tmp.string() + " to " + final_path.string() + ": " + ec.message();
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

void touch(const fs::path& p) {
  std::error_code ec;
  fs::last_write_time(p, fs::file_time_type::clock::now(), ec);
}

std::string entry_bytes(const CompileCache::Entry& e) {
  json header = {{"deps", json::array()}, {"files", json::array()}, {"summary", e.summary}};
  for (const fs::path& d : e.deps) header["deps"].push_back(d.string());
  for (const auto& f : e.files) header["files"].push_back({{"path", f.path}, {"size", f.bytes.size()}});
  const std::string h = header.dump();
  std::string out(kMagic);
  out += u64_bytes(h.size());
  out += h;
  for (const auto& f : e.files) out += f.bytes;
  out += u64_bytes(XXH3_64bits(out.data(), out.size()));
  return out;
}

std::optional<CompileCache::Entry> parse_entry(const std::string& bytes) {
  if (bytes.size() < kMagic.size() + 16 || bytes.compare(0, kMagic.size(), kMagic) != 0) return std::nullopt;
  const size_t body = bytes.size() - 8;
  if (XXH3_64bits(bytes.data(), body) != read_u64(std::string_view(bytes).substr(body))) return std::nullopt;
  const uint64_t header_size = read_u64(std::string_view(bytes).substr(kMagic.size(), 8));
  size_t at = kMagic.size() + 8;
  if (header_size > body - at) return std::nullopt;
  json header = json::parse(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                            bytes.begin() + static_cast<std::ptrdiff_t>(at + header_size), nullptr, false);
  if (header.is_discarded() || !header["deps"].is_array() || !header["files"].is_array()) return std::nullopt;
  at += header_size;
  CompileCache::Entry e;
  if (header["summary"].is_string()) e.summary = header["summary"].get<std::string>();
  for (const json& d : header["deps"])
    if (d.is_string()) e.deps.emplace_back(d.get<std::string>());
  for (const json& f : header["files"]) {
    if (!f["path"].is_string() || !f["size"].is_number_unsigned()) return std::nullopt;
    const uint64_t size = f["size"].get<uint64_t>();
    if (size > body - at) return std::nullopt;
    e.files.push_back({f["path"].get<std::string>(), bytes.substr(at, size)});
    at += size;
  }
  if (at != body) return std::nullopt;
  return e;
}

// Removes temporaries of dead writers, then the least recently used manifests and entries
// until the cache holds at most `max_bytes`.
void evict(const fs::path& dir, uint64_t max_bytes) {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir / "tmp", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (now - it->last_write_time(e2) > kStaleTemporary && !e2) fs::remove(it->path(), e2);
  }
  struct File {
    fs::path path;
    fs::file_time_type time;
    uint64_t size;
  };
  std::vector<File> files;
  uint64_t total = 0;
  for (const char* sub : {"bundles", "manifests", "objects"})
    for (fs::directory_iterator it(dir / sub, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code e2;
      if (!it->is_regular_file(e2)) continue;
      File f{it->path(), it->last_write_time(e2), it->file_size(e2)};
      if (e2) continue;
      total += f.size;
      files.push_back(std::move(f));
    }
  if (total <= max_bytes) return;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.time < b.time; });
  for (const File& f : files) {
    if (total <= max_bytes) break;
    // Unlinking is safe under a concurrent reader: it has the file open, or it misses.
    std::error_code e2;
    if (fs::remove(f.path, e2)) total -= f.size;
  }
}

}  // namespace

fs::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return fs::path(xdg) / "aotrace";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "aotrace";
  return {};
}

std::string hash_hex(std::string_view bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

std::optional<std::string> file_hash_hex(const fs::path& file) {
  std::optional<std::string> bytes = read_whole(file);
  if (!bytes) return std::nullopt;
  return hash_hex(*bytes);
}

std::optional<std::string> compile_key(const std::string& base_key, const std::vector<fs::path>& deps) {
  std::string material = base_key + "\n";
  for (const fs::path& d : deps) {
    std::optional<std::string> h = file_hash_hex(d);
    if (!h) return std::nullopt;
    material += d.string() + '\0' + *h + "\n";
  }
  return hash_hex(material);
}

std::optional<CompileCache> CompileCache::open(const fs::path& user_dir, uint64_t max_bytes, std::string* why) {
  if (user_dir.empty()) {
    *why = "no cache folder: neither XDG_CACHE_HOME nor HOME is set";
    return std::nullopt;
  }
  const fs::path dir = user_dir / kLayout;
  std::error_code ec;
  // A folder of the user's that holds other things is not tagged as a cache as a whole.
  const bool ours = !fs::exists(user_dir, ec) || fs::is_empty(user_dir, ec) || fs::exists(user_dir / "CACHEDIR.TAG", ec);
  for (const char* sub : {"bundles", "manifests", "objects", "tmp"}) {
    fs::create_directories(dir / sub, ec);
    if (ec) {
      *why = "cannot create " + (dir / sub).string() + ": " + ec.message();
      return std::nullopt;
    }
  }
  // Backup and indexing tools skip a folder holding this tag (https://bford.info/cachedir/).
  if (ours && !fs::exists(user_dir / "CACHEDIR.TAG", ec)) {
    std::string ignored;
    write_atomically(dir / "tmp", user_dir / "CACHEDIR.TAG",
                     "Signature: 8a477f597d28d172789f06886806bc55\n# the aotrace compile cache\n", &ignored);
  }
  if (::access((dir / "tmp").c_str(), W_OK) != 0 || ::access((dir / "bundles").c_str(), W_OK) != 0 ||
      ::access((dir / "manifests").c_str(), W_OK) != 0 || ::access((dir / "objects").c_str(), W_OK) != 0) {
    *why = (dir).string() + " is not writable";
    return std::nullopt;
  }
  return CompileCache(dir, max_bytes);
}

std::optional<CompileCache::Entry> CompileCache::lookup(const std::string& base_key) const {
  const fs::path manifest = dir_ / "manifests" / base_key;
  std::optional<std::string> text = read_whole(manifest);
  if (!text) return std::nullopt;
  json m = json::parse(*text, nullptr, false);
  if (m.is_discarded() || !m["deps"].is_array()) return std::nullopt;
  std::vector<fs::path> deps;
  for (const json& d : m["deps"])
    if (d.is_string()) deps.emplace_back(d.get<std::string>());
  std::optional<std::string> key = compile_key(base_key, deps);
  if (!key) return std::nullopt;
  const fs::path entry_path = dir_ / "bundles" / (*key + ".aotc");
  std::optional<std::string> bytes = read_whole(entry_path);
  if (!bytes) return std::nullopt;
  std::optional<Entry> entry = parse_entry(*bytes);
  if (!entry) return std::nullopt;
  touch(entry_path);
  touch(manifest);
  return entry;
}

bool CompileCache::store(const std::string& base_key, const Entry& entry, std::string* why) const {
  std::optional<std::string> key = compile_key(base_key, entry.deps);
  if (!key) {
    *why = "a file the compile read can no longer be read";
    return false;
  }
  const std::string bytes = entry_bytes(entry);
  if (bytes.size() > max_bytes_) {
    *why = "the bundle (" + std::to_string(bytes.size() >> 20) + " MiB) is larger than the cache's bound (" +
           std::to_string(max_bytes_ >> 20) + " MiB)";
    return false;
  }
  json manifest = {{"deps", json::array()}};
  for (const fs::path& d : entry.deps) manifest["deps"].push_back(d.string());
  // The entry before the manifest that leads to it: a reader never follows a manifest to an
  // entry that is not there yet (it would only miss, but then compile for nothing).
  if (!write_atomically(dir_ / "tmp", dir_ / "bundles" / (*key + ".aotc"), bytes, why)) return false;
  if (!write_atomically(dir_ / "tmp", dir_ / "manifests" / base_key, manifest.dump(1) + "\n", why)) return false;
  evict(dir_, max_bytes_);
  return true;
}

std::optional<std::string> CompileCache::lookup_object(const std::string& key) const {
  const fs::path path = dir_ / "objects" / (key + ".o");
  std::optional<std::string> bytes = read_whole(path);
  if (!bytes) return std::nullopt;
  std::optional<Entry> entry = parse_entry(*bytes);
  if (!entry || entry->files.size() != 1) return std::nullopt;
  touch(path);
  return std::move(entry->files[0].bytes);
}

bool CompileCache::store_object(const std::string& key, const std::string& object, std::string* why) const {
  const std::string bytes = entry_bytes({{}, {{"object.o", object}}, ""});
  if (bytes.size() > max_bytes_) {
    *why = "the object is larger than the cache's bound";
    return false;
  }
  if (!write_atomically(dir_ / "tmp", dir_ / "objects" / (key + ".o"), bytes, why)) return false;
  evict(dir_, max_bytes_);
  return true;
}

}  // namespace aotrace::driver
