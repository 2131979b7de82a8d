// entries: what to trace, and the dtype and shape of each input (DESIGN §6).
#include <algorithm>

#include "shape_profiles/spec_sections.h"

namespace aotrace::shape_profiles::detail {

namespace {

constexpr std::string_view kEntryKeys[] = {"call", "inputs"};
constexpr std::string_view kInputKeys[] = {"dtype", "shape"};

const char* kInputExample = "write e.g. `x: {dtype: float32, shape: [batch, 784]}`";

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

InputSpec parse_input(const Field& field) {
  require_identifier(field.key, field.value.key_loc, "input name");
  std::vector<Field> keys = map_fields(field.value, kInputKeys, kInputExample);
  InputSpec input;
  input.name = field.key;
  input.loc = field.value.key_loc;
  input.dtype = parse_input_dtype(
      require_field(keys, field.value, "dtype", "add `dtype: float32` (or another dtype)").value);
  const Value& shape =
      require_field(keys, field.value, "shape", "add `shape: [batch, 784]`; [] is a scalar").value;
  for (const Value& dim : list_items(shape, "write the shape as a list: [batch, 784]"))
    input.shape.push_back(parse_dim_ref(dim));
  return input;
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
  for (const Field& input : map_fields(inputs, {}, kInputExample))
    entry.inputs.push_back(parse_input(input));
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
