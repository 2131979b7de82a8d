// entries: what to trace, and the dtype and shape of each input (DESIGN §6).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "shape_profiles/spec_sections.h"

namespace aotrace::shape_profiles::detail {

namespace {

constexpr std::string_view kEntryKeys[] = {"call", "inputs"};
constexpr std::string_view kInputKeys[] = {"type", "dtype", "shape", "value", "items", "pad", "device"};
constexpr std::string_view kTypes[] = {"tensor", "int", "float", "bool", "tuple", "list", "dict"};

const char* kInputExample =
    "write e.g. `x: {dtype: float32, shape: [batch, 784]}`, `n: {type: int, value: 3}` or "
    "`pair: {type: tuple, items: [{dtype: float32, shape: [8]}, ...]}`";

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (auto d : {ir::DType::f32, ir::DType::f16, ir::DType::bf16, ir::DType::f64, ir::DType::i64,
                 ir::DType::i32, ir::DType::i8, ir::DType::u8, ir::DType::b8})
    names.emplace_back(ir::dtype_torch_name(d));
  return names;
}

ir::DType parse_input_dtype(const Value& v) {
  std::string text = as_string(v, "write a torch dtype name such as float32");
  if (std::optional<ir::DType> dtype = ir::parse_dtype(text)) return *dtype;
  std::vector<std::string> names = dtype_names();
  std::string hint = did_you_mean(text, names);
  user_error("unknown dtype '" + text + "' in '" + v.path + "'", v.loc,
             (hint.empty() ? "" : hint + " ") + "valid dtypes are " + quoted_list(names));
}

// One shape entry: a positive integer, or the name of a dim declared under `dims:`.
DimRef parse_dim_ref(const Value& v) {
  const char* hint = "a shape entry is a positive integer (784) or a dim name declared under "
                     "`dims:` (batch)";
  DimRef ref;
  ref.loc = v.loc;
  if (is_integer(v.node)) {
    ref.value = as_integer(v, hint);
    if (ref.value <= 0)
      user_error("shape entry " + std::to_string(ref.value) + " in '" + v.path +
                     "' is not a positive integer", v.loc, hint);
    return ref;
  }
  if (!v.node.IsScalar() || !is_identifier(v.node.Scalar()))
    user_error("shape entry in '" + v.path + "' is neither a positive integer nor a dim name",
               v.loc, hint);
  ref.is_named = true;
  ref.name = v.node.Scalar();
  return ref;
}

// `value:` of a scalar input: an int, a float or a bool, as YAML writes them.
double parse_scalar_value(const Value& v, InputSpec::Kind kind) {
  const std::string hint = kind == InputSpec::Kind::Bool ? "write `value: true` or `value: false`"
                           : kind == InputSpec::Kind::Int ? "write an integer, e.g. `value: 3`"
                                                          : "write a number, e.g. `value: 0.5`";
  if (kind == InputSpec::Kind::Int) {
    const int64_t n = as_integer(v, hint);
    if (n > (int64_t{1} << 53) || n < -(int64_t{1} << 53))
      user_error("'" + v.path + "' is outside ±2^53, the integers a bundle guards exactly", v.loc, hint);
    return static_cast<double>(n);
  }
  const std::string text = v.node.IsScalar() ? v.node.Scalar() : "";
  if (kind == InputSpec::Kind::Bool) {
    if (text == "true" || text == "True") return 1;
    if (text == "false" || text == "False") return 0;
    user_error("'" + v.path + "' must be true or false, not " + kind_of(v.node), v.loc, hint);
  }
  char* end = nullptr;
  const double d = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(d))
    user_error("'" + v.path + "' must be a finite number, not " + (text.empty() ? kind_of(v.node) : "'" + text + "'"),
               v.loc, hint);
  return d;
}

// One argument: a tensor or scalar input (appended to `inputs`), or a tuple, list or dict of
// arguments. `name` is the flattened name of the bundle input ("pair.0").
ArgSpec parse_arg(const Value& value, const std::string& key, const std::string& name,
                  std::vector<InputSpec>& inputs) {
  std::vector<Field> keys = map_fields(value, kInputKeys, kInputExample);
  std::string type = "tensor";
  if (const Field* t = find_field(keys, "type")) {
    type = as_string(t->value, "write one of " + quoted_list(std::vector<std::string>(std::begin(kTypes), std::end(kTypes))));
    if (std::find(std::begin(kTypes), std::end(kTypes), type) == std::end(kTypes)) {
      std::vector<std::string> types(std::begin(kTypes), std::end(kTypes));
      std::string hint = did_you_mean(type, types);
      user_error("unknown input type '" + type + "' in '" + t->value.path + "'", t->value.loc,
                 (hint.empty() ? "" : hint + " ") + "valid types are " + quoted_list(types));
    }
  }
  // Keys that belong to another type are mistakes, not noise.
  auto refuse = [&](std::string_view k, const std::string& why) {
    if (const Field* f = find_field(keys, k))
      user_error("'" + f->value.path + "' does not apply to " + why, f->value.key_loc,
                 "remove it; " + std::string(kInputExample));
  };
  ArgSpec arg;
  arg.key = key;
  if (type == "tuple" || type == "list" || type == "dict") {
    for (std::string_view k : {"dtype", "shape", "value", "pad"}) refuse(k, "a " + type + " input");
    arg.kind = type == "tuple" ? ArgSpec::Kind::Tuple : type == "list" ? ArgSpec::Kind::List : ArgSpec::Kind::Dict;
    const Value& items = require_field(keys, value, "items",
                                       type == "dict" ? "add `items: {KEY: {dtype: float32, shape: [...]}, ...}`"
                                                      : "add `items: [{dtype: float32, shape: [...]}, ...]`").value;
    if (arg.kind == ArgSpec::Kind::Dict) {
      for (const Field& item : map_fields(items, {}, "write the dict's items as a mapping: {KEY: {dtype: ..., shape: [...]}}")) {
        require_identifier(item.key, item.value.key_loc, "dict key");
        arg.items.push_back(parse_arg(item.value, item.key, name + "." + item.key, inputs));
      }
    } else {
      std::vector<Value> list = list_items(items, "write the items as a list: [{dtype: float32, shape: [...]}, ...]");
      for (size_t i = 0; i < list.size(); ++i)
        arg.items.push_back(parse_arg(list[i], std::to_string(i), name + "." + std::to_string(i), inputs));
    }
    return arg;
  }
  refuse("items", "a " + type + " input (only tuple, list and dict have items)");
  InputSpec input;
  input.name = name;
  input.loc = value.key_loc;
  if (type == "tensor") {
    refuse("value", "a tensor input (a tensor's values are given at run time)");
    input.dtype = parse_input_dtype(
        require_field(keys, value, "dtype", "add `dtype: float32` (or another dtype)").value);
    const Value& shape =
        require_field(keys, value, "shape", "add `shape: [batch, 784]`; [] is a scalar").value;
    for (const Value& dim : list_items(shape, "write the shape as a list: [batch, 784]"))
      input.shape.push_back(parse_dim_ref(dim));
    if (const Field* device = find_field(keys, "device")) {
      const std::string text = as_string(device->value, "write `device: cpu` or `device: cuda`");
      if (text != "cpu" && text != "cuda" && text != "cuda:0")
        user_error("unknown device '" + text + "' in '" + device->value.path + "'", device->value.loc,
                   "write `device: cuda` for an input passed in GPU memory on the GPU, or `device: cpu` (the default)");
      input.on_cuda = text != "cpu";
      input.device_loc = device->value.loc;
    }
    if (const Field* pad = find_field(keys, "pad")) {
      // A number, or true/false (a mask): the value padded positions get.
      const std::string text = pad->value.node.IsScalar() ? pad->value.node.Scalar() : "";
      input.pad = text == "true" || text == "True" ? 1.0 : text == "false" || text == "False" ? 0.0
                  : parse_scalar_value(pad->value, InputSpec::Kind::Float);
      input.pad_loc = pad->value.loc;
    }
  } else {
    refuse("pad", "a Python " + type + " (only tensors with a bucketed dim are padded)");
    refuse("device", "a Python " + type + " (scalars are passed in host memory)");
    refuse("dtype", "a Python " + type + " (it is passed as a 0-d " +
                        (type == "int" ? "int64" : type == "float" ? "float64" : "bool") + " tensor)");
    refuse("shape", "a Python " + type);
    input.kind = type == "int" ? InputSpec::Kind::Int : type == "float" ? InputSpec::Kind::Float : InputSpec::Kind::Bool;
    input.dtype = type == "int" ? ir::DType::i64 : type == "float" ? ir::DType::f64 : ir::DType::b8;
    input.value = parse_scalar_value(
        require_field(keys, value, "value", "add the value the program is compiled for, e.g. `value: 3`").value,
        input.kind);
  }
  arg.kind = ArgSpec::Kind::Input;
  arg.input = static_cast<int>(inputs.size());
  inputs.push_back(std::move(input));
  return arg;
}

EntrySpec parse_entry(const Field& field) {
  require_identifier(field.key, field.value.key_loc, "entry name");
  std::vector<Field> keys =
      map_fields(field.value, kEntryKeys, "write e.g. `forward: {call: model, inputs: {...}}`");
  EntrySpec entry;
  entry.name = field.key;
  entry.loc = field.value.key_loc;
  entry.call = as_string(
      require_field(keys, field.value, "call",
                    "add `call: model`: a name (or expression) from the script to trace").value,
      "write the name of an nn.Module or function defined by the script, e.g. `call: model`");
  const Value& inputs = require_field(keys, field.value, "inputs",
                                      "add `inputs:` with one line per parameter of the call "
                                      "(`inputs: {}` when it takes none)").value;
  for (const Field& input : map_fields(inputs, {}, kInputExample)) {
    require_identifier(input.key, input.value.key_loc, "input name");
    entry.args.push_back(parse_arg(input.value, input.key, input.key, entry.inputs));
  }
  return entry;
}

}  // namespace

std::vector<EntrySpec> parse_entries(const Value& entries) {
  std::vector<Field> fields =
      map_fields(entries, {}, "write one entry per traced call, e.g. `entries: {forward: ...}`");
  if (fields.empty())
    user_error("'entries' is empty", entries.loc,
               "add at least one entry, e.g. `forward: {call: model, inputs: {...}}`");
  std::vector<EntrySpec> result;
  for (const Field& field : fields) result.push_back(parse_entry(field));
  return result;
}

}  // namespace aotrace::shape_profiles::detail
