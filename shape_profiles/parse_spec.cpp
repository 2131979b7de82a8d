// The profile YAML's top level (DESIGN §6): version, name, script, targets, options, and the
// order in which the sections are read and cross-checked.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "shape_profiles/spec_sections.h"

namespace aotrace::shape_profiles {

using namespace detail;

namespace {

constexpr std::string_view kTopKeys[] = {"version", "name",     "script",  "entries",
                                         "dims",    "profiles", "targets", "options"};
constexpr std::string_view kOptionKeys[] = {"max_variants", "cuda_math"};
const std::vector<std::string> kTargets = {"cpu", "cuda"};
const std::vector<std::string> kCudaMaths = {"f32", "tf32", "f16", "bf16"};

const char* kTopExample =
    "a profile starts with `version: 1`, `script: model.py` and `entries:` (see DESIGN §6)";

int parse_version(const Value& v) {
  int64_t version = as_integer(v, "write `version: 1`");
  if (version != 1)
    user_error("unsupported profile version " + std::to_string(version), v.loc,
               "this aotrace reads `version: 1`");
  return 1;
}

std::filesystem::path parse_script(const Value& v, const std::filesystem::path& yaml_path) {
  std::string text = as_string(v, "write the Python file to trace, e.g. `script: model.py`");
  std::filesystem::path folder = std::filesystem::absolute(yaml_path).parent_path();
  std::filesystem::path script = (folder / text).lexically_normal();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec))
    user_error("script '" + text + "' not found", v.loc,
               "looked for " + script.string() + "; `script` is relative to the YAML file's folder");
  return script;
}

std::string parse_bundle_name(const Value& v) {
  std::string name = as_string(v, "write `name: mlp`");
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      user_error("bundle name '" + name + "' has the character '" + std::string(1, c) + "'",
                 v.loc, "the name becomes a file name: use letters, digits, '_', '-' and '.'");
  return name;
}

std::vector<std::string> parse_targets(const Value& v, std::vector<SourceLoc>* locs) {
  std::vector<Value> items = list_items(v, "write `targets: [cpu]` or `targets: [cpu, cuda]`");
  if (items.empty())
    user_error("'targets' is empty", v.loc, "list at least one of 'cpu', 'cuda'");
  std::vector<std::string> targets;
  for (const Value& item : items) {
    std::string target = as_string(item, "a target is 'cpu' or 'cuda'");
    if (std::find(kTargets.begin(), kTargets.end(), target) == kTargets.end()) {
      std::string hint = did_you_mean(target, kTargets);
      user_error("unknown target '" + target + "'", item.loc,
                 (hint.empty() ? "" : hint + " ") + "targets are " + quoted_list(kTargets));
    }
    if (std::find(targets.begin(), targets.end(), target) != targets.end())
      user_error("target '" + target + "' is listed twice", item.loc, "remove the duplicate");
    targets.push_back(target);
    locs->push_back(item.loc);
  }
  return targets;
}

void parse_options(const Value& options, ProfileSet& set) {
  std::vector<Field> fields =
      map_fields(options, kOptionKeys, "write `options: {max_variants: 8}` (or `cuda_math: tf32`, with the cuda target)");
  if (const Field* field = find_field(fields, "max_variants")) {
    int64_t n = as_integer(field->value, "write `max_variants: 8`");
    if (n < 1)
      user_error("max_variants must be at least 1 (got " + std::to_string(n) + ")",
                 field->value.loc, "it bounds how many specialisations one bundle may hold");
    if (n > 1'000'000)
      user_error("max_variants " + std::to_string(n) + " is too large", field->value.loc,
                 "keep it at most 1000000");
    set.max_variants = static_cast<int>(n);
  }
  if (const Field* field = find_field(fields, "cuda_math")) {
    std::string math = as_string(field->value, "write `cuda_math: tf32` (or f32, f16, bf16)");
    if (std::find(kCudaMaths.begin(), kCudaMaths.end(), math) == kCudaMaths.end()) {
      std::string hint = did_you_mean(math, kCudaMaths);
      user_error("unknown cuda_math '" + math + "'", field->value.loc,
                 (hint.empty() ? "" : hint + " ") + "cuda_math is f32 (FMAs), or tensor cores on operands rounded to "
                 "tf32, f16 or bf16");
    }
    if (std::find(set.targets.begin(), set.targets.end(), "cuda") == set.targets.end())
      user_error("cuda_math is set, but the spec's targets have no cuda", field->value.loc,
                 "add cuda to the targets (`targets: [cpu, cuda]`), or drop cuda_math");
    set.cuda_math = math;
    set.cuda_math_loc = field->value.loc;
  }
}

}  // namespace

std::vector<int64_t> ProfileSet::concrete_shape(const InputSpec& input,
                                                const Profile& profile) const {
  std::vector<int64_t> shape;
  for (const DimRef& ref : input.shape) {
    if (!ref.is_named) {
      shape.push_back(ref.value);
      continue;
    }
    if (auto it = profile.dims.find(ref.name); it != profile.dims.end()) {
      shape.push_back(it->second);
      continue;
    }
    if (auto it = profile.ranges.find(ref.name); it != profile.ranges.end()) {
      shape.push_back(example_size(it->second));
      continue;
    }
    internal_error("profile '" + profile.name + "' has no value for dim '" + ref.name + "'");
  }
  return shape;
}

const DimSpec* ProfileSet::find_dim(const std::string& name) const {
  for (const DimSpec& d : dims)
    if (d.name == name) return &d;
  return nullptr;
}

ProfileSet parse_profile_text(const std::string& text, const std::filesystem::path& yaml_path) {
  Value top = load_document(text, yaml_path.string());
  if (top.node.IsNull())
    user_error("the profile is empty", top.loc, kTopExample);
  std::vector<Field> fields = map_fields(top, kTopKeys, kTopExample);

  ProfileSet set;
  set.yaml_path = yaml_path;
  set.version = parse_version(require_field(fields, top, "version", "add `version: 1`").value);
  set.script = parse_script(
      require_field(fields, top, "script", "add `script: model.py`, the Python file to trace").value,
      yaml_path);
  const Field* name = find_field(fields, "name");
  set.name = name ? parse_bundle_name(name->value) : set.script.stem().string();
  set.entries = parse_entries(
      require_field(fields, top, "entries", "add `entries:` with the calls to trace").value);

  const Field* dims = find_field(fields, "dims");
  if (dims) set.dims = parse_dims(dims->value);
  check_dim_uses(set.entries, set.dims, dims ? dims->value.key_loc : top.loc);

  const Field* profiles = find_field(fields, "profiles");
  set.profiles = profiles ? parse_profiles(profiles->value, set.dims)
                          : default_profiles(set.dims, dims ? dims->value.key_loc : top.loc);
  set.profiles = specialise_dynamic_dims(std::move(set.profiles), set.dims);
  const Field* targets = find_field(fields, "targets");
  set.targets = targets ? parse_targets(targets->value, &set.target_locs) : std::vector<std::string>{"cpu"};
  if (!targets) set.target_locs = {top.loc};
  if (std::find(set.targets.begin(), set.targets.end(), "cuda") == set.targets.end())
    for (const EntrySpec& e : set.entries)
      for (const InputSpec& in : e.inputs)
        if (in.on_cuda)
          user_error("input '" + in.name + "' of entry '" + e.name + "' is declared `device: cuda`, but the spec's "
                     "targets have no cuda",
                     in.device_loc, "add cuda to the targets (`targets: [cpu, cuda]`), or drop `device: cuda`");
  if (const Field* options = find_field(fields, "options")) parse_options(options->value, set);
  return set;
}

ProfileSet parse_profile_file(const std::filesystem::path& yaml_path) {
  std::ifstream in(yaml_path, std::ios::binary);
  if (!in)
    user_error("cannot read profile '" + yaml_path.string() + "'", file_loc(yaml_path.string(), 0, 0),
               "check that the file exists and is readable");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_profile_text(text.str(), yaml_path);
}

}  // namespace aotrace::shape_profiles
