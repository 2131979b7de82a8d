// shape_profiles/ — the profile YAML (DESIGN §6): parse, validate, expand into profiles.
// Every error is a UserError naming file:line:col.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace aotrace::shape_profiles {

// A dim of an input: a literal size or the name of a dim declared under `dims:`.
struct DimRef {
  bool is_named = false;
  int64_t value = 0;     // literal
  std::string name;      // named
  SourceLoc loc;
};

// One input of the bundle: a tensor, or a Python int, float or bool the program is compiled
// for (passed to the runtime as a 0-d int64, float64 or bool tensor, and guarded to equal it).
struct InputSpec {
  enum class Kind : uint8_t { Tensor, Int, Float, Bool };
  Kind kind = Kind::Tensor;
  std::string name;                 // "x"; an item of a container argument: "pair.0", "feats.mask"
  ir::DType dtype = ir::DType::f32; // scalars: int64, float64, bool
  std::vector<DimRef> shape;        // scalars: []
  double value = 0;                 // scalars: the value
  SourceLoc loc;
  bool is_scalar() const { return kind != Kind::Tensor; }
};

// How the call's arguments are built from the inputs: one input, or a tuple, list or dict of
// arguments (`{type: tuple, items: [...]}`), flattened depth first into EntrySpec::inputs.
struct ArgSpec {
  enum class Kind : uint8_t { Input, Tuple, List, Dict };
  Kind kind = Kind::Input;
  std::string key;                  // parameter name (top level) or dict key
  int input = -1;                   // Input: index into EntrySpec::inputs
  std::vector<ArgSpec> items;
};

struct EntrySpec {
  std::string name;                 // entry name in the bundle
  std::string call;                 // expression evaluated in the script's namespace
  std::vector<InputSpec> inputs;    // the leaves of `args`, depth first: the bundle's inputs
  std::vector<ArgSpec> args;        // in the call's parameter order
  SourceLoc loc;
};

struct DimSpec {
  std::string name;
  std::vector<int64_t> values;      // static: one specialisation per value
  bool is_dynamic = false;          // {min, max, multiple_of}
  ir::SymRange range;
  SourceLoc loc;
};

// One concrete combination of dim values.
struct Profile {
  std::string name;                      // given, or generated: "batch=8" ("default" if no dims)
  std::map<std::string, int64_t> dims;   // static dim values
  SourceLoc loc;
};

struct ProfileSet {
  std::filesystem::path yaml_path;
  int version = 1;
  std::string name;                      // bundle name (default: script stem)
  std::filesystem::path script;          // absolute
  std::vector<EntrySpec> entries;
  std::vector<DimSpec> dims;
  std::vector<Profile> profiles;         // expanded: named ones, or every combination
  std::vector<std::string> targets;      // "cpu", "cuda"
  int max_variants = 8;

  // The concrete shape of an input under a profile (named dims resolved).
  std::vector<int64_t> concrete_shape(const InputSpec&, const Profile&) const;
};

ProfileSet parse_profile_file(const std::filesystem::path& yaml_path);
ProfileSet parse_profile_text(const std::string& text, const std::filesystem::path& yaml_path);

// The JSON Schema of the profile YAML, for `aotrace profiles schema` (editor completion).
std::string profile_json_schema();

}  // namespace aotrace::shape_profiles
