// driver/ — what a build step needs around a compile (DESIGN §1): the depfile that tells Make
// and Ninja when a bundle is stale, and the content-addressed compile cache that makes an
// unchanged spec recompile without running Python.
//
// Neither may fail a compile that would otherwise succeed because of the cache: a cache that
// cannot be used is a warning, and the compile goes on without it. A depfile the user asked for
// and that cannot be written is a user error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "artifacts/artifacts.h"

namespace aotrace::driver {

// ---- Depfile -------------------------------------------------------------------------------

// `target: dep1 dep2 ...` in the syntax Make and Ninja both read: spaces and '#' escaped with a
// backslash, '$' doubled, one dependency per continued line.
std::string depfile_text(const std::filesystem::path& target, const std::vector<std::filesystem::path>& deps);
// user_error (what, where, how to fix) unless `depfile` can be written: its folder exists and is
// writable, and it is not a folder. Checked before any work, so a typo costs no compile.
void check_depfile_writable(const std::filesystem::path& depfile);
// Writes depfile_text atomically (a temporary next to it, renamed into place).
void write_depfile(const std::filesystem::path& depfile, const std::filesystem::path& target,
                   const std::vector<std::filesystem::path>& deps);
// The same for any file a compile writes beside the bundle (`what`: "depfile", "report"; `flag`:
// the option that names it, for the hint).
void check_output_file(const std::filesystem::path& path, const std::string& what, const std::string& flag);
void write_output_file(const std::filesystem::path& path, const std::string& text, const std::string& what,
                       const std::string& flag);

// ---- Compile cache -------------------------------------------------------------------------

// $XDG_CACHE_HOME/aotrace, else ~/.cache/aotrace; empty when neither variable is set.
std::filesystem::path default_cache_dir();

// 128-bit XXH3 of `bytes`, as 32 hex digits: the cache's keys.
std::string hash_hex(std::string_view bytes);
// hash_hex of a file's content; nullopt when it cannot be read.
std::optional<std::string> file_hash_hex(const std::filesystem::path& file);

// A directory of finished bundles, content-addressed in two steps, as ccache's direct mode:
//
//   manifests/<base key>   the files the last compile with this base key read (JSON)
//   bundles/<key>.aotc     one bundle's files, key = hash(base key, each listed file's path and
//                          content hash), with a trailing XXH3 checked on every read
//   objects/<key>.o        one kernel module's object, key = hash(aotrace, LLVM, target, IR):
//                          after an edit, the entries whose kernels did not change skip LLVM
//
// The base key covers what is known before Python runs (aotrace's identity, the options, the
// target, the spec's path); the files a compile reads are only known after it, hence the
// manifest. Writes go to tmp/ and are renamed into place, so readers see whole entries only and
// two processes storing the same entry both succeed. Entries are evicted oldest-used first
// (by mtime, refreshed on every hit) when the total passes the size bound.
class CompileCache {
 public:
  // The cache at `dir`, created if needed; nullopt with the reason in `why` when it cannot be
  // created or written.
  static std::optional<CompileCache> open(const std::filesystem::path& dir, uint64_t max_bytes, std::string* why);

  struct Entry {
    std::vector<std::filesystem::path> deps;  // the files the compile read (for the depfile)
    std::vector<artifacts::BundleFile> files;
    std::string summary;  // what the compile said it built, to say it again on a hit
  };
  // The stored bundle for `base_key` whose listed files all still have the contents they had;
  // nullopt on a miss or a damaged entry.
  std::optional<Entry> lookup(const std::string& base_key) const;
  // Stores a compile's bundle and the files it read; false with the reason in `why` when it could not (the compile
  // still succeeded). Evicts old entries past the size bound.
  bool store(const std::string& base_key, const Entry& entry, std::string* why) const;
  // Compiled kernel objects (objects/<key>.o, the entry format with one file), shared by every
  // compile and evicted with the bundles: `key` names what the object was compiled from.
  std::optional<std::string> lookup_object(const std::string& key) const;
  bool store_object(const std::string& key, const std::string& object, std::string* why) const;

  const std::filesystem::path& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  CompileCache(std::filesystem::path dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  std::filesystem::path dir_;  // the versioned folder inside the user's cache dir
  uint64_t max_bytes_;
};

// The key of a compile: the files it read, their content hashes, and `base_key`; nullopt when
// one of them cannot be read.
std::optional<std::string> compile_key(const std::string& base_key, const std::vector<std::filesystem::path>& deps);

}  // namespace aotrace::driver
