// shape_profiles/ — the profile YAML (DESIGN §6): parse, validate, expand into profiles.
// Every error is a UserError naming file:line:col.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
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
  // `pad: 0` / `pad: true`: what fills the input where a bucketed dim is padded (required for
  // inputs with a bucketed dim, refused elsewhere).
  std::optional<double> pad;
  SourceLoc pad_loc;
  // `device: cuda`: the caller passes this tensor in GPU memory when the bundle runs on a GPU
  // (a device guard there); on the CPU, host memory as every input.
  bool on_cuda = false;
  SourceLoc device_loc;
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
  bool is_dynamic = false;          // {min, max, multiple_of[, opt]}
  ir::SymRange range;
  std::vector<int64_t> opt;         // dynamic: sizes that get static variants of their own too
  // {buckets: [...]}: `values` are the buckets, ascending, each a static variant; a call's size
  // is padded up to the smallest bucket that holds it (InputSpec::pad), its outputs sliced back.
  bool is_bucketed = false;
  SourceLoc loc;
};

// One combination of dim values: every static dim has a value; a dynamic dim either a value
// (a size specialised out of its range: 0, 1, an `opt` size) or a range, traced as a symbol.
struct Profile {
  std::string name;                      // given, or generated: "batch=8" ("default" if no dims)
  std::map<std::string, int64_t> dims;   // static dim values (and specialised dynamic ones)
  std::map<std::string, ir::SymRange> ranges;  // dynamic dims traced as symbols
  // Why the profile exists beside the declared ones, e.g. "seq=1: the range [1, 128] holds 1,
  // which gets its own static variant (broadcasting is decided per variant)"; shown by explain.
  std::vector<std::string> notes;
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
  std::vector<SourceLoc> target_locs;    // where each of `targets` is written (the document's
                                         // start for the default [cpu])
  int max_variants = 8;
  // The GPU's matmul and conv arithmetic (`options: {cuda_math: tf32}`): "f32", "tf32", "f16"
  // or "bf16" (lowering::Options::cuda_math); where it is written (none: the default).
  std::string cuda_math = "f32";
  SourceLoc cuda_math_loc;

  // The concrete shape of an input under a profile (named dims resolved); a dim traced as a
  // symbol gives its example size (example_size).
  std::vector<int64_t> concrete_shape(const InputSpec&, const Profile&) const;
  const DimSpec* find_dim(const std::string& name) const;
};

// The size the example tensors of a capture give a symbolic dim: the largest the range admits
// (golden vectors then exercise the largest buffers).
int64_t example_size(const ir::SymRange&);
// The name of a profile from its dims: "batch=8,seq=32..128" ("default" when there are none).
std::string profile_name(const Profile&, const std::vector<DimSpec>& dims);
// Splits `profile` where dynamic dim `dim` is a range: one profile per part, a part of one size
// becoming a static value. `why` is added to each new profile's notes.
std::vector<Profile> split_profile(const Profile& profile, const std::vector<DimSpec>& dims,
                                   const std::string& dim, const std::vector<ir::SymRange>& parts,
                                   const std::string& why);

ProfileSet parse_profile_file(const std::filesystem::path& yaml_path);
ProfileSet parse_profile_text(const std::string& text, const std::filesystem::path& yaml_path);

// The JSON Schema of the profile YAML, for `aotrace profiles schema` (editor completion).
std::string profile_json_schema();

}  // namespace aotrace::shape_profiles
