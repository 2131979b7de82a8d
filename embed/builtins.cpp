// Python builtins evaluated symbolically (STYLE 18: a name -> handler table): those that look
// inside sequences, tensors and modules have a handler here; on compile-time values every
// builtin simply runs for real. Besides builtins, itertools.chain, functools.reduce and the
// operator module's binary functions are handled, as real model code calls them on tensors.
#include <map>

#include "embed/torch_ops.h"
#include "embed/translator.h"

namespace aotrace::embed {

namespace {

using Kwargs = std::vector<std::pair<std::string, VarRef>>;
// A handler returns the call's result, or null to let the builtin run for real.
using BuiltinHandler = VarRef (*)(Translator&, const std::string& name, const std::vector<VarRef>& args,
                                  const Kwargs& kwargs);

// The items an iterable has left (an iterator's from its position on).
std::vector<VarRef> remaining(Translator& t, const VarRef& v) {
  VarRef iterator = t.iterate(v);
  auto* it = as<IteratorVar>(iterator);
  return std::vector<VarRef>(it->items.begin() + static_cast<long>(it->next), it->items.end());
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

VarRef py_int(Translator& t, long long v) {
  PyRef n = PyRef::steal(PyLong_FromLongLong(v));
  return t.constant(n.get());
}

const VarRef& arg(Translator& t, const std::string& name, const std::vector<VarRef>& args, size_t i) {
  if (i >= args.size()) user_error(name + "() is missing an argument", t.loc());
  return args[i];
}

VarRef len_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  return arg(t, name, args, 0)->len(t);
}

VarRef type_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() != 1) return nullptr;
  PyRef type = args[0]->python_type(t);
  return type ? t.constant(type.get()) : nullptr;
}

VarRef any_all(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() != 1 || all_python(t, args)) return nullptr;
  const bool want = name == "any";
  for (auto& item : remaining(t, args[0]))
    if (t.truth(item) == want) return py_bool(t, want);
  return py_bool(t, !want);
}

bool is_subclass(PyObject* type, PyObject* cls) {
  const int r = PyObject_IsSubclass(type, cls);
  if (r < 0) PyErr_Clear();
  return r == 1;
}

VarRef isinstance_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() != 2) return nullptr;
  PyRef cls = t.to_python(args[1]);
  PyRef type = args[0]->python_type(t);
  if (!cls || !type) return nullptr;  // isinstance of the Python object, run for real
  return py_bool(t, is_subclass(type.get(), cls.get()));
}

VarRef getattr_hasattr(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  PyRef attr = t.to_python(arg(t, name, args, 1));
  if (!attr || !PyUnicode_Check(attr.get())) t.graph_break("unsupported Python", name + "() with a non-constant name", "");
  const std::string a = py_str(attr.get());
  const bool has_default = name == "getattr" && args.size() == 3;
  auto assume = [&](bool has) {
    if (!args[0]->source.empty())
      t.add_assumption("hasattr(" + args[0]->source.str() + ", '" + a + "') == " + (has ? "True" : "False"));
    return py_bool(t, has);
  };
  // Objects that are not plain Python are asked through the Translator's attribute rules.
  PyRef obj = as<TensorVar>(args[0]) ? PyRef() : t.to_python(args[0]);
  if (obj && !as<ModuleVar>(args[0])) {
    const int has = PyObject_HasAttrString(obj.get(), a.c_str());
    if (name == "hasattr") return assume(has == 1);
    if (has != 1 && has_default) return args[2];
  }
  if (auto* m = as<ModuleVar>(args[0]); m && has_default && PyObject_HasAttrString(m->module.get(), a.c_str()) != 1) {
    assume(false);
    return args[2];
  }
  if (name == "hasattr") {
    if (as<TensorVar>(args[0])) return py_bool(t, tensor_attribute(t, args[0], a) || tensor_method(a));
    PyRef m = t.to_python(args[0]);
    return assume(m && PyObject_HasAttrString(m.get(), a.c_str()) == 1);
  }
  return t.attribute(args[0], a);
}

VarRef enumerate_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  std::vector<VarRef> items = remaining(t, arg(t, name, args, 0)), out;
  long start = args.size() > 1 ? PyLong_AsLong(t.to_python(args[1]).get()) : 0;
  for (size_t i = 0; i < items.size(); ++i) out.push_back(tuple_of({py_int(t, start + static_cast<long>(i)), items[i]}));
  return std::make_shared<IteratorVar>(std::move(out));
}

VarRef zip_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs&) {
  std::vector<std::vector<VarRef>> lists;
  size_t n = SIZE_MAX;
  for (auto& a : args) {
    lists.push_back(remaining(t, a));
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

VarRef reversed_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  std::vector<VarRef> items = remaining(t, arg(t, name, args, 0));
  return std::make_shared<IteratorVar>(std::vector<VarRef>(items.rbegin(), items.rend()));
}

// iter(iterator) is the iterator itself, so that next() on either advances both.
VarRef iter_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  const VarRef& x = arg(t, name, args, 0);
  return as<IteratorVar>(x) ? x : t.iterate(x);
}

// next(iterator[, default]) advances the iterator variable itself.
VarRef next_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  auto* it = as<IteratorVar>(arg(t, name, args, 0));
  if (!it) return nullptr;  // a real Python iterator: runs for real
  if (it->next < it->items.size()) return it->items[it->next++];
  if (args.size() > 1) return args[1];
  t.raise_python(PyRef::steal(PyObject_CallNoArgs(PyExc_StopIteration)), "next() of an exhausted iterator raised StopIteration", "");
}

VarRef sequence_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() != 1 || all_python(t, args)) return nullptr;
  return tuple_of(remaining(t, args[0]), name == "list" ? SequenceVar::Kind::List : SequenceVar::Kind::Tuple);
}

VarRef sum_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.empty() || all_python(t, args)) return nullptr;
  VarRef acc = args.size() > 1 ? args[1] : py_int(t, 0);
  for (auto& item : remaining(t, args[0])) acc = t.binary_op("+", acc, item);
  return acc;
}

VarRef print_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs&) {
  for (auto& a : args)
    if (as<TensorVar>(a))
      t.graph_break("side effect", "print() of a tensor value", "remove the print from the traced function, or print outside it");
  return nullptr;
}

// max/min of several arguments or of one iterable, by key= when given: the first extreme item,
// as Python returns it; keys compared as Python compares them (tensor keys: a graph break).
VarRef min_max(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs& kwargs) {
  VarRef key, fallback;
  for (const auto& [k, v] : kwargs) {
    if (k == "key" && !(as<ConstVar>(v) && as<ConstVar>(v)->obj.get() == Py_None)) key = v;
    else if (k == "default") fallback = v;
    else if (k != "key") return nullptr;  // Python's own TypeError
  }
  if (args.empty()) return nullptr;
  std::vector<VarRef> items = args.size() == 1 ? remaining(t, args[0]) : args;
  if (!key && all_python(t, items)) return nullptr;  // plain values: run for real
  if (items.empty()) {
    if (fallback) return fallback;
    t.raise_python(PyRef::steal(PyObject_CallFunction(PyExc_ValueError, "s", (name + "() arg is an empty sequence").c_str())),
                   name + "() of an empty sequence", "");
  }
  const char* better = name == "min" ? "<" : ">";
  VarRef best = items[0], best_key = key ? t.call(key, {items[0]}, {}) : items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    VarRef k = key ? t.call(key, {items[i]}, {}) : items[i];
    if (t.truth(t.binary_op(better, k, best_key))) best = items[i], best_key = k;
  }
  return best;
}

// map(fn, *iterables) and filter(fn, iterable), evaluated at once (the traced code is pure).
VarRef map_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() < 2 || all_python(t, args)) return nullptr;
  std::vector<std::vector<VarRef>> lists;
  size_t n = SIZE_MAX;
  for (size_t i = 1; i < args.size(); ++i) {
    lists.push_back(remaining(t, args[i]));
    n = std::min(n, lists.back().size());
  }
  std::vector<VarRef> out;
  for (size_t i = 0; i < n; ++i) {
    std::vector<VarRef> call_args;
    for (auto& l : lists) call_args.push_back(l[i]);
    out.push_back(t.call(args[0], std::move(call_args), {}));
  }
  return std::make_shared<IteratorVar>(std::move(out));
}

VarRef filter_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() != 2 || all_python(t, args)) return nullptr;
  std::vector<VarRef> out;
  PyRef fn = t.to_python(args[0]);
  for (auto& item : remaining(t, args[1]))
    if (t.truth(fn && fn.get() == Py_None ? item : t.call(args[0], {item}, {}))) out.push_back(item);
  return std::make_shared<IteratorVar>(std::move(out));
}

VarRef chain_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs&) {
  if (all_python(t, args)) return nullptr;
  std::vector<VarRef> out;
  for (auto& a : args)
    for (auto& item : remaining(t, a)) out.push_back(item);
  return std::make_shared<IteratorVar>(std::move(out));
}

VarRef reduce_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() < 2 || all_python(t, args)) return nullptr;
  std::vector<VarRef> items = remaining(t, args[1]);
  size_t first = 0;
  VarRef acc = args.size() > 2 ? args[2] : nullptr;
  if (!acc) {
    if (items.empty()) user_error("reduce() of an empty iterable with no initial value", t.loc());
    acc = items[first++];
  }
  for (size_t i = first; i < items.size(); ++i) acc = t.call(args[0], {acc, items[i]}, {});
  return acc;
}

// setattr(module, name, value) as `module.name = value` in traced code.
VarRef setattr_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() != 3 || !as<ModuleVar>(args[0])) return nullptr;
  PyRef attr = t.to_python(args[1]);
  if (!attr || !PyUnicode_Check(attr.get())) t.graph_break("unsupported Python", name + "() with a non-constant name", "");
  t.store_module_attribute(args[0], py_str(attr.get()), args[2]);
  return t.constant(Py_None);
}

// abs(x) of a tensor is x.abs().
VarRef abs_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs&) {
  if (args.size() != 1 || !as<TensorVar>(args[0])) return nullptr;
  return t.call(t.attribute(args[0], "abs"), {}, {});
}

// dict(mapping or pairs, **kwargs) and collections.OrderedDict(...) as dicts of the trace.
VarRef dict_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs& kwargs) {
  // Always a dict of the trace, so that values stored into it later may be traced.
  if (args.size() > 1) return nullptr;
  auto d = std::make_shared<DictVar>();
  if (args.size() == 1) {
    PyRef o = as<TensorVar>(args[0]) ? PyRef() : t.to_python(args[0]);
    if (o && PyDict_Check(o.get())) {
      PyObject *key, *value;
      for (Py_ssize_t pos = 0; PyDict_Next(o.get(), &pos, &key, &value);) d->set(PyRef::borrow(key), t.wrap(value, Source()));
    } else if (auto* from = as<DictVar>(args[0])) {
      d->keys = from->keys;
      d->values = from->values;
    } else {
      for (const VarRef& pair : remaining(t, args[0])) {
        auto* kv = as<SequenceVar>(pair);
        PyRef key = kv && kv->items.size() == 2 ? t.to_python(kv->items[0]) : PyRef();
        if (!key) t.graph_break("unsupported Python", "dict() of " + pair->describe(), "pass (key, value) pairs with constant keys");
        d->set(key, kv->items[1]);
      }
    }
  }
  for (const auto& [k, v] : kwargs) d->set(PyRef::steal(PyUnicode_FromString(k.c_str())), v);
  return d;
}

// sorted(iterable, key=None, reverse=False) over traced items, by Python keys.
VarRef sorted_(Translator& t, const std::string&, const std::vector<VarRef>& args, const Kwargs& kwargs) {
  if (args.size() != 1 || all_python(t, args)) return nullptr;
  return tuple_of(sorted_items(t, remaining(t, args[0]), kwargs), SequenceVar::Kind::List);
}

// operator.neg / pos / abs / not_ / truth / getitem / contains on traced values.
VarRef operator_unary(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  if (all_python(t, args)) return nullptr;
  if (name == "operator.getitem" && args.size() == 2) return t.subscript(args[0], args[1]);
  if (args.size() != 1 || !as<TensorVar>(args[0])) return nullptr;
  const char* method = name == "operator.neg" ? "neg" : name == "operator.abs" ? "abs" : nullptr;
  if (name == "operator.pos") return args[0];
  if (!method) return nullptr;
  return t.call(t.attribute(args[0], method), {}, {});
}

// operator.add(a, b) and its kin are Python's binary operators.
VarRef operator_(Translator& t, const std::string& name, const std::vector<VarRef>& args, const Kwargs&) {
  static const std::map<std::string, std::string> symbols = {
      {"operator.add", "+"}, {"operator.sub", "-"},       {"operator.mul", "*"}, {"operator.truediv", "/"},
      {"operator.floordiv", "//"}, {"operator.mod", "%"}, {"operator.pow", "**"}, {"operator.matmul", "@"},
      {"operator.and_", "&"}, {"operator.or_", "|"},      {"operator.xor", "^"}};
  if (args.size() != 2) return nullptr;
  return t.binary_op(symbols.at(name), args[0], args[1]);
}

const std::map<std::string, BuiltinHandler>& handlers() {
  static const std::map<std::string, BuiltinHandler> table = {
      {"len", len_},           {"type", type_},         {"any", any_all},          {"all", any_all},
      {"isinstance", isinstance_}, {"getattr", getattr_hasattr}, {"hasattr", getattr_hasattr},
      {"enumerate", enumerate_}, {"zip", zip_},         {"reversed", reversed_},   {"iter", iter_},
      {"next", next_},         {"tuple", sequence_},    {"list", sequence_},       {"sum", sum_},
      {"print", print_},       {"min", min_max},        {"max", min_max},          {"map", map_},
      {"filter", filter_},     {"itertools.chain", chain_}, {"functools.reduce", reduce_},
      {"operator.add", operator_}, {"operator.sub", operator_}, {"operator.mul", operator_},
      {"operator.truediv", operator_}, {"operator.floordiv", operator_}, {"operator.mod", operator_},
      {"operator.pow", operator_}, {"operator.matmul", operator_}, {"operator.and_", operator_},
      {"operator.or_", operator_}, {"operator.xor", operator_}, {"abs", abs_}, {"dict", dict_}, {"setattr", setattr_},
      {"collections.OrderedDict", dict_},
      {"sorted", sorted_}, {"operator.neg", operator_unary}, {"operator.pos", operator_unary},
      {"operator.abs", operator_unary}, {"operator.getitem", operator_unary}};
  return table;
}

// The callables evaluated here, by identity: every name of the handler table (a builtin, or a
// function of itertools, functools or operator), and the builtins that only run for real on
// Python values, with no handler.
const std::map<PyObject*, std::string>& symbolic_callables() {
  static const std::map<PyObject*, std::string> callables = [] {
    std::map<PyObject*, std::string> m;
    PyObject* builtins = PyEval_GetBuiltins();
    for (const char* n : {"range", "int", "float", "bool", "round", "divmod"})
      if (PyObject* o = PyDict_GetItemString(builtins, n)) m.emplace(o, n);
    for (const auto& [name, handler] : handlers()) {
      const size_t dot = name.find('.');
      if (dot == std::string::npos) {
        if (PyObject* o = PyDict_GetItemString(builtins, name.c_str())) m.emplace(o, name);
        continue;
      }
      PyObject* o = PyObject_GetAttrString(import(name.substr(0, dot).c_str()).get(), name.substr(dot + 1).c_str());
      if (!o) {
        PyErr_Clear();
        continue;
      }
      m.emplace(o, name);  // a module function lives as long as its module: not released
    }
    return m;
  }();
  return callables;
}

}  // namespace

bool is_symbolic_builtin(PyObject* obj) { return symbolic_callables().count(obj) > 0; }

std::string symbolic_builtin_name(PyObject* obj) {
  auto it = symbolic_callables().find(obj);
  return it == symbolic_callables().end() ? std::string() : it->second;
}

VarRef call_builtin(Translator& t, const VarRef& fn, std::vector<VarRef> args, Kwargs kwargs) {
  const std::string& name = as<BuiltinVar>(fn)->name;
  if (auto it = handlers().find(name); it != handlers().end())
    if (VarRef r = it->second(t, name, args, kwargs)) return r;
  // Everything else runs for real on compile-time values (int(w), float(w) of a one-element
  // weight: its value).
  PyRef pargs = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i) {
    const bool scalar = name == "int" || name == "float" || name == "bool";
    PyRef a = !as<TensorVar>(args[i]) ? t.to_python(args[i]) : scalar ? t.weight_item(args[i]) : PyRef();
    if (!a)
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
    t.raise_pending(name + "()", "the traced code raised at compile time");
  PyRef result = PyRef::steal(r);
  return t.wrap(result.get(), Source());
}

}  // namespace aotrace::embed
