// A hand-built BundleSpec for the runtime tests: entry 'forward', input x f32[B, 4], outputs
// (2 * (x + bias), x + bias), variants v0 (batch=1) and v1 (batch=2), kernels in
// test_kernels.c. Plus helpers for files and temporary directories.
#pragma once

#include <filesystem>
#include <string>

#include "artifacts/artifacts.h"

namespace aotrace::testing {

artifacts::BundleSpec tiny_bundle_spec();
// Kernels that call ctx->parallel_for, z = x + y for inputs x, y: entry 'add' with variants
// v0 (f32[16], a serial kernel) and v1 (f32[100003], one parallel loop); entry 'add_nested'
// (f32[64, 1000], a parallel loop over rows whose body runs a parallel loop over columns).
artifacts::BundleSpec parallel_bundle_spec();
std::filesystem::path fresh_temp_dir(const std::string& name);  // empty, under the test tmp
std::string read_bytes(const std::filesystem::path&);
void write_bytes(const std::filesystem::path&, const std::string&);
// bundle.fb without / with its checksum footer (format 1.1), for tests that edit the FlatBuffer.
std::string without_footer(const std::string& bundle_fb);
std::string with_footer(const std::string& flatbuffer);

}  // namespace aotrace::testing
