// dims and profiles: the sizes a bundle is specialised for (DESIGN §6).
//   dims:     batch: [1, 8, 32]  (static: one specialisation per value)
//             seq: {min: 16, max: 512, multiple_of: 8}  (dynamic: one symbolic dim)
//             seq: {buckets: [32, 64, 128]}  (static per bucket; calls padded up to a bucket)
//   profiles: named combinations of static dim values; default: every combination.
#include <algorithm>
#include <set>

#include "shape_profiles/spec_sections.h"

namespace aotrace::shape_profiles::detail {

namespace {

constexpr std::string_view kRangeKeys[] = {"min", "max", "multiple_of", "opt"};
const char* kDimExample = "write `batch: [1, 8, 32]` (static) or "
                          "`seq: {min: 16, max: 512, multiple_of: 8}` (dynamic)";

std::string range_str(const ir::SymRange& r) {
  std::string s = "[" + std::to_string(r.min) + ", " + std::to_string(r.max) + "]";
  if (r.multiple_of > 1) s += " (multiples of " + std::to_string(r.multiple_of) + ")";
  return s;
}

std::string values_str(const std::vector<int64_t>& values) {
  std::string s;
  for (int64_t v : values) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return "[" + s + "]";
}

int64_t positive_integer(const Value& v, const std::string& what) {
  int64_t value = as_integer(v, kDimExample);
  if (value <= 0)
    user_error(what + " must be a positive integer, not " + std::to_string(value), v.loc,
               kDimExample);
  return value;
}

void parse_static_values(const Value& v, DimSpec& dim) {
  std::vector<Value> items = v.node.IsSequence() ? list_items(v, kDimExample)
                                                 : std::vector<Value>{v};
  if (items.empty())
    user_error("static dim '" + dim.name + "' has no values", v.loc,
               "list the sizes to specialise for, e.g. `" + dim.name + ": [1, 8, 32]`");
  for (const Value& item : items) {
    int64_t value = positive_integer(item, "a value of dim '" + dim.name + "'");
    if (std::find(dim.values.begin(), dim.values.end(), value) != dim.values.end())
      user_error("dim '" + dim.name + "' lists " + std::to_string(value) + " twice", item.loc,
                 "each value gives one specialisation; remove the duplicate");
    dim.values.push_back(value);
  }
}

void parse_range(const Value& v, DimSpec& dim) {
  std::vector<Field> keys = map_fields(v, kRangeKeys, kDimExample);
  dim.is_dynamic = true;
  if (const Field* min = find_field(keys, "min")) {
    dim.range.min = as_integer(min->value, kDimExample);
    if (dim.range.min < 0)
      user_error("'min' of dim '" + dim.name + "' must be 0 or more, not " + std::to_string(dim.range.min),
                 min->value.loc, kDimExample);
  }
  const Field& max = require_field(keys, v, "max", "add `max: N`, the largest size allowed");
  dim.range.max = positive_integer(max.value, "'max' of dim '" + dim.name + "'");
  if (dim.range.min > dim.range.max)
    user_error("dim '" + dim.name + "' has min " + std::to_string(dim.range.min) + " > max " +
                   std::to_string(dim.range.max), max.value.loc, "swap min and max");
  if (const Field* multiple = find_field(keys, "multiple_of")) {
    dim.range.multiple_of = positive_integer(multiple->value, "'multiple_of' of dim '" + dim.name + "'");
    int64_t m = dim.range.multiple_of;
    int64_t first = (dim.range.min + m - 1) / m * m;
    if (first > dim.range.max)
      user_error("no size in [" + std::to_string(dim.range.min) + ", " +
                     std::to_string(dim.range.max) + "] is a multiple of " + std::to_string(m),
                 multiple->value.loc, "widen the range or lower 'multiple_of'");
  }
  const Field* opt = find_field(keys, "opt");
  if (!opt) return;
  const std::string hint = "list sizes inside the range, e.g. `opt: [" + std::to_string(dim.range.max) + "]`";
  std::vector<Value> items = opt->value.node.IsSequence() ? list_items(opt->value, hint) : std::vector<Value>{opt->value};
  for (const Value& item : items) {
    int64_t size = as_integer(item, hint);
    if (!ir::in_range(dim.range, size))
      user_error("opt size " + std::to_string(size) + " of dim '" + dim.name + "' is not in its range " +
                     range_str(dim.range), item.loc, hint);
    if (std::find(dim.opt.begin(), dim.opt.end(), size) != dim.opt.end())
      user_error("dim '" + dim.name + "' lists opt size " + std::to_string(size) + " twice", item.loc,
                 "remove the duplicate");
    dim.opt.push_back(size);
  }
}

// `seq: {buckets: [32, 64, 128]}`: one static variant per bucket; a call's size is padded up to
// the smallest bucket that holds it (the inputs' `pad:` values), the outputs sliced back.
void parse_buckets(const Value& v, DimSpec& dim) {
  constexpr std::string_view kBucketKeys[] = {"buckets"};
  const char* example = "write e.g. `seq: {buckets: [32, 64, 128]}`, and `pad:` on each input with this dim";
  std::vector<Field> keys = map_fields(v, kBucketKeys, example);
  const Value& list = require_field(keys, v, "buckets", example).value;
  parse_static_values(list, dim);
  for (size_t i = 1; i < dim.values.size(); ++i)
    if (dim.values[i] <= dim.values[i - 1])
      user_error("the buckets of dim '" + dim.name + "' must grow: " + values_str(dim.values), list.loc,
                 "list them from the smallest size to the largest");
  dim.is_bucketed = true;
}

DimSpec parse_dim(const Field& field) {
  require_identifier(field.key, field.value.key_loc, "dim name");
  if (field.key == "name")
    user_error("a dim may not be called 'name'", field.value.key_loc,
               "'name' names a profile under `profiles:`; rename the dim");
  DimSpec dim;
  dim.name = field.key;
  dim.loc = field.value.key_loc;
  if (field.value.node.IsMap() && field.value.node["buckets"])
    parse_buckets(field.value, dim);
  else if (field.value.node.IsMap())
    parse_range(field.value, dim);
  else if (field.value.node.IsSequence() || field.value.node.IsScalar())
    parse_static_values(field.value, dim);
  else
    user_error("dim '" + dim.name + "' must be a list of sizes or a range, not " +
                   kind_of(field.value.node), field.value.loc, kDimExample);
  return dim;
}

const DimSpec* find_dim(const std::vector<DimSpec>& dims, std::string_view name) {
  for (const DimSpec& d : dims)
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<std::string> dim_names(const std::vector<DimSpec>& dims) {
  std::vector<std::string> names;
  for (const DimSpec& d : dims) names.push_back(d.name);
  return names;
}

std::string generated_name(const std::map<std::string, int64_t>& values,
                           const std::vector<DimSpec>& dims) {
  Profile p;
  p.dims = values;
  return profile_name(p, dims);
}

void set_profile_dim(const Field& field, const std::vector<DimSpec>& dims, Profile& profile) {
  const DimSpec* dim = find_dim(dims, field.key);
  if (!dim) {
    std::vector<std::string> names = dim_names(dims);
    std::string hint = did_you_mean(field.key, names);
    user_error("profile sets '" + field.key + "', which is not a declared dim",
               field.value.key_loc,
               hint.empty() ? "a profile holds `name` and declared dims (" +
                                  quoted_list(names) + ")"
                            : hint);
  }
  if (dim->is_dynamic)
    user_error("dim '" + dim->name + "' is dynamic; a profile fixes static dims only",
               field.value.key_loc, "remove it from the profile, or declare it with a list of sizes");
  int64_t value = as_integer(field.value, "give one of " + values_str(dim->values));
  if (std::find(dim->values.begin(), dim->values.end(), value) == dim->values.end())
    user_error(dim->name + "=" + std::to_string(value) + " is not one of the declared values " +
                   values_str(dim->values), field.value.loc,
               "use a declared value, or add " + std::to_string(value) + " to `dims: " +
                   dim->name + "`");
  profile.dims[dim->name] = value;
}

Profile parse_profile(const Value& v, const std::vector<DimSpec>& dims) {
  std::vector<Field> fields =
      map_fields(v, {}, "write a profile as `{name: online, batch: 1}`");
  Profile profile;
  profile.loc = v.loc;
  for (const Field& field : fields) {
    if (field.key == "name")
      profile.name = as_string(field.value, "write `name: online`");
    else
      set_profile_dim(field, dims, profile);
  }
  if (profile.name.empty()) profile.name = generated_name(profile.dims, dims);
  for (const DimSpec& d : dims)
    if (!d.is_dynamic && !profile.dims.count(d.name))
      user_error("profile '" + profile.name + "' gives no value for dim '" +
                     d.name + "'", v.loc,
                 "add `" + d.name + ": " + std::to_string(d.values.front()) + "` (one of " +
                     values_str(d.values) + ")");
  return profile;
}

}  // namespace

std::vector<DimSpec> parse_dims(const Value& dims) {
  std::vector<DimSpec> result;
  for (const Field& field : map_fields(dims, {}, kDimExample)) result.push_back(parse_dim(field));
  return result;
}

void check_dim_uses(const std::vector<EntrySpec>& entries, const std::vector<DimSpec>& dims,
                    const SourceLoc& dims_loc) {
  std::set<std::string> used;
  std::vector<std::string> names = dim_names(dims);
  for (const EntrySpec& entry : entries) {
    for (const InputSpec& input : entry.inputs) {
      for (const DimRef& ref : input.shape) {
        if (!ref.is_named) continue;
        used.insert(ref.name);
        if (find_dim(dims, ref.name)) continue;
        std::string hint = did_you_mean(ref.name, names);
        user_error("input '" + input.name + "' of entry '" + entry.name + "' uses dim '" +
                       ref.name + "', which is not declared under 'dims'", ref.loc,
                   hint.empty() ? "declare it, e.g. `dims: {" + ref.name + ": [1, 8]}`" : hint);
      }
      // Padding to a bucket needs the value that fills the input; elsewhere `pad` means nothing.
      const DimRef* bucketed = nullptr;
      for (const DimRef& ref : input.shape)
        if (const DimSpec* d = ref.is_named ? find_dim(dims, ref.name) : nullptr; d && d->is_bucketed) bucketed = &ref;
      if (bucketed && !input.pad)
        user_error("input '" + input.name + "' of entry '" + entry.name + "' has the bucketed dim '" + bucketed->name +
                       "' but no `pad:` value", input.loc,
                   "say what fills it up to the bucket: `pad: 0` for token ids and values the model masks, "
                   "`pad: true` for a key-padding mask (True = ignore)");
      if (!bucketed && input.pad)
        user_error("input '" + input.name + "' of entry '" + entry.name + "' has `pad:` but no bucketed dim", input.pad_loc,
                   "remove it: only inputs with a dim declared as `{buckets: [...]}` are padded");
    }
  }
  for (const DimSpec& d : dims)
    if (!used.count(d.name))
      user_error("dim '" + d.name + "' is declared but no input shape uses it", d.loc,
                 "use it in an input's shape, or remove it (it would multiply the variants)");
}

std::vector<Profile> parse_profiles(const Value& profiles, const std::vector<DimSpec>& dims) {
  std::vector<Value> items =
      list_items(profiles, "write `profiles: [{name: online, batch: 1}, ...]`");
  if (items.empty())
    user_error("'profiles' is empty", profiles.loc,
               "list at least one profile, or remove `profiles:` to get every combination");
  std::vector<Profile> result;
  for (const Value& item : items) {
    Profile profile = parse_profile(item, dims);
    const YAML::Node& node = item.node;
    YAML::Node name = node["name"];
    SourceLoc name_loc = name ? node_loc(name, item.loc.file) : profile.loc;
    for (const Profile& earlier : result)
      if (earlier.name == profile.name)
        user_error("duplicate profile name '" + profile.name + "'", name_loc,
                   "the earlier one is at " + earlier.loc.str() + "; give each profile its own name");
    result.push_back(std::move(profile));
  }
  return result;
}

std::vector<Profile> default_profiles(const std::vector<DimSpec>& dims, const SourceLoc& loc) {
  std::vector<std::map<std::string, int64_t>> combinations(1);
  for (const DimSpec& d : dims) {
    if (d.is_dynamic) continue;
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& partial : combinations) {
      for (int64_t value : d.values) {
        next.push_back(partial);
        next.back()[d.name] = value;
      }
    }
    combinations = std::move(next);
  }
  std::vector<Profile> result;
  for (auto& values : combinations)
    result.push_back(Profile{generated_name(values, dims), std::move(values), {}, {}, loc});
  return result;
}

std::vector<Profile> specialise_dynamic_dims(std::vector<Profile> profiles, const std::vector<DimSpec>& dims) {
  for (const DimSpec& d : dims) {
    if (!d.is_dynamic) continue;
    std::vector<Profile> next;
    for (Profile& p : profiles) {
      const bool named = p.name != profile_name(p, dims);
      p.ranges[d.name] = d.range;
      // The static sizes first: 0 and 1 as Dynamo specialises them, then the opt sizes.
      std::vector<std::pair<int64_t, std::string>> sizes;
      for (int64_t small : {int64_t{0}, int64_t{1}})
        if (ir::in_range(d.range, small) && d.range.max > small)
          sizes.push_back({small, d.name + "=" + std::to_string(small) + ": the range " + range_str(d.range) +
                                      " holds " + std::to_string(small) +
                                      ", which gets its own static variant (size-" + std::to_string(small) +
                                      " broadcasting is decided per variant)"});
      for (int64_t o : d.opt)
        if (o > 1) sizes.push_back({o, d.name + "=" + std::to_string(o) + ": an opt size of the range " + range_str(d.range)});
      ir::SymRange rest = d.range;
      while (rest.min <= 1 && rest.min < rest.max) ++rest.min;  // a symbol is never 0 or 1
      for (const auto& [size, why] : sizes) {
        Profile s = p;
        s.ranges.erase(d.name);
        s.dims[d.name] = size;
        s.notes.push_back(why);
        if (!named) s.name = profile_name(s, dims);
        else s.name = p.name + "/" + d.name + "=" + std::to_string(size);
        next.push_back(std::move(s));
      }
      // What is left of the range: a symbol, or a static size when one size remains.
      int64_t m = std::max<int64_t>(1, rest.multiple_of);
      int64_t first = (rest.min + m - 1) / m * m, last = rest.max / m * m;
      if (first > last) continue;
      if (first == last) {
        p.ranges.erase(d.name);
        p.dims[d.name] = first;
      } else {
        p.ranges[d.name] = ir::SymRange{first, last, m};
      }
      if (!named) p.name = profile_name(p, dims);
      next.push_back(std::move(p));
    }
    profiles = std::move(next);
  }
  return profiles;
}

}  // namespace aotrace::shape_profiles::detail

namespace aotrace::shape_profiles {

int64_t example_size(const ir::SymRange& r) {
  int64_t m = std::max<int64_t>(1, r.multiple_of);
  return r.max / m * m;
}

std::string profile_name(const Profile& p, const std::vector<DimSpec>& dims) {
  std::string name;
  for (const DimSpec& d : dims) {
    if (auto it = p.dims.find(d.name); it != p.dims.end())
      name += (name.empty() ? "" : ",") + d.name + "=" + std::to_string(it->second);
    else if (auto r = p.ranges.find(d.name); r != p.ranges.end())
      name += (name.empty() ? "" : ",") + d.name + "=" + std::to_string(r->second.min) + ".." +
              std::to_string(r->second.max);
  }
  return name.empty() ? "default" : name;
}

std::vector<Profile> split_profile(const Profile& profile, const std::vector<DimSpec>& dims,
                                   const std::string& dim, const std::vector<ir::SymRange>& parts,
                                   const std::string& why) {
  const bool named = profile.name != profile_name(profile, dims);
  std::vector<Profile> out;
  for (const ir::SymRange& part : parts) {
    Profile p = profile;
    int64_t m = std::max<int64_t>(1, part.multiple_of);
    int64_t first = (part.min + m - 1) / m * m, last = part.max / m * m;
    if (first > last) continue;
    if (first == last) {
      p.ranges.erase(dim);
      p.dims[dim] = first;
    } else {
      p.ranges[dim] = ir::SymRange{first, last, m};
    }
    std::string part_name = first == last ? std::to_string(first) : std::to_string(first) + ".." + std::to_string(last);
    p.notes.push_back(dim + "=" + part_name + ": " + why);
    p.name = named ? profile.name + "/" + dim + "=" + part_name : profile_name(p, dims);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace aotrace::shape_profiles
