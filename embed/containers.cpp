// Containers the Translator evaluates itself: dicts whose values may be tensors (DictVar), list
// methods that mutate a traced list, ModuleDict/ModuleList views, and Tensor methods that are
// shape arithmetic (numel) or in-place updates of an intermediate tensor (add_, mul_, …).
#include <algorithm>

#include "embed/torch_ops.h"
#include "embed/torch_ops_args.h"
#include "embed/translator.h"

namespace aotrace::embed {

int DictVar::find(PyObject* key) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    const int eq = PyObject_RichCompareBool(keys[i].get(), key, Py_EQ);
    if (eq < 0) PyErr_Clear();
    if (eq == 1) return static_cast<int>(i);
  }
  return -1;
}

void DictVar::set(PyRef key, VarRef value) {
  const int k = find(key.get());
  if (k >= 0) {
    values[static_cast<size_t>(k)] = std::move(value);
    return;
  }
  keys.push_back(std::move(key));
  values.push_back(std::move(value));
}

namespace {

VarRef tuple_of(std::vector<VarRef> items) {
  return std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::move(items));
}

// A ModuleDict as a DictVar of its children, each with its source (L['self'].heads['a']).
std::shared_ptr<DictVar> module_dict(Translator& t, const ModuleVar& m) {
  auto d = std::make_shared<DictVar>(m.source);
  PyRef modules = getattr(m.module.get(), "_modules");
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(modules.get(), &pos, &key, &value))
    d->set(PyRef::borrow(key), t.wrap(value, m.source.item(py_str(key))));
  return d;
}

bool is_inplace_method(const std::string& name) {
  return name.size() > 1 && name.back() == '_' && name.front() != '_';
}

}  // namespace

std::vector<VarRef> dict_items(Translator& t, const DictVar& d, const std::string& which) {
  std::vector<VarRef> out;
  for (size_t i = 0; i < d.keys.size(); ++i) {
    VarRef key = t.constant(d.keys[i].get());
    if (which == "keys") out.push_back(key);
    else if (which == "values") out.push_back(d.values[i]);
    else out.push_back(tuple_of({key, d.values[i]}));
  }
  return out;
}

std::vector<VarRef> sorted_items(Translator& t, std::vector<VarRef> items,
                                 const std::vector<std::pair<std::string, VarRef>>& kwargs) {
  VarRef key;
  bool reverse = false;
  for (const auto& [k, v] : kwargs) {
    if (k == "key") key = as<ConstVar>(v) && as<ConstVar>(v)->obj.get() == Py_None ? nullptr : v;
    else if (k == "reverse") reverse = t.truth(v);
    else user_error("sort() got an unexpected keyword argument '" + k + "'", t.loc());
  }
  std::vector<PyRef> keys;
  for (const VarRef& item : items) {
    VarRef k = key ? t.call(key, {item}, {}) : item;
    PyRef pk = as<TensorVar>(k) ? PyRef() : t.to_python(k);
    if (!pk)
      t.graph_break("unsupported Python", "sorting by " + k->describe() + " (its order depends on tensor values)",
                    "sort by a Python value, e.g. key=lambda item: item[0] where item[0] is a number or string");
    keys.push_back(std::move(pk));
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto less = [&](size_t a, size_t b) {
    const int r = PyObject_RichCompareBool(keys[a].get(), keys[b].get(), Py_LT);
    if (r < 0) t.graph_break("python exception", "comparing sort keys raised " + fetch_python_error(), "");
    return r == 1;
  };
  // Python's reverse=True keeps equal items in their order, as this does.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return reverse ? less(b, a) : less(a, b); });
  std::vector<VarRef> out;
  for (size_t i : order) out.push_back(items[i]);
  return out;
}

int find_item(Translator& t, const std::vector<VarRef>& items, const VarRef& x) {
  auto* xt = as<TensorVar>(x);
  PyRef px = xt ? PyRef() : t.to_python(x);
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i] == x) return static_cast<int>(i);
    if (auto* it = as<TensorVar>(items[i]); it && xt && it->value == xt->value) return static_cast<int>(i);
    if (!px || as<TensorVar>(items[i])) continue;
    PyRef pi = t.to_python(items[i]);
    if (!pi) continue;
    const int r = PyObject_RichCompareBool(pi.get(), px.get(), Py_EQ);
    if (r < 0) t.graph_break("python exception", "comparing list items raised " + fetch_python_error(), "");
    if (r == 1) return static_cast<int>(i);
  }
  return -1;
}

VarRef container_method(Translator& t, const VarRef& obj, const std::string& name) {
  auto method = [&](VarRef self) { return std::make_shared<ContainerMethodVar>(std::move(self), name); };
  if (auto* seq = as<SequenceVar>(obj)) {
    static const char* const list_methods[] = {"append", "extend", "insert", "pop",  "clear", "reverse",
                                               "index",  "count",  "sort",   "remove", "copy"};
    for (const char* m : list_methods)
      if (name == m && (seq->kind == SequenceVar::Kind::List || name == "index" || name == "count"))
        return method(obj);
    if (name == "numel" && seq->kind == SequenceVar::Kind::Size) return method(obj);
    if ((name == "_asdict" || name == "_replace") && !seq->fields.empty()) return method(obj);
    return nullptr;
  }
  if (auto* d = as<DictVar>(obj)) {
    if (d->dataclass) return nullptr;  // an object's attributes, not a dict's methods
    if (name == "items" || name == "keys" || name == "values" || name == "get" || name == "update" ||
        name == "pop" || name == "clear" || name == "setdefault" || name == "copy" || name == "popitem" ||
        name == "move_to_end")
      return method(obj);
    return nullptr;
  }
  if (auto* m = as<ModuleVar>(obj)) {
    if ((name == "items" || name == "keys" || name == "values") &&
        is_instance_of(m->module.get(), "torch.nn", "ModuleDict"))
      return method(module_dict(t, *m));
    return nullptr;
  }
  if (as<TensorVar>(obj)) {
    if (name == "numel" || name == "nelement") return method(obj);
    // x.add_(y) where x.add exists; in-place-only methods (fill_, copy_) have builders of their own.
    if (is_inplace_method(name) && !t.eager() && tensor_method(name.substr(0, name.size() - 1)))
      return method(obj);
  }
  return nullptr;
}

VarRef call_container_method(Translator& t, const ContainerMethodVar& m, std::vector<VarRef> args,
                             std::vector<std::pair<std::string, VarRef>> kwargs) {
  const std::string& name = m.name;
  auto arg = [&](size_t i) -> VarRef {
    if (i >= args.size()) user_error(name + "() is missing an argument", t.loc());
    return args[i];
  };
  if (as<TensorVar>(m.self)) {
    if (name == "numel" || name == "nelement") {
      VarRef shape = tensor_attribute(t, m.self, "shape");
      PyRef one = PyRef::steal(PyLong_FromLong(1));
      VarRef n = t.constant(one.get());
      for (auto& d : as<SequenceVar>(shape)->items) n = t.binary_op("*", n, d);
      return n;
    }
    // x.add_(y): computed out of place, then written into x (its dtype and shape kept) by the
    // one in-place rule, ops::inplace, which refuses inputs and weights.
    const TorchOp* op = tensor_method(name.substr(0, name.size() - 1));
    if (!op)
      t.graph_break("torch callable with no op mapping", "Tensor." + name + " has no mapping to graph ops",
                    "use an operation aotrace supports");
    const std::string what = "Tensor." + name;
    ops::refuse_inplace_on_outside(t, m.self, what, "x = x." + name.substr(0, name.size() - 1) + "(…)");
    CallArgs ca{std::move(args), std::move(kwargs)};
    ca.args.insert(ca.args.begin(), m.self);
    return ops::inplace(t, m.self, op->call(t, ca), what.c_str());
  }
  if (auto* seq = as<SequenceVar>(m.self)) {
    static const char* const mutating[] = {"append", "clear", "reverse", "extend", "insert", "pop", "sort", "remove"};
    for (const char* mname : mutating)
      if (name == mname) t.note_mutation(m.self);
    if (name == "append") {
      seq->items.push_back(arg(0));
      return t.constant(Py_None);
    }
    if (name == "clear" || name == "reverse") {
      if (name == "clear") seq->items.clear();
      else std::reverse(seq->items.begin(), seq->items.end());
      return t.constant(Py_None);
    }
    if (name == "extend") {
      VarRef it = t.iterate(arg(0));
      for (auto& v : as<IteratorVar>(it)->items) seq->items.push_back(v);
      return t.constant(Py_None);
    }
    if (name == "insert") {
      PyRef i = t.to_python(arg(0));
      Py_ssize_t k = i ? PyLong_AsSsize_t(i.get()) : 0;
      const auto n = static_cast<Py_ssize_t>(seq->items.size());
      if (k < 0) k = std::max<Py_ssize_t>(0, k + n);
      k = std::min(k, n);
      seq->items.insert(seq->items.begin() + k, arg(1));
      return t.constant(Py_None);
    }
    if (name == "pop") {
      if (seq->items.empty()) t.graph_break("python exception", "pop from an empty list", "");
      Py_ssize_t k = static_cast<Py_ssize_t>(seq->items.size()) - 1;
      if (!args.empty()) {
        PyRef i = t.to_python(args[0]);
        k = PyLong_AsSsize_t(i.get());
        if (k < 0) k += static_cast<Py_ssize_t>(seq->items.size());
      }
      VarRef v = seq->items.at(static_cast<size_t>(k));
      seq->items.erase(seq->items.begin() + k);
      return v;
    }
    if (name == "numel") {
      PyRef one = PyRef::steal(PyLong_FromLong(1));
      VarRef n = t.constant(one.get());
      for (auto& d : seq->items) n = t.binary_op("*", n, d);
      return n;
    }
    if (name == "_asdict") {  // a named tuple's fields as a dict
      auto d = std::make_shared<DictVar>();
      for (size_t i = 0; i < seq->fields.size() && i < seq->items.size(); ++i)
        d->set(PyRef::steal(PyUnicode_FromString(seq->fields[i].c_str())), seq->items[i]);
      return d;
    }
    if (name == "_replace") {
      auto copy = std::make_shared<SequenceVar>(seq->kind, seq->items);
      copy->fields = seq->fields;
      for (auto& [k, v] : kwargs) {
        auto it = std::find(copy->fields.begin(), copy->fields.end(), k);
        if (it == copy->fields.end()) user_error("_replace() got an unexpected field name '" + k + "'", t.loc());
        copy->items[static_cast<size_t>(it - copy->fields.begin())] = v;
      }
      return copy;
    }
    if (name == "sort") {
      seq->items = sorted_items(t, seq->items, kwargs);
      return t.constant(Py_None);
    }
    if (name == "copy") return std::make_shared<SequenceVar>(seq->kind, seq->items);
    if (name == "remove" || (name == "index" && args.size() == 1) ||
        (name == "count" && (as<TensorVar>(arg(0)) || !t.to_python(m.self)))) {
      if (name == "count") {
        long long n = 0;
        for (const VarRef& item : seq->items) n += find_item(t, {item}, arg(0)) == 0;
        PyRef r = PyRef::steal(PyLong_FromLongLong(n));
        return t.constant(r.get());
      }
      const int k = find_item(t, seq->items, arg(0));
      if (k < 0) t.graph_break("python exception", "ValueError: list." + name + "(x): x not in list", "");
      if (name == "index") {
        PyRef r = PyRef::steal(PyLong_FromLong(k));
        return t.constant(r.get());
      }
      seq->items.erase(seq->items.begin() + k);
      return t.constant(Py_None);
    }
    // index(x, start, end) / count on compile-time items.
    PyRef self = t.to_python(m.self), x = t.to_python(arg(0));
    if (!self || !x) t.graph_break("unsupported Python", name + "() on " + m.self->describe(), "");
    PyRef r = PyRef::steal(PyObject_CallMethod(self.get(), name.c_str(), "O", x.get()));
    if (!r) t.graph_break("python exception", name + "() raised " + fetch_python_error(), "");
    return t.wrap(r.get(), Source());
  }
  auto* d = as<DictVar>(m.self);
  AOT_CHECK(d, "container method " + name + " on " + m.self->describe());
  static const char* const mutating[] = {"clear", "setdefault", "pop", "popitem", "move_to_end", "update"};
  for (const char* mname : mutating)
    if (name == mname) t.note_mutation(m.self);
  if (name == "items" || name == "keys" || name == "values")
    return std::make_shared<IteratorVar>(dict_items(t, *d, name));
  if (name == "copy") {
    auto copy = std::make_shared<DictVar>();
    copy->keys = d->keys;
    copy->values = d->values;
    return copy;
  }
  if (name == "clear") {
    d->keys.clear();
    d->values.clear();
    return t.constant(Py_None);
  }
  if (name == "move_to_end" || name == "popitem") {  // OrderedDict's (last=True); popitem: dict's too
    VarRef last_arg = args.size() > (name == "popitem" ? 0u : 1u) ? args.back() : nullptr;
    for (auto& [k, v] : kwargs)
      if (k == "last") last_arg = v;
    const bool last = !last_arg || t.truth(last_arg);
    int k = static_cast<int>(d->keys.size()) - 1;
    if (name == "move_to_end") {
      PyRef key = t.to_python(arg(0));
      k = key ? d->find(key.get()) : -1;
      if (k < 0)
        t.raise_python(PyRef::steal(PyObject_CallFunctionObjArgs(PyExc_KeyError, key ? key.get() : Py_None, nullptr)),
                       "KeyError in move_to_end", "");
    } else if (k < 0) {
      t.raise_python(PyRef::steal(PyObject_CallFunction(PyExc_KeyError, "s", "popitem(): dictionary is empty")),
                     "KeyError in popitem", "");
    } else if (!last) {
      k = 0;
    }
    PyRef key = d->keys[static_cast<size_t>(k)];
    VarRef value = d->values[static_cast<size_t>(k)];
    d->keys.erase(d->keys.begin() + k);
    d->values.erase(d->values.begin() + k);
    if (name == "popitem") return std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::vector<VarRef>{t.constant(key.get()), value});
    d->keys.insert(last ? d->keys.end() : d->keys.begin(), key);
    d->values.insert(last ? d->values.end() : d->values.begin(), value);
    return t.constant(Py_None);
  }
  if (name == "setdefault") {
    PyRef key = t.to_python(arg(0));
    if (!key) t.graph_break("unsupported Python", "a dict keyed by " + arg(0)->describe(), "");
    if (const int k = d->find(key.get()); k >= 0) return d->values[static_cast<size_t>(k)];
    VarRef v = args.size() > 1 ? args[1] : t.constant(Py_None);
    d->set(key, v);
    return v;
  }
  if (name == "get" || name == "pop") {
    PyRef key = t.to_python(arg(0));
    const int k = key ? d->find(key.get()) : -1;
    if (k < 0) {
      if (args.size() > 1) return args[1];
      if (name == "get") return t.constant(Py_None);
      t.raise_python(PyRef::steal(PyObject_CallFunctionObjArgs(PyExc_KeyError, key ? key.get() : Py_None, nullptr)),
                     "KeyError in dict.pop", "");
    }
    VarRef v = d->values[static_cast<size_t>(k)];
    if (name == "pop") {
      d->keys.erase(d->keys.begin() + k);
      d->values.erase(d->values.begin() + k);
    }
    return v;
  }
  // update(other) / update(**kwargs)
  if (!args.empty()) {
    if (auto* other = as<DictVar>(args[0])) {
      for (size_t i = 0; i < other->keys.size(); ++i) d->set(other->keys[i], other->values[i]);
    } else {
      PyRef o = t.to_python(args[0]);
      if (!o || !PyDict_Check(o.get())) t.graph_break("unsupported Python", "dict.update of " + args[0]->describe(), "");
      PyObject *k, *v;
      Py_ssize_t pos = 0;
      while (PyDict_Next(o.get(), &pos, &k, &v)) d->set(PyRef::borrow(k), t.wrap(v, Source()));
    }
  }
  for (auto& [k, v] : kwargs) d->set(PyRef::steal(PyUnicode_FromString(k.c_str())), v);
  return t.constant(Py_None);
}

}  // namespace aotrace::embed
