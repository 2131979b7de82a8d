// Graph::str — the stable text dump used by golden tests and `aotrace explain --graph`.
//
// Format (one item per line; changing it changes every golden file):
//
//   graph(%x: f32[s0, 784] = L['x'], %y: i64[s0] = L['y']):
//     symbol s0 in [1, 512] multiple_of 8
//     %fc1.weight: f32[512, 784] = weight L['self'].fc1.weight
//     %4: f32[s0, 512] = linear(%x, %fc1.weight, %fc1.bias)   # mlp.py:12
//     %5: f32[s0] = reduce_sum(%4) {axes=[1], keepdim=0}
//     %6: f32[s0], %7: i64[s0] = some_op(%5)
//     return (%5, [%6, %7])
//
// - Inputs are listed in the header in order, as `%name: type = source`.
// - Symbols (Graph::symbols) follow, sorted by name: `symbol NAME in [MIN, MAX]`, MAX printed as
//   `inf` when unbounded, ` multiple_of K` appended when K > 1.
// - Weights follow, one a line, as `%name: type = weight source`.
// - Nodes in order: results `%id: type` (comma separated), `= op(operands)`, then ` ATTRS` when
//   the node has attributes (Attrs::str, keys sorted), then `   # file:line` (the basename of the
//   node's SourceLoc file) when the location is known.
// - Inputs and weights are named `%name` when that name is unique among them and does not start
//   with a digit; otherwise, like node results, `%ID` with the value number.
// - `return` prints the output structure (OutputTree) with value names at the leaves: `%5`,
//   `(%5,)`, `(%5, %6)`, `[%5]`, `{'logits': %5}`. With a default (Leaf) tree and several outputs
//   it prints the flat tuple.
#include <set>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

std::map<ValueId, std::string> named_values(const Graph& g) {
  std::map<std::string, int> uses;
  for (const auto& in : g.inputs) uses[in.name]++;
  for (const auto& w : g.weights) uses[w.name]++;
  std::map<ValueId, std::string> names;
  auto name = [&](const std::string& n, ValueId v) {
    if (!n.empty() && uses[n] == 1 && !std::isdigit(static_cast<unsigned char>(n[0])))
      names[v] = n;
  };
  for (const auto& in : g.inputs) name(in.name, in.value);
  for (const auto& w : g.weights) name(w.name, w.value);
  return names;
}

std::string loc_comment(const SourceLoc& loc) {
  if (!loc.known()) return "";
  std::string file = loc.file;
  auto slash = file.find_last_of('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  std::string s = "   # " + file;
  if (loc.line > 0) s += ":" + std::to_string(loc.line);
  return s;
}

std::string range_str(const std::string& name, const SymRange& r) {
  std::string s = "symbol " + name + " in [" + std::to_string(r.min) + ", " +
                  (r.max == INT64_MAX ? std::string("inf") : std::to_string(r.max)) + "]";
  if (r.multiple_of > 1) s += " multiple_of " + std::to_string(r.multiple_of);
  return s;
}

}  // namespace

std::string Graph::str() const {
  auto names = named_values(*this);
  auto value = [&](ValueId v) {
    auto it = names.find(v);
    return "%" + (it != names.end() ? it->second : std::to_string(v));
  };
  auto typed = [&](ValueId v) {
    return value(v) + ": " + (static_cast<size_t>(v) < types_.size() ? type(v).str() : "?");
  };

  std::string s = "graph(";
  for (size_t i = 0; i < inputs.size(); ++i)
    s += (i ? ", " : "") + typed(inputs[i].value) + " = " + inputs[i].source;
  s += "):\n";
  for (const auto& [name, range] : symbols) s += "  " + range_str(name, range) + "\n";
  for (const auto& w : weights) s += "  " + typed(w.value) + " = weight " + w.source + "\n";
  for (const auto& n : nodes) {
    s += "  ";
    for (size_t i = 0; i < n.results.size(); ++i) s += (i ? ", " : "") + typed(n.results[i]);
    s += " = " + std::string(op_name(n.op)) + "(";
    for (size_t i = 0; i < n.operands.size(); ++i) s += (i ? ", " : "") + value(n.operands[i]);
    s += ")";
    if (!n.attrs.items.empty()) s += " " + n.attrs.str();
    s += loc_comment(n.loc) + "\n";
  }
  auto leaf = [&](int i) {
    return i >= 0 && static_cast<size_t>(i) < outputs.size() ? value(outputs[i])
                                                               : "<bad leaf " + std::to_string(i) + ">";
  };
  if (output_tree.kind == OutputTree::Kind::Leaf && num_result_outputs() != 1) {
    OutputTree flat{OutputTree::Kind::Tuple, 0, {}, {}};
    for (size_t i = 0; i < num_result_outputs(); ++i)
      flat.children.push_back({OutputTree::Kind::Leaf, static_cast<int>(i), {}, {}});
    s += "  return " + output_tree_str(flat, leaf) + "\n";
  } else {
    s += "  return " + output_tree_str(output_tree, leaf) + "\n";
  }
  for (const InputUpdate& u : input_updates)
    s += "  update " + value(inputs.at(static_cast<size_t>(u.input)).value) + " := " + leaf(u.output) + "\n";
  return s;
}

}  // namespace aotrace::ir
