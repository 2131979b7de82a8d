// Opcode handlers: tuples, lists, dicts, slices, unpacking and strings.
#include "embed/opcodes.h"

namespace aotrace::embed {

namespace {

using Kind = SequenceVar::Kind;

void build_tuple(Translator&, Frame& f, const Instruction& i) {
  f.push(std::make_shared<SequenceVar>(Kind::Tuple, f.pop_n(static_cast<size_t>(i.arg))));
}

void build_list(Translator&, Frame& f, const Instruction& i) {
  f.push(std::make_shared<SequenceVar>(Kind::List, f.pop_n(static_cast<size_t>(i.arg))));
}

// Sets hold compile-time values only (a real Python set, as a ConstVar): a tensor's hash is its
// identity, which a graph value does not have.
PyRef set_item(Translator& t, const VarRef& v) {
  PyRef o = t.to_python(v);
  if (!o)
    t.graph_break("unsupported Python", "a set holding " + v->describe(),
                  "keep tensors in lists or dicts; sets may hold Python values only");
  return o;
}

void build_set(Translator& t, Frame& f, const Instruction& i) {
  std::vector<VarRef> items = f.pop_n(static_cast<size_t>(i.arg));
  PyRef set = check(PySet_New(nullptr), "set");
  for (const auto& item : items)
    if (PySet_Add(set.get(), set_item(t, item).get()) != 0)
      t.graph_break("python exception", "building a set raised " + fetch_python_error(), "");
  f.push(t.constant(set.get()));
}

PyObject* set_below(Translator& t, Frame& f, int depth) {
  auto* c = as<ConstVar>(f.top(depth));
  AOT_CHECK(c && PySet_Check(c->obj.get()), "SET_ADD/SET_UPDATE target is not a set");
  return c->obj.get();
}

void set_add(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  if (PySet_Add(set_below(t, f, i.arg - 1), set_item(t, v).get()) != 0)
    t.graph_break("python exception", "set.add raised " + fetch_python_error(), "");
}

void set_update(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  PyRef iterable = set_item(t, v);
  if (_PySet_Update(set_below(t, f, i.arg - 1), iterable.get()) != 0)
    t.graph_break("python exception", "set.update raised " + fetch_python_error(), "");
}

std::vector<VarRef> items_of(Translator& t, const VarRef& v) {
  if (auto* seq = as<SequenceVar>(v)) return seq->items;
  VarRef it = t.iterate(v);
  return as<IteratorVar>(it)->items;
}

void list_append(Translator&, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  auto* list = as<SequenceVar>(f.top(i.arg - 1));
  AOT_CHECK(list, "LIST_APPEND target is not a list");
  list->items.push_back(v);
}

void list_extend(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  auto* list = as<SequenceVar>(f.top(i.arg - 1));
  AOT_CHECK(list, "LIST_EXTEND target is not a list");
  for (auto& item : items_of(t, v)) list->items.push_back(item);
}

void list_to_tuple(Translator&, Frame& f, const Instruction&) {
  VarRef v = f.pop();
  auto* list = as<SequenceVar>(v);
  AOT_CHECK(list, "LIST_TO_TUPLE of a non-list");
  f.push(std::make_shared<SequenceVar>(Kind::Tuple, list->items));
}

void unpack_sequence(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  std::vector<VarRef> items = items_of(t, v);
  if (static_cast<int>(items.size()) != i.arg)
    user_error("cannot unpack " + v->describe() + " into " + std::to_string(i.arg) + " values",
               t.loc());
  for (auto it = items.rbegin(); it != items.rend(); ++it) f.push(*it);
}

void build_slice(Translator&, Frame& f, const Instruction& i) {
  VarRef step = i.arg == 3 ? f.pop() : nullptr;
  VarRef stop = f.pop();
  VarRef start = f.pop();
  if (!step) step = std::make_shared<ConstVar>(PyRef::borrow(Py_None), Source());
  f.push(std::make_shared<SliceVar>(start, stop, step));
}

// Dicts are DictVars: compile-time keys, values of any kind (tensors too).
PyRef dict_key(Translator& t, const VarRef& k) {
  PyRef key = t.to_python(k);
  if (!key || PyObject_Hash(key.get()) == -1) {
    PyErr_Clear();
    t.graph_break("unsupported Python", "a dict keyed by " + k->describe(), "use string keys");
  }
  return key;
}

void build_const_key_map(Translator& t, Frame& f, const Instruction& i) {
  VarRef keys = f.pop();
  std::vector<VarRef> values = f.pop_n(static_cast<size_t>(i.arg));
  PyRef k = t.to_python(keys);
  auto d = std::make_shared<DictVar>();
  for (size_t n = 0; n < values.size(); ++n)
    d->set(PyRef::borrow(PyTuple_GetItem(k.get(), static_cast<Py_ssize_t>(n))), values[n]);
  f.push(d);
}

void build_map(Translator& t, Frame& f, const Instruction& i) {
  std::vector<VarRef> kv = f.pop_n(static_cast<size_t>(2 * i.arg));
  auto d = std::make_shared<DictVar>();
  for (size_t n = 0; n < kv.size(); n += 2) d->set(dict_key(t, kv[n]), kv[n + 1]);
  f.push(d);
}

void merge_into(Translator& t, DictVar& target, const VarRef& v) {
  if (auto* src = as<DictVar>(v)) {
    for (size_t n = 0; n < src->keys.size(); ++n) target.set(src->keys[n], src->values[n]);
    return;
  }
  PyRef src = t.to_python(v);
  if (!src || !PyDict_Check(src.get()))
    t.graph_break("unsupported Python", "** of " + v->describe(), "pass a dict");
  PyObject *k, *val;
  Py_ssize_t pos = 0;
  while (PyDict_Next(src.get(), &pos, &k, &val)) target.set(PyRef::borrow(k), t.wrap(val, Source()));
}

void dict_merge(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  auto* target = as<DictVar>(f.top(i.arg - 1));
  AOT_CHECK(target, "DICT_MERGE target is not a dict");
  merge_into(t, *target, v);
}

void map_add(Translator& t, Frame& f, const Instruction& i) {
  VarRef value = f.pop();
  VarRef key = f.pop();
  auto* target = as<DictVar>(f.top(i.arg - 1));
  AOT_CHECK(target, "MAP_ADD target is not a dict");
  target->set(dict_key(t, key), value);
}

// a, *rest, b = seq: arg = (number after the star) << 8 | (number before it).
void unpack_ex(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  std::vector<VarRef> items = items_of(t, v);
  const size_t before = static_cast<size_t>(i.arg & 0xff), after = static_cast<size_t>(i.arg >> 8);
  if (items.size() < before + after)
    user_error("cannot unpack " + v->describe() + " into at least " + std::to_string(before + after) +
                   " values",
               t.loc());
  std::vector<VarRef> out(items.begin(), items.begin() + static_cast<long>(before));
  out.push_back(std::make_shared<SequenceVar>(
      Kind::List, std::vector<VarRef>(items.begin() + static_cast<long>(before),
                                      items.end() - static_cast<long>(after))));
  out.insert(out.end(), items.end() - static_cast<long>(after), items.end());
  for (auto it = out.rbegin(); it != out.rend(); ++it) f.push(*it);
}

void format_value(Translator& t, Frame& f, const Instruction& i) {
  PyRef spec;
  if ((i.arg & 0x04) == 0x04) spec = t.to_python(f.pop());
  VarRef v = f.pop();
  PyRef o = t.to_python(v);
  if (!o)
    t.graph_break("side effect", "formatting " + v->describe() + " into a string",
                  "format tensor values outside the traced function");
  const int conv = i.arg & 0x03;
  if (conv == 1) o = PyRef::steal(PyObject_Str(o.get()));
  if (conv == 2) o = PyRef::steal(PyObject_Repr(o.get()));
  if (conv == 3) o = PyRef::steal(PyObject_ASCII(o.get()));
  PyRef r = check(PyObject_Format(o.get(), spec ? spec.get() : nullptr), "format");
  f.push(t.constant(r.get()));
}

void build_string(Translator& t, Frame& f, const Instruction& i) {
  std::vector<VarRef> parts = f.pop_n(static_cast<size_t>(i.arg));
  std::string s;
  for (auto& p : parts) s += py_str(t.to_python(p).get());
  PyRef r = PyRef::steal(PyUnicode_FromString(s.c_str()));
  f.push(t.constant(r.get()));
}

}  // namespace

HandlerList container_handlers() {
  return {
      {"BUILD_TUPLE", build_tuple},
      {"BUILD_LIST", build_list},
      {"BUILD_SET", build_set},
      {"SET_ADD", set_add},
      {"SET_UPDATE", set_update},
      {"LIST_APPEND", list_append},
      {"LIST_EXTEND", list_extend},
      {"LIST_TO_TUPLE", list_to_tuple},
      {"UNPACK_SEQUENCE", unpack_sequence},
      {"BUILD_SLICE", build_slice},
      {"BUILD_CONST_KEY_MAP", build_const_key_map},
      {"BUILD_MAP", build_map},
      {"DICT_MERGE", dict_merge},
      {"DICT_UPDATE", dict_merge},
      {"MAP_ADD", map_add},
      {"UNPACK_EX", unpack_ex},
      {"FORMAT_VALUE", format_value},
      {"BUILD_STRING", build_string},
  };
}

}  // namespace aotrace::embed
