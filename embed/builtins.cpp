// Python builtins evaluated symbolically: those that look inside sequences, tensors and
// modules are handled here; on compile-time values every builtin simply runs for real.
#include <set>

#include "embed/torch_ops.h"
#include "embed/translator.h"

namespace aotrace::embed {

namespace {

const std::set<std::string>& builtin_names() {
  static const std::set<std::string> names = {
      "len",  "isinstance", "range", "min",    "max",      "abs",  "int",  "float",
      "bool", "tuple",      "list",  "getattr", "hasattr", "enumerate", "zip", "reversed",
      "print", "sum",       "any",   "all",    "round",    "divmod", "type", "iter", "next"};
  return names;
}

using Kwargs = std::vector<std::pair<std::string, VarRef>>;

std::vector<VarRef> items_of(Translator& t, const VarRef& v) {
  return as<IteratorVar>(t.iterate(v))->items;
}

VarRef tuple_of(std::vector<VarRef> items, SequenceVar::Kind k = SequenceVar::Kind::Tuple) {
  return std::make_shared<SequenceVar>(k, std::move(items));
}

bool all_python(Translator& t, const std::vector<VarRef>& args) {
  for (const auto& a : args)
    if (as<TensorVar>(a) || !t.to_python(a)) return false;
  return true;
}

VarRef py_bool(Translator& t, bool b) { return t.constant(b ? Py_True : Py_False); }

}  // namespace

bool is_symbolic_builtin(PyObject* obj) {
  if (!PyCFunction_Check(obj) && !PyType_Check(obj)) return false;
  PyObject* builtins = PyEval_GetBuiltins();
  for (const auto& n : builtin_names())
    if (PyDict_GetItemString(builtins, n.c_str()) == obj) return true;
  return false;
}

VarRef call_builtin(Translator& t, const VarRef& fn, std::vector<VarRef> args, Kwargs kwargs) {
  const std::string& name = as<BuiltinVar>(fn)->name;
  auto arg = [&](size_t i) -> const VarRef& {
    if (i >= args.size()) user_error(name + "() is missing an argument", t.loc());
    return args[i];
  };
  if (name == "len") {
    const VarRef& x = arg(0);
    if (auto* seq = as<SequenceVar>(x)) {
      PyRef n = PyRef::steal(PyLong_FromSize_t(seq->items.size()));
      return t.constant(n.get());
    }
    if (as<TensorVar>(x)) {
      PyRef zero = PyRef::steal(PyLong_FromLong(0));
      return t.subscript(t.attribute(x, "shape"), t.constant(zero.get()));
    }
    if (auto* d = as<DictVar>(x)) {
      PyRef n = PyRef::steal(PyLong_FromSize_t(d->keys.size()));
      return t.constant(n.get());
    }
    if (as<ModuleVar>(x) || as<IteratorVar>(x)) {
      PyRef n = PyRef::steal(PyLong_FromSize_t(items_of(t, x).size()));
      return t.constant(n.get());
    }
  }
  if (name == "type" && args.size() == 1 && as<TensorVar>(args[0]))
    return t.constant(getattr(import("torch").get(), "Tensor").get());
  if ((name == "any" || name == "all") && args.size() == 1 && !all_python(t, args)) {
    const bool want = name == "any";
    for (auto& item : items_of(t, args[0]))
      if (t.truth(item) == want) return py_bool(t, want);
    return py_bool(t, !want);
  }
  if (name == "isinstance" && args.size() == 2) {
    PyRef cls = t.to_python(args[1]);
    if (cls && as<TensorVar>(args[0])) {
      PyRef tensor_type = getattr(import("torch").get(), "Tensor");
      int r = PyObject_IsSubclass(tensor_type.get(), cls.get());
      if (r < 0) PyErr_Clear();
      return py_bool(t, r == 1);
    }
    if (cls && (as<DictVar>(args[0]) || as<IteratorVar>(args[0]))) {
      PyObject* type = as<DictVar>(args[0]) ? reinterpret_cast<PyObject*>(&PyDict_Type) : nullptr;
      int r = type ? PyObject_IsSubclass(type, cls.get()) : 0;
      if (r < 0) PyErr_Clear();
      return py_bool(t, r == 1);
    }
    if (cls && as<SequenceVar>(args[0])) {
      auto* seq = as<SequenceVar>(args[0]);
      PyObject* type = seq->kind == SequenceVar::Kind::List ? reinterpret_cast<PyObject*>(&PyList_Type)
                                                             : reinterpret_cast<PyObject*>(&PyTuple_Type);
      if (seq->kind == SequenceVar::Kind::Size) type = getattr(import("torch").get(), "Size").release();
      int r = PyObject_IsSubclass(type, cls.get());
      if (r < 0) PyErr_Clear();
      return py_bool(t, r == 1);
    }
  }
  if (name == "getattr" || name == "hasattr") {
    PyRef attr = t.to_python(arg(1));
    if (!attr || !PyUnicode_Check(attr.get()))
      t.graph_break("unsupported Python", name + "() with a non-constant name", "");
    const std::string a = py_str(attr.get());
    const bool has_default = name == "getattr" && args.size() == 3;
    // Objects that are not plain Python are asked through the Translator's attribute rules.
    PyRef obj = as<TensorVar>(args[0]) ? PyRef() : t.to_python(args[0]);
    if (obj && !as<ModuleVar>(args[0])) {
      const int has = PyObject_HasAttrString(obj.get(), a.c_str());
      if (name == "hasattr") {
        VarRef r = py_bool(t, has == 1);
        if (!args[0]->source.empty())
          t.add_assumption("hasattr(" + args[0]->source.str() + ", '" + a + "') == " +
                           (has == 1 ? "True" : "False"));
        return r;
      }
      if (has != 1 && has_default) return args[2];
    }
    if (name == "hasattr") {
      if (as<TensorVar>(args[0])) return py_bool(t, tensor_attribute(t, args[0], a) || tensor_method(a));
      PyRef m = t.to_python(args[0]);
      const bool has = m && PyObject_HasAttrString(m.get(), a.c_str()) == 1;
      if (!args[0]->source.empty())
        t.add_assumption("hasattr(" + args[0]->source.str() + ", '" + a + "') == " + (has ? "True" : "False"));
      return py_bool(t, has);
    }
    return t.attribute(args[0], a);
  }
  if (name == "enumerate") {
    std::vector<VarRef> items = items_of(t, arg(0)), out;
    long start = 0;
    if (args.size() > 1) start = PyLong_AsLong(t.to_python(args[1]).get());
    for (size_t i = 0; i < items.size(); ++i) {
      PyRef idx = PyRef::steal(PyLong_FromLong(start + static_cast<long>(i)));
      out.push_back(tuple_of({t.constant(idx.get()), items[i]}));
    }
    return std::make_shared<IteratorVar>(std::move(out));
  }
  if (name == "zip") {
    std::vector<std::vector<VarRef>> lists;
    size_t n = SIZE_MAX;
    for (auto& a : args) {
      lists.push_back(items_of(t, a));
      n = std::min(n, lists.back().size());
    }
    std::vector<VarRef> out;
    for (size_t i = 0; i < (lists.empty() ? 0 : n); ++i) {
      std::vector<VarRef> row;
      for (auto& l : lists) row.push_back(l[i]);
      out.push_back(tuple_of(std::move(row)));
    }
    return std::make_shared<IteratorVar>(std::move(out));
  }
  if (name == "reversed") {
    std::vector<VarRef> items = items_of(t, arg(0));
    return std::make_shared<IteratorVar>(std::vector<VarRef>(items.rbegin(), items.rend()));
  }
  if (name == "iter") return t.iterate(arg(0));
  if ((name == "tuple" || name == "list") && args.size() == 1 && !all_python(t, args))
    return tuple_of(items_of(t, args[0]),
                    name == "list" ? SequenceVar::Kind::List : SequenceVar::Kind::Tuple);
  if (name == "sum" && !args.empty() && !all_python(t, args)) {
    std::vector<VarRef> items = items_of(t, args[0]);
    PyRef zero = PyRef::steal(PyLong_FromLong(0));
    VarRef acc = args.size() > 1 ? args[1] : t.constant(zero.get());
    for (auto& item : items) acc = t.binary_op("+", acc, item);
    return acc;
  }
  if (name == "print") {
    for (auto& a : args)
      if (as<TensorVar>(a))
        t.graph_break("side effect", "print() of a tensor value",
                      "remove the print from the traced function, or print outside it");
  }
  if ((name == "min" || name == "max") && args.size() >= 2) {
    bool sym = false;
    for (auto& a : args) sym |= as<SymIntVar>(a) != nullptr;
    if (sym && args.size() == 2) {
      VarRef lt = t.binary_op("<", args[0], args[1]);
      const bool first = t.truth(lt) == (name == "min");
      return first ? args[0] : args[1];
    }
  }
  // Everything else runs for real on compile-time values.
  PyRef pargs = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef a = t.to_python(args[i]);
    if (!a || as<TensorVar>(args[i]))
      t.graph_break("unsupported Python", name + "() of " + args[i]->describe(),
                    "call " + name + "() on plain Python values only");
    PyTuple_SetItem(pargs.get(), static_cast<Py_ssize_t>(i), a.release());
  }
  PyRef pkw = PyRef::steal(PyDict_New());
  for (auto& [k, v] : kwargs) {
    PyRef a = t.to_python(v);
    if (!a) t.graph_break("unsupported Python", name + "() with " + v->describe(), "");
    PyDict_SetItemString(pkw.get(), k.c_str(), a.get());
  }
  PyObject* r = PyObject_Call(as<BuiltinVar>(fn)->fn.get(), pargs.get(), pkw.get());
  if (!r)
    t.graph_break("python exception", name + "() raised " + fetch_python_error(),
                  "the traced code raised at compile time");
  PyRef result = PyRef::steal(r);
  return t.wrap(result.get(), Source());
}

}  // namespace aotrace::embed
