// Private to artifacts/: what writer.cpp hands to the bundle.fb builder (writer_schema.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artifacts/artifacts.h"

namespace aotrace::artifacts {

// bundle.fb format version written by this compiler (artifacts/COMPATIBILITY.md).
constexpr uint32_t kBundleFormatMajor = 1;
constexpr uint32_t kBundleFormatMinor = 0;

struct FileRecord {
  std::string path;  // relative to the bundle, '/' separated
  uint64_t size = 0;
  uint64_t xxh3 = 0;
};

struct WeightPlacement {
  uint64_t offset = 0;  // in weights.bin
  uint64_t size = 0;
};

// Serialises the table of contents. `files` sorted by path; `placements` parallel to
// spec.weights; `cpu_library` the bundle-relative path of the kernels ("" when none).
std::vector<uint8_t> build_bundle_fb(const BundleSpec& spec, const std::vector<FileRecord>& files,
                                     const std::vector<WeightPlacement>& placements,
                                     const std::string& cpu_library);

}  // namespace aotrace::artifacts
