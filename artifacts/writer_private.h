// Private to artifacts/: what writer.cpp hands to the bundle.fb builder (writer_schema.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artifacts/artifacts.h"

namespace aotrace::artifacts {

// bundle.fb format version written by this compiler (artifacts/COMPATIBILITY.md).
constexpr uint32_t kBundleFormatMajor = 1;
constexpr uint32_t kBundleFormatMinor = 9;

struct FileRecord {
  std::string path;  // relative to the bundle, '/' separated
  uint64_t size = 0;
  uint64_t xxh3 = 0;
};

struct WeightPlacement {
  uint64_t offset = 0;  // in weights.bin
  uint64_t size = 0;
};

// bundle.fb ends with a footer from format 1.1 on: these 8 bytes, then XXH3-64 (little-endian)
// of everything before the footer, so that any change to bundle.fb is detected at open.
constexpr char kBundleFooterMagic[8] = {'A', 'O', 'T', 'B', 'X', 'X', 'H', '3'};

// Where golden pair `k` of a variant keeps input/output `i` ("in" or "out").
inline std::string golden_path(const std::string& entry, const std::string& variant, size_t k,
                               const char* role, size_t i) {
  return "golden/" + entry + "." + variant + "." + std::to_string(k) + "." + role +
         std::to_string(i) + ".npy";
}

// Where a faster CPU library of the bundle is written.
inline std::string faster_cpu_library_path(const std::string& triple, const std::string& cpu) {
  return "cpu/" + triple + "." + cpu + ".so";
}

// Where a CUDA image of the bundle is written: "cuda/sm_90.cubin", "cuda/sm_80.ptx".
inline std::string cuda_image_path(const CudaImageSpec& image) {
  return "cuda/" + image.arch + (image.ptx ? ".ptx" : ".cubin");
}

// Serialises the table of contents. `files` sorted by path; `placements` parallel to
// spec.weights; `cpu_library` the bundle-relative path of the kernels ("" when none).
std::vector<uint8_t> build_bundle_fb(const BundleSpec& spec, const std::vector<FileRecord>& files,
                                     const std::vector<WeightPlacement>& placements,
                                     const std::string& cpu_library);

}  // namespace aotrace::artifacts
