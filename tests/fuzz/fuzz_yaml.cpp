// libFuzzer target: the shape-profile YAML reader (shape_profiles::parse_profile_text). Bad
// input must end in a UserError (with a message), never a crash or another exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "shape_profiles/shape_profiles.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    aotrace::shape_profiles::parse_profile_text(text, "fuzz.yaml");
  } catch (const aotrace::UserError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
  }
  return 0;
}
