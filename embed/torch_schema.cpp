// Binding a torch call's arguments through torch's own schemas (STYLE 19), as torch's Python
// argument parser does: the first overload of `aten::NAME` that accepts the arguments wins, and
// every argument is then known by its schema name. `torch.var(x, -1, True)` binds to
// var.dim(self, dim, unbiased, keepdim), so the positional True is `unbiased`, not `keepdim`.
#include <map>

#include "embed/torch_ops_args.h"

namespace aotrace::embed::ops {

namespace {

struct SchemaArg {
  std::string name, type;  // type as torch prints it: "Tensor", "Optional[List[int]]", "bool"
  bool kwarg_only = false, has_default = false;
};
using Overload = std::vector<SchemaArg>;

const std::vector<Overload>& overloads_of(const std::string& aten_name) {
  static std::map<std::string, std::vector<Overload>> cache;
  auto [it, inserted] = cache.try_emplace(aten_name);
  if (!inserted) return it->second;
  PyRef c = import("torch._C");
  PyRef schemas = check(PyObject_CallMethod(c.get(), "_jit_get_schemas_for_operator", "s", aten_name.c_str()),
                        "torch._C._jit_get_schemas_for_operator");
  for (Py_ssize_t i = 0; i < PyList_Size(schemas.get()); ++i) {
    PyRef args = getattr(PyList_GetItem(schemas.get(), i), "arguments");
    Overload o;
    for (Py_ssize_t k = 0; k < PyList_Size(args.get()); ++k) {
      PyObject* arg = PyList_GetItem(args.get(), k);
      SchemaArg a;
      a.name = py_str(getattr(arg, "name").get());
      a.type = py_str(getattr(arg, "type").get());
      a.kwarg_only = getattr(arg, "kwarg_only").get() == Py_True;
      a.has_default = check(PyObject_CallMethod(arg, "has_default_value", nullptr), "has_default_value").get() == Py_True;
      o.push_back(std::move(a));
    }
    it->second.push_back(std::move(o));
  }
  AOT_CHECK(!it->second.empty(), "torch has no schema " + aten_name);
  return it->second;
}

bool is_real_tensor(PyObject* o) { return is_instance_of(o, "torch", "Tensor"); }

// Whether `v` can be passed as a schema argument of `type` (torch's python_arg_parser rules:
// a bool is not an int, an int is a float, a single int is an int list).
bool accepts(Translator& t, const std::string& type, const VarRef& v) {
  if (type.rfind("Optional[", 0) == 0)
    return is_none(v) || accepts(t, type.substr(9, type.size() - 10), v);
  if (type == "Tensor") return as<TensorVar>(v) != nullptr;
  if (type.rfind("List[", 0) == 0) {
    const std::string item = type.substr(5, type.size() - 6);
    if (item == "int" && accepts(t, "int", v)) return true;
    auto items = sequence_items(t, v);
    if (!items) return false;
    for (const auto& i : *items)
      if (!accepts(t, item, i)) return false;
    return true;
  }
  if (as<TensorVar>(v)) return false;
  if (as<SymIntVar>(v)) return type == "int" || type == "float" || type == "number";
  auto* c = as<ConstVar>(v);
  if (!c) return false;
  PyObject* o = c->obj.get();
  if (is_real_tensor(o)) return false;
  const bool is_bool = PyBool_Check(o), is_int = PyLong_Check(o) && !is_bool;
  if (type == "bool") return is_bool;
  if (type == "int") return is_int;
  if (type == "float") return is_int || PyFloat_Check(o);
  if (type == "number") return is_int || is_bool || PyFloat_Check(o);
  if (type == "str") return PyUnicode_Check(o);
  if (type == "ScalarType") return is_instance_of(o, "torch", "dtype");
  return false;  // Device, Layout, Generator, ...: not taken by the ops bound this way
}

std::optional<CallArgs> try_bind(Translator& t, const Overload& o, const CallArgs& a) {
  CallArgs bound;
  size_t positional = 0;
  for (const auto& arg : o) {
    if (arg.kwarg_only) break;
    ++positional;
  }
  if (a.args.size() > positional) return std::nullopt;
  std::vector<bool> used(a.kwargs.size(), false);
  for (size_t k = 0; k < o.size(); ++k) {
    const SchemaArg& arg = o[k];
    VarRef value;
    if (k < a.args.size()) value = a.args[k];
    for (size_t j = 0; j < a.kwargs.size(); ++j) {
      // Python's signatures call `self` `input` (torch.var(input, ...)).
      const std::string& name = a.kwargs[j].first;
      if (name == arg.name || (arg.name == "self" && name == "input")) {
        if (value) return std::nullopt;  // given twice
        value = a.kwargs[j].second;
        used[j] = true;
      }
    }
    if (!value) {
      if (!arg.has_default && arg.type.rfind("Optional[", 0) != 0) return std::nullopt;
      continue;
    }
    // The JIT spells ScalarType as int: a `dtype` argument takes a torch.dtype.
    auto* c = as<ConstVar>(value);
    const bool dtype = arg.name == "dtype" && c && is_instance_of(c->obj.get(), "torch", "dtype");
    if (!dtype && !accepts(t, arg.type, value)) return std::nullopt;
    bound.kwargs.emplace_back(arg.name, value);
  }
  for (bool u : used)
    if (!u) return std::nullopt;  // a keyword this overload does not have
  return bound;
}

std::string describe_call(const CallArgs& a) {
  std::string s;
  for (const auto& v : a.args) s += (s.empty() ? "" : ", ") + v->describe();
  for (const auto& [k, v] : a.kwargs) s += (s.empty() ? "" : ", ") + k + "=" + v->describe();
  return s;
}

}  // namespace

CallArgs bind_schema(Translator& t, const std::string& aten_name, const CallArgs& a) {
  for (const Overload& o : overloads_of(aten_name)) {
    bool has_out = false;
    for (const auto& arg : o) has_out |= arg.name == "out";
    if (has_out) continue;  // out= variants write into a given tensor: not traced
    if (auto bound = try_bind(t, o, a)) return *bound;
  }
  user_error(aten_name.substr(6) + "() received an invalid combination of arguments: (" + describe_call(a) +
                 "), which no overload of " + aten_name + " accepts",
             t.loc(), "call it as the torch documentation shows");
}

}  // namespace aotrace::embed::ops
