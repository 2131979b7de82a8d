#include "shape_profiles/yaml_values.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace aotrace::shape_profiles::detail {

SourceLoc file_loc(const std::string& file, int line, int col) {
  SourceLoc loc;
  loc.file = file;
  loc.line = line;
  loc.col = col;
  return loc;
}

SourceLoc mark_loc(const YAML::Mark& mark, const std::string& file) {
  if (mark.is_null() || mark.line < 0 || mark.column < 0) return file_loc(file, 1, 1);
  return file_loc(file, mark.line + 1, mark.column + 1);
}

SourceLoc node_loc(const YAML::Node& node, const std::string& file) {
  return mark_loc(node.Mark(), file);
}

Value load_document(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    user_error("invalid YAML: " + e.msg, mark_loc(e.mark, file),
               "check the indentation, the ':' after each key and that every bracket and quote "
               "is closed");
  }
  SourceLoc loc = node_loc(root, file);
  return Value{root, loc, loc, "the profile"};
}

std::string kind_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return is_integer(node) ? "an integer" : "a string";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

namespace {

std::string child_path(const Value& parent, const std::string& key) {
  return parent.path == "the profile" ? key : parent.path + "." + key;
}

Field make_field(const Value& map, const YAML::Node& key, const YAML::Node& value) {
  const std::string& file = map.loc.file;
  SourceLoc key_loc = node_loc(key, file);
  // An empty value (`call:` with nothing after it) carries the mark of the next token.
  SourceLoc value_loc = value.IsNull() ? key_loc : node_loc(value, file);
  std::string name = key.Scalar();
  return Field{name, Value{value, value_loc, key_loc, child_path(map, name)}};
}

void reject_unknown_key(const Value& map, const Field& field,
                        std::span<const std::string_view> allowed) {
  std::vector<std::string> names(allowed.begin(), allowed.end());
  std::string hint = did_you_mean(field.key, names);
  if (hint.empty()) hint = "the keys allowed here are " + quoted_list(names);
  std::string where = map.path == "the profile" ? "at the top level" : "in '" + map.path + "'";
  user_error("unknown key '" + field.key + "' " + where, field.value.key_loc, hint);
}

}  // namespace

std::vector<Field> map_fields(const Value& map, std::span<const std::string_view> allowed,
                              const std::string& hint_if_not_map) {
  if (!map.node.IsMap())
    user_error("'" + map.path + "' must be a mapping, not " + kind_of(map.node), map.loc,
               hint_if_not_map);
  std::vector<Field> fields;
  std::set<std::string> seen;
  for (auto it = map.node.begin(); it != map.node.end(); ++it) {
    if (!it->first.IsScalar())
      user_error("a key in '" + map.path + "' must be a name, not " + kind_of(it->first),
                 node_loc(it->first, map.loc.file), "write `key: value`");
    Field field = make_field(map, it->first, it->second);
    if (!allowed.empty() &&
        std::find(allowed.begin(), allowed.end(), field.key) == allowed.end())
      reject_unknown_key(map, field, allowed);
    if (!seen.insert(field.key).second)
      user_error("duplicate key '" + field.key + "' in '" + map.path + "'",
                 field.value.key_loc, "each key may appear once; remove or rename this one");
    fields.push_back(std::move(field));
  }
  return fields;
}

const Field* find_field(const std::vector<Field>& fields, std::string_view key) {
  for (const Field& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

const Field& require_field(const std::vector<Field>& fields, const Value& owner,
                           std::string_view key, const std::string& hint) {
  if (const Field* f = find_field(fields, key)) return *f;
  std::string what = owner.path == "the profile"
                         ? "the profile has no '" + std::string(key) + "' key"
                         : "'" + owner.path + "' has no '" + std::string(key) + "' key";
  user_error(what, owner.key_loc, hint);
}

std::vector<Value> list_items(const Value& list, const std::string& hint_if_not_list) {
  if (!list.node.IsSequence())
    user_error("'" + list.path + "' must be a list, not " + kind_of(list.node), list.loc,
               hint_if_not_list);
  std::vector<Value> items;
  for (size_t i = 0; i < list.node.size(); ++i) {
    YAML::Node item = list.node[i];
    SourceLoc loc = item.IsNull() ? list.loc : node_loc(item, list.loc.file);
    items.push_back(Value{item, loc, loc, list.path + "[" + std::to_string(i) + "]"});
  }
  return items;
}

bool is_integer(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() == "!") return false;  // "!": quoted, so a string
  const std::string& s = node.Scalar();
  size_t digits = s.size() - (s.starts_with('-') ? 1 : 0);
  if (digits == 0) return false;
  return std::all_of(s.end() - digits, s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t as_integer(const Value& v, const std::string& hint) {
  if (!is_integer(v.node))
    user_error("'" + v.path + "' must be an integer, not " + kind_of(v.node), v.loc, hint);
  const std::string& s = v.node.Scalar();
  int64_t result = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), result);
  if (ec != std::errc() || end != s.data() + s.size())
    user_error("'" + v.path + "' is too large: " + s, v.loc, hint);
  return result;
}

std::string as_string(const Value& v, const std::string& hint) {
  if (!v.node.IsScalar() || v.node.Scalar().empty())
    user_error("'" + v.path + "' must be a string, not " + kind_of(v.node), v.loc, hint);
  return v.node.Scalar();
}

bool is_identifier(std::string_view s) {
  auto word_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  return !s.empty() && !(s[0] >= '0' && s[0] <= '9') && std::all_of(s.begin(), s.end(), word_char);
}

void require_identifier(std::string_view name, const SourceLoc& loc, std::string_view what) {
  if (is_identifier(name)) return;
  user_error(std::string(what) + " '" + std::string(name) + "' is not an identifier", loc,
             "use letters, digits and '_' only, not starting with a digit");
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string did_you_mean(std::string_view word, std::span<const std::string> candidates) {
  const std::string* best = nullptr;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (!best || d < best_distance) best = &c, best_distance = d;
  }
  // Close enough to be a typo: at most 2 edits, and fewer than half of the word changed.
  if (!best || best_distance > 2 || best_distance * 2 >= std::max(word.size(), best->size()))
    return "";
  return "did you mean '" + *best + "'?";
}

std::string quoted_list(std::span<const std::string> words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "'" : ", '") + w + "'";
  return s;
}

}  // namespace aotrace::shape_profiles::detail
