// verify(): the graph invariants checked between passes (STYLE 5). A violation is a compiler
// bug, so it is an internal_error naming the node and the graph dump.
#include "ir/ir.h"

namespace aotrace::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g), defined_(g.num_values(), false) {}

  void run() {
    for (const auto& in : g_.inputs) define(in.value, "input " + in.name);
    for (const auto& w : g_.weights) define(w.value, "weight " + w.name);
    for (size_t i = 0; i < g_.nodes.size(); ++i) check_node(i, g_.nodes[i]);
    for (ValueId v : g_.outputs) use(v, "the outputs");
    if (g_.input_updates.size() > g_.outputs.size()) fail("more input updates than outputs");
    if (g_.rng_input >= static_cast<int>(g_.inputs.size())) fail("rng_input is not an input");
    check_tree(g_.output_tree);
    for (size_t k = 0; k < g_.input_updates.size(); ++k) {
      const InputUpdate& u = g_.input_updates[k];
      if (u.input < 0 || static_cast<size_t>(u.input) >= g_.inputs.size() ||
          static_cast<size_t>(u.output) != g_.num_result_outputs() + k)
        fail("input update " + std::to_string(k) + " names input " + std::to_string(u.input) +
             " and output " + std::to_string(u.output) + ": not an input, or not after the tree's outputs");
      if (!(g_.type(g_.outputs[static_cast<size_t>(u.output)]) == g_.type(g_.inputs[static_cast<size_t>(u.input)].value)))
        fail("input update " + std::to_string(k) + " changes the type of input " + g_.inputs[static_cast<size_t>(u.input)].name);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    internal_error("verify: " + what + "\n" + g_.str());
  }

  bool in_range(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < defined_.size(); }

  void define(ValueId v, const std::string& by) {
    if (!in_range(v)) fail(by + " defines %" + std::to_string(v) + ", which has no type");
    if (defined_[static_cast<size_t>(v)]) fail(by + " redefines %" + std::to_string(v));
    defined_[static_cast<size_t>(v)] = true;
  }

  void use(ValueId v, const std::string& by) const {
    if (!in_range(v) || !defined_[static_cast<size_t>(v)])
      fail(by + " uses %" + std::to_string(v) + " before it is defined");
  }

  void check_node(size_t index, const Node& n) {
    const OpInfo& info = op_info(n.op);
    std::string where = "node " + std::to_string(index) + " (" + std::string(info.name) + ")";
    if (info.arity >= 0 && n.operands.size() != static_cast<size_t>(info.arity))
      fail(where + " has " + std::to_string(n.operands.size()) + " operands, expected " +
           std::to_string(info.arity));
    std::vector<TensorType> operand_types;
    for (ValueId v : n.operands) {
      use(v, where);
      operand_types.push_back(g_.type(v));
    }
    std::vector<TensorType> expected;
    try {
      expected = info.infer(operand_types, n.attrs);
    } catch (const UserError& e) {
      fail(where + " breaks its shape rule: " + e.what());
    } catch (const InternalError& e) {
      fail(where + " is malformed: " + e.what());
    }
    if (expected.size() != n.results.size())
      fail(where + " has " + std::to_string(n.results.size()) + " results, expected " +
           std::to_string(expected.size()));
    for (size_t r = 0; r < n.results.size(); ++r) {
      define(n.results[r], where);
      if (!(g_.type(n.results[r]) == expected[r]))
        fail(where + " result %" + std::to_string(n.results[r]) + " is recorded as " +
             g_.type(n.results[r]).str() + " but its rule gives " + expected[r].str());
    }
  }

  void check_tree(const OutputTree& t) const {
    if (t.kind == OutputTree::Kind::Leaf) {
      bool default_leaf = t.leaf == 0 && g_.num_result_outputs() != 1;  // flat outputs, no structure
      if (!default_leaf && (t.leaf < 0 || static_cast<size_t>(t.leaf) >= g_.num_result_outputs()))
        fail("output tree leaf " + std::to_string(t.leaf) + " is not an output");
      return;
    }
    if (t.kind == OutputTree::Kind::Constant) {
      if (!t.children.empty() || t.value.empty()) fail("output tree constant without a value, or with children");
      return;
    }
    if (t.kind == OutputTree::Kind::Dict && t.keys.size() != t.children.size())
      fail("output tree dict has " + std::to_string(t.keys.size()) + " keys for " +
           std::to_string(t.children.size()) + " values");
    for (const auto& c : t.children) check_tree(c);
  }

  const Graph& g_;
  std::vector<bool> defined_;
};

}  // namespace

void verify(const Graph& g) { Verifier(g).run(); }

}  // namespace aotrace::ir
