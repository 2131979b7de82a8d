// shape_profiles/ private: reading yaml-cpp nodes with locations, for user-facing errors.
//
// A Value is a node plus where it is (file:line:col, 1-based) and its dotted path in the
// document ("entries.forward.inputs.x.dtype"), so every error can say what and where.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"

namespace aotrace::shape_profiles::detail {

struct Value {
  YAML::Node node;
  SourceLoc loc;      // of the value; of its key when the value is empty (`call:` alone)
  SourceLoc key_loc;  // of the key that holds it (missing sub-keys are reported here)
  std::string path;   // "entries.forward.call"; "the profile" for the document itself
};

struct Field {
  std::string key;
  Value value;
};

// Parses the text as one YAML document; syntax errors become UserErrors at their mark.
Value load_document(const std::string& text, const std::string& file);

// A location in the YAML file (1-based line and column).
SourceLoc file_loc(const std::string& file, int line, int col);
// Where a node or a parser mark is: 1-based line and column, or 1:1 when yaml-cpp gave it no mark.
SourceLoc mark_loc(const YAML::Mark& mark, const std::string& file);
SourceLoc node_loc(const YAML::Node& node, const std::string& file);

// "a mapping", "a list", "a string", "nothing": for "must be X, not Y" messages.
std::string kind_of(const YAML::Node& node);

// The fields of a mapping in document order. Non-scalar keys and duplicate keys are errors;
// so are keys outside `allowed` unless it is empty (with a "did you mean" suggestion).
std::vector<Field> map_fields(const Value& map, std::span<const std::string_view> allowed,
                              const std::string& hint_if_not_map);
const Field* find_field(const std::vector<Field>& fields, std::string_view key);
const Field& require_field(const std::vector<Field>& fields, const Value& owner,
                           std::string_view key, const std::string& hint);

// The items of a list, with paths "dims.batch[0]".
std::vector<Value> list_items(const Value& list, const std::string& hint_if_not_list);

// Scalars. Integers are plain (unquoted) decimal scalars that fit in int64.
bool is_integer(const YAML::Node& node);
int64_t as_integer(const Value& v, const std::string& hint);
std::string as_string(const Value& v, const std::string& hint);  // any non-empty scalar

bool is_identifier(std::string_view s);
void require_identifier(std::string_view name, const SourceLoc& loc, std::string_view what);

// Edit distance with transpositions counted as one edit (optimal string alignment).
size_t edit_distance(std::string_view a, std::string_view b);
// "did you mean 'script'?" when a candidate is close to `word`, else "".
std::string did_you_mean(std::string_view word, std::span<const std::string> candidates);
// "'a', 'b', 'c'"
std::string quoted_list(std::span<const std::string> words);

}  // namespace aotrace::shape_profiles::detail
