// Opcode handlers: loads and stores of fast locals, constants, globals, cells, attributes and
// subscripts, and the stack shuffles.
#include "embed/opcodes.h"
#include "embed/torch_ops.h"

namespace aotrace::embed {

namespace {

const std::string& local_name(const Frame& f, int i) {
  return f.bytecode->localsplus_names.at(static_cast<size_t>(i));
}

std::string name_of(const Frame& f, int i) {
  return py_str(PyTuple_GetItem(f.bytecode->names.get(), i));
}

void nop(Translator&, Frame&, const Instruction&) {}

void load_fast(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.locals.at(static_cast<size_t>(i.arg));
  if (!v)
    user_error("local variable '" + local_name(f, i.arg) + "' referenced before assignment", t.loc());
  f.push(v);
}

void store_fast(Translator&, Frame& f, const Instruction& i) {
  f.locals.at(static_cast<size_t>(i.arg)) = f.pop();
}

void delete_fast(Translator&, Frame& f, const Instruction& i) {
  f.locals.at(static_cast<size_t>(i.arg)) = nullptr;
}

void load_const(Translator& t, Frame& f, const Instruction& i) {
  f.push(t.constant(PyTuple_GetItem(f.bytecode->consts.get(), i.arg)));
}

void load_global(Translator& t, Frame& f, const Instruction& i) {
  const std::string name = name_of(f, i.arg >> 1);
  if (i.arg & 1) f.push(std::make_shared<NullVar>());
  PyObject* v = PyDict_GetItemString(f.globals.get(), name.c_str());
  if (v) {
    f.push(t.wrap(v, Source::global(name)));
    return;
  }
  v = PyDict_GetItemString(f.builtins.get(), name.c_str());
  if (!v) user_error("name '" + name + "' is not defined", t.loc());
  f.push(t.wrap(v, Source()));
}

void store_global(Translator& t, Frame& f, const Instruction& i) {
  t.graph_break("side effect", "assignment to global '" + name_of(f, i.arg) + "'",
                "avoid changing global state in the traced function");
}

void load_attr(Translator& t, Frame& f, const Instruction& i) {
  VarRef obj = f.pop();
  f.push(t.attribute(obj, name_of(f, i.arg)));
}

// LOAD_METHOD pushes [NULL, callable]; CALL handles both layouts the same way.
void load_method(Translator& t, Frame& f, const Instruction& i) {
  VarRef obj = f.pop();
  VarRef callable = t.attribute(obj, name_of(f, i.arg));
  f.push(std::make_shared<NullVar>());
  f.push(callable);
}

void store_attr(Translator& t, Frame& f, const Instruction& i) {
  VarRef obj = f.pop();
  VarRef value = f.pop();
  if (t.eager()) {  // after a graph break: the assignment runs for real
    PyRef o = t.to_python(obj), v = t.to_python(value);
    if (o && v && PyObject_SetAttrString(o.get(), name_of(f, i.arg).c_str(), v.get()) == 0) return;
    PyErr_Clear();
  }
  obj->setattr(t, name_of(f, i.arg), std::move(value));
}

void binary_subscr(Translator& t, Frame& f, const Instruction&) {
  VarRef index = f.pop();
  VarRef obj = f.pop();
  f.push(t.subscript(obj, index));
}

void store_subscr(Translator& t, Frame& f, const Instruction&) {
  VarRef index = f.pop();
  VarRef obj = f.pop();
  VarRef value = f.pop();
  if (auto* seq = as<SequenceVar>(obj); seq && seq->kind == SequenceVar::Kind::List) {
    PyRef idx = t.to_python(index);
    if (idx && PyLong_Check(idx.get())) {
      int64_t k = PyLong_AsLongLong(idx.get());
      if (k < 0) k += static_cast<int64_t>(seq->items.size());
      if (k >= 0 && k < static_cast<int64_t>(seq->items.size())) {
        t.note_mutation(obj);
        seq->items[static_cast<size_t>(k)] = value;
        return;
      }
    }
  }
  if (auto* d = as<DictVar>(obj)) {
    PyRef key = t.to_python(index);
    if (!key) t.graph_break("unsupported Python", "a dict keyed by " + index->describe(), "");
    t.note_mutation(obj);
    d->set(key, value);
    return;
  }
  if (t.eager()) {  // after a graph break: the assignment runs for real
    PyRef o = t.to_python(obj), k = t.to_python(index), v = t.to_python(value);
    if (o && k && v && PyObject_SetItem(o.get(), k.get(), v.get()) == 0) return;
    PyErr_Clear();
  }
  if (as<TensorVar>(obj)) {
    const TorchOp* op = tensor_method("__setitem__");
    AOT_CHECK(op, "the op table has no Tensor.__setitem__");
    op->call(t, CallArgs{{obj, index, value}, {}});
    return;
  }
  t.graph_break("side effect", "item assignment on " + obj->describe(),
                "assign into a local list, or build a new value");
}

void delete_subscr(Translator& t, Frame& f, const Instruction&) {
  VarRef index = f.pop();
  VarRef obj = f.pop();
  PyRef key = t.to_python(index);
  if (auto* d = as<DictVar>(obj); d && key) {
    const int k = d->find(key.get());
    if (k >= 0) {
      t.note_mutation(obj);
      d->keys.erase(d->keys.begin() + k);
      d->values.erase(d->values.begin() + k);
      return;
    }
  }
  if (auto* seq = as<SequenceVar>(obj); seq && key && PyLong_Check(key.get()) && seq->kind == SequenceVar::Kind::List) {
    int64_t k = PyLong_AsLongLong(key.get());
    if (k < 0) k += static_cast<int64_t>(seq->items.size());
    if (k >= 0 && k < static_cast<int64_t>(seq->items.size())) {
      seq->items.erase(seq->items.begin() + k);
      return;
    }
  }
  t.graph_break("side effect", "del of an item of " + obj->describe(), "build a new value instead");
}

void make_cell(Translator&, Frame& f, const Instruction& i) {
  auto& slot = f.locals.at(static_cast<size_t>(i.arg));
  slot = std::make_shared<CellVar>(slot);
}

void copy_free_vars(Translator& t, Frame& f, const Instruction& i) {
  const size_t first = f.locals.size() - static_cast<size_t>(i.arg);
  if (f.closure) {
    for (int k = 0; k < i.arg; ++k) f.locals[first + static_cast<size_t>(k)] = f.closure->at(static_cast<size_t>(k));
    return;
  }
  PyRef closure = getattr(f.function.get(), "__closure__");
  for (int k = 0; k < i.arg; ++k) {
    PyObject* cell = PyTuple_GetItem(closure.get(), k);
    PyObject* contents = PyCell_GET(cell);
    f.locals[first + static_cast<size_t>(k)] =
        std::make_shared<CellVar>(contents ? t.wrap(contents, Source()) : nullptr);
  }
}

void load_deref(Translator& t, Frame& f, const Instruction& i) {
  auto* cell = as<CellVar>(f.locals.at(static_cast<size_t>(i.arg)));
  AOT_CHECK(cell, "LOAD_DEREF of a slot that holds no cell");
  if (!cell->contents)
    user_error("free variable '" + local_name(f, i.arg) + "' referenced before assignment", t.loc());
  f.push(cell->contents);
}

void store_deref(Translator&, Frame& f, const Instruction& i) {
  auto* cell = as<CellVar>(f.locals.at(static_cast<size_t>(i.arg)));
  AOT_CHECK(cell, "STORE_DEREF of a slot that holds no cell");
  cell->contents = f.pop();
}

void load_closure(Translator&, Frame& f, const Instruction& i) {
  f.push(f.locals.at(static_cast<size_t>(i.arg)));
}

void push_null(Translator&, Frame& f, const Instruction&) { f.push(std::make_shared<NullVar>()); }
void pop_top(Translator&, Frame& f, const Instruction&) { f.pop(); }
void copy(Translator&, Frame& f, const Instruction& i) { f.push(f.top(i.arg - 1)); }
void swap(Translator&, Frame& f, const Instruction& i) { std::swap(f.top(0), f.top(i.arg - 1)); }

// import m / from m import n inside the traced function: the import runs for real.
void import_name(Translator& t, Frame& f, const Instruction& i) {
  PyRef fromlist = t.to_python(f.pop());
  PyRef level = t.to_python(f.pop());
  PyRef name = PyRef::borrow(PyTuple_GetItem(f.bytecode->names.get(), i.arg));
  PyObject* m = PyImport_ImportModuleLevelObject(name.get(), f.globals.get(), nullptr, fromlist.get(),
                                                 static_cast<int>(PyLong_AsLong(level.get())));
  if (!m) t.graph_break("python exception", "import raised " + fetch_python_error(), "");
  PyRef module = PyRef::steal(m);
  f.push(t.constant(module.get()));
}

void import_from(Translator& t, Frame& f, const Instruction& i) {
  f.push(t.attribute(f.top(), name_of(f, i.arg)));
}

void load_assertion_error(Translator& t, Frame& f, const Instruction&) {
  f.push(t.constant(PyExc_AssertionError));
}

}  // namespace

HandlerList load_store_handlers() {
  return {
      {"NOP", nop},
      {"RESUME", nop},
      {"CACHE", nop},
      {"EXTENDED_ARG", nop},
      {"LOAD_FAST", load_fast},
      {"STORE_FAST", store_fast},
      {"DELETE_FAST", delete_fast},
      {"LOAD_CONST", load_const},
      {"LOAD_GLOBAL", load_global},
      {"STORE_GLOBAL", store_global},
      {"LOAD_ATTR", load_attr},
      {"LOAD_METHOD", load_method},
      {"STORE_ATTR", store_attr},
      {"BINARY_SUBSCR", binary_subscr},
      {"STORE_SUBSCR", store_subscr},
      {"DELETE_SUBSCR", delete_subscr},
      {"MAKE_CELL", make_cell},
      {"COPY_FREE_VARS", copy_free_vars},
      {"LOAD_DEREF", load_deref},
      {"STORE_DEREF", store_deref},
      {"LOAD_CLOSURE", load_closure},
      {"PUSH_NULL", push_null},
      {"POP_TOP", pop_top},
      {"COPY", copy},
      {"SWAP", swap},
      {"LOAD_ASSERTION_ERROR", load_assertion_error},
      {"IMPORT_NAME", import_name},
      {"IMPORT_FROM", import_from},
  };
}

}  // namespace aotrace::embed
