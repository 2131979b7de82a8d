// libFuzzer target: the bundle reader (bundle.fb parsing, verification and validation).
// The input is the FlatBuffer of a bundle.fb; the checksum footer is appended here, so that
// mutations reach the verifier and the consistency checks instead of stopping at the checksum
// (whose every-byte behaviour tests/runtime/integrity_test.cpp covers exhaustively).
#include <cstddef>
#include <cstdint>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bundle_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);
  uint64_t hash = XXH3_64bits(data, size);
  const char magic[8] = {'A', 'O', 'T', 'B', 'X', 'X', 'H', '3'};
  buf.insert(buf.end(), magic, magic + 8);
  for (int i = 0; i < 8; ++i) buf.push_back(static_cast<uint8_t>(hash >> (8 * i)));
  auto r = aotrace::rt::parse_bundle_fb("fuzz", std::move(buf));
  if (!r.ok() && r.status().message().empty()) __builtin_trap();  // every error says why
  return 0;
}
