// Attrs, TensorType, OutputTree and Graph construction (the text dump is in graph_print.cpp).
#include <algorithm>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

template <typename T>
const T& attr_as(const Attrs& attrs, const std::string& key, const char* type_name) {
  auto it = attrs.items.find(key);
  if (it == attrs.items.end()) internal_error("attribute '" + key + "' missing in " + attrs.str());
  const T* v = std::get_if<T>(&it->second);
  if (!v) internal_error("attribute '" + key + "' is not " + type_name + " in " + attrs.str());
  return *v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Attrs

int64_t Attrs::i(const std::string& key) const { return attr_as<int64_t>(*this, key, "an int"); }
double Attrs::f(const std::string& key) const {
  // An integer attribute is accepted where a float is asked for (full(value=1)).
  auto it = items.find(key);
  if (it != items.end())
    if (const int64_t* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  return attr_as<double>(*this, key, "a float");
}
const std::vector<int64_t>& Attrs::ints(const std::string& key) const {
  return attr_as<std::vector<int64_t>>(*this, key, "a list of ints");
}
const std::string& Attrs::s(const std::string& key) const {
  return attr_as<std::string>(*this, key, "a string");
}
DType Attrs::dtype(const std::string& key) const { return attr_as<DType>(*this, key, "a dtype"); }
const Shape& Attrs::shape(const std::string& key) const {
  return attr_as<Shape>(*this, key, "a shape");
}

// Shortest text that reads back as the same double, always with a '.' or exponent: "0.5", "1.0".
std::string format_double(double v) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // n: inf, nan
  return s;
}

std::string attr_value_str(const AttrValue& value) {
  struct Printer {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_double(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::string& v) const { return "'" + v + "'"; }
    std::string operator()(DType v) const { return std::string(dtype_name(v)); }
    std::string operator()(const Shape& v) const { return shape_str(v); }
  };
  return std::visit(Printer{}, value);
}

std::string Attrs::str() const {
  std::string s = "{";
  bool first = true;
  for (const auto& [key, value] : items) {  // std::map: keys sorted
    s += (first ? "" : ", ") + key + "=" + attr_value_str(value);
    first = false;
  }
  return s + "}";
}

// ---------------------------------------------------------------------------------------------
// Shapes and types

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + shape[i].str();
  return s + "]";
}

SymExpr TensorType::numel() const {
  SymExpr n = 1;
  for (const auto& d : shape) n = n * d;
  return n;
}

std::optional<std::vector<int64_t>> TensorType::static_shape() const {
  std::vector<int64_t> out;
  for (const auto& d : shape) {
    auto c = d.as_constant();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

std::string TensorType::str() const {
  std::string s = std::string(dtype_name(dtype)) + shape_str(shape);
  if (device.kind != Device::Kind::cpu) s += "@" + device.str();
  return s;
}

bool TensorType::operator==(const TensorType& o) const {
  return dtype == o.dtype && device == o.device && shape == o.shape;
}

std::string OutputTree::str() const {
  return output_tree_str(*this, [](int leaf) { return std::to_string(leaf); });
}

std::string output_tree_str(const OutputTree& t, const std::function<std::string(int)>& leaf) {
  auto join = [&](const char* open, const char* close, bool tuple) {
    std::string s = open;
    for (size_t i = 0; i < t.children.size(); ++i) {
      if (i) s += ", ";
      if (t.kind == OutputTree::Kind::Dict) s += "'" + t.keys.at(i) + "': ";
      s += output_tree_str(t.children[i], leaf);
    }
    if (tuple && t.children.size() == 1) s += ",";
    return s + close;
  };
  switch (t.kind) {
    case OutputTree::Kind::Leaf: return leaf(t.leaf);
    case OutputTree::Kind::Tuple: return join("(", ")", true);
    case OutputTree::Kind::List: return join("[", "]", false);
    case OutputTree::Kind::Dict: return join("{", "}", false);
    case OutputTree::Kind::Constant: return t.value;
  }
  internal_error("OutputTree::str: bad kind");
}

// ---------------------------------------------------------------------------------------------
// Graph construction

ValueId Graph::new_value(TensorType type) {
  types_.push_back(std::move(type));
  return static_cast<ValueId>(types_.size() - 1);
}

ValueId Graph::add_input(std::string name, TensorType type, std::string source) {
  ValueId v = new_value(std::move(type));
  inputs.push_back({std::move(name), v, std::move(source)});
  return v;
}

ValueId Graph::add_weight(std::string name, TensorType type, std::string source,
                          std::shared_ptr<const Bytes> data) {
  if (data) {
    auto shape = type.static_shape();
    AOT_CHECK(shape, "weight " + name + " has a symbolic shape " + type.str());
    int64_t numel = 1;
    for (auto d : *shape) numel *= d;
    AOT_CHECK(data->size() == static_cast<size_t>(numel) * dtype_size(type.dtype),
              "weight " + name + " has " + std::to_string(data->size()) + " bytes for " +
                  type.str());
  }
  ValueId v = new_value(std::move(type));
  weights.push_back({std::move(name), v, std::move(source), std::move(data)});
  return v;
}

std::vector<ValueId> Graph::add_node(OpKind op, std::vector<ValueId> operands, Attrs attrs,
                                     SourceLoc loc) {
  const OpInfo& info = op_info(op);
  std::vector<TensorType> operand_types;
  for (ValueId v : operands) {
    AOT_CHECK(v >= 0 && static_cast<size_t>(v) < types_.size(),
              std::string(info.name) + ": operand %" + std::to_string(v) + " is not defined");
    operand_types.push_back(types_[static_cast<size_t>(v)]);
  }
  std::vector<TensorType> result_types;
  try {
    if (info.arity >= 0 && operands.size() != static_cast<size_t>(info.arity))
      internal_error(std::string(info.name) + " takes " + std::to_string(info.arity) +
                     " operands, got " + std::to_string(operands.size()));
    result_types = info.infer(operand_types, attrs);
  } catch (const UserError& e) {
    // The op rules do not know where the op came from: attach the caller's location.
    if (e.loc().known() || !loc.known()) throw;
    throw UserError(e.what(), loc, e.hint(), e.notes());
  }
  Node node{op, std::move(operands), std::move(attrs), {}, std::move(loc)};
  for (auto& t : result_types) node.results.push_back(new_value(std::move(t)));
  nodes.push_back(std::move(node));
  return nodes.back().results;
}

ValueId Graph::add(OpKind op, std::vector<ValueId> operands, Attrs attrs, SourceLoc loc) {
  auto results = add_node(op, std::move(operands), std::move(attrs), std::move(loc));
  AOT_CHECK(results.size() == 1,
            std::string(op_name(op)) + " has " + std::to_string(results.size()) + " results");
  return results[0];
}

ValueId Graph::constant(double value, DType dtype, SourceLoc loc) {
  Attrs attrs;
  attrs.set("shape", Shape{}).set("value", value).set("dtype", dtype);
  return add(OpKind::Full, {}, std::move(attrs), std::move(loc));
}

ValueId Graph::cast(ValueId v, DType dtype, SourceLoc loc) {
  if (type(v).dtype == dtype) return v;
  Attrs attrs;
  attrs.set("dtype", dtype);
  return add(OpKind::Cast, {v}, std::move(attrs), std::move(loc));
}

SymBindings max_bindings(const Graph& g) {
  SymBindings b;
  for (const auto& [name, range] : g.symbols) b[name] = range.max;
  return b;
}

SymBindings min_bindings(const Graph& g) {
  SymBindings b;
  for (const auto& [name, range] : g.symbols) b[name] = range.min;
  return b;
}

void Graph::set_outputs(std::vector<ValueId> values, OutputTree tree) {
  for (ValueId v : values)
    AOT_CHECK(v >= 0 && static_cast<size_t>(v) < types_.size(),
              "output %" + std::to_string(v) + " is not defined");
  outputs = std::move(values);
  output_tree = std::move(tree);
}

}  // namespace aotrace::ir
