// The Translator's core: frames, the dispatch loop, calls and inlining, graph breaks.
// Opcode handlers live in opcodes_*.cpp; value semantics (wrap, attributes, subscripts,
// operators, truth) in values.cpp; builtins in builtins.cpp; torch ops in torch_ops*.cpp.
#include "embed/translator.h"
#include "embed/torch_ops_args.h"

#include <cstdlib>
#include <algorithm>

#include "embed/torch_ops.h"

namespace aotrace::embed {

namespace {
constexpr int kMaxInlineDepth = 64;
constexpr int CO_VARARGS_FLAG = 0x04;
constexpr int CO_VARKEYWORDS_FLAG = 0x08;

// Library frames are inlined too, but a break is reported at the innermost user frame.
bool is_library_file(const std::string& file) {
  return file.find("/dist-packages/") != std::string::npos ||
         file.find("/site-packages/") != std::string::npos ||
         file.rfind("/usr/lib/python3", 0) == 0 || file.rfind("<frozen", 0) == 0;
}
}  // namespace

// ----------------------------------------------------------------------------------------------
// Frame and Bytecode

VarRef Frame::pop() {
  AOT_CHECK(!stack.empty(), "pop from an empty value stack in " + bytecode->function);
  VarRef v = std::move(stack.back());
  stack.pop_back();
  return v;
}

VarRef& Frame::top(int depth) {
  AOT_CHECK(static_cast<int>(stack.size()) > depth, "stack underflow in " + bytecode->function);
  return stack[stack.size() - 1 - static_cast<size_t>(depth)];
}

std::vector<VarRef> Frame::pop_n(size_t n) {
  AOT_CHECK(stack.size() >= n, "stack underflow in " + bytecode->function);
  std::vector<VarRef> out(std::make_move_iterator(stack.end() - static_cast<long>(n)),
                          std::make_move_iterator(stack.end()));
  stack.resize(stack.size() - n);
  return out;
}

size_t Bytecode::index_at(int offset) const {
  auto it = index_of_offset.find(offset);
  AOT_CHECK(it != index_of_offset.end(),
            "jump to offset " + std::to_string(offset) + " which starts no instruction");
  return it->second;
}

const Bytecode& Translator::bytecode_of(PyObject* code) {
  auto& slot = bytecode_cache_[code];
  if (slot) return *slot;
  auto bc = std::make_unique<Bytecode>();
  bc->code = PyRef::borrow(code);
  bc->filename = py_str(getattr(code, "co_filename").get());
  bc->function = py_str(getattr(code, "co_name").get());
  bc->consts = getattr(code, "co_consts");
  bc->names = getattr(code, "co_names");
  {
    PyRef varnames = getattr(code, "co_varnames"), cells = getattr(code, "co_cellvars"),
          frees = getattr(code, "co_freevars");
    for (Py_ssize_t i = 0; i < PyTuple_Size(varnames.get()); ++i)
      bc->localsplus_names.push_back(py_str(PyTuple_GetItem(varnames.get(), i)));
    const size_t nvars = bc->localsplus_names.size();
    for (Py_ssize_t i = 0; i < PyTuple_Size(cells.get()); ++i) {
      std::string n = py_str(PyTuple_GetItem(cells.get(), i));
      if (std::find(bc->localsplus_names.begin(), bc->localsplus_names.begin() + static_cast<long>(nvars), n) ==
          bc->localsplus_names.begin() + static_cast<long>(nvars))
        bc->localsplus_names.push_back(n);  // a cell that is also an argument shares its slot
    }
    bc->num_free = static_cast<int>(PyTuple_Size(frees.get()));
    for (Py_ssize_t i = 0; i < bc->num_free; ++i)
      bc->localsplus_names.push_back(py_str(PyTuple_GetItem(frees.get(), i)));
  }
  PyRef raw = getattr(code, "co_code");  // 3.11: the un-specialised bytecode
  const auto* bytes = reinterpret_cast<const uint8_t*>(PyBytes_AsString(raw.get()));
  const Py_ssize_t n = PyBytes_Size(raw.get());
  static const int extended_arg = opcode_number("EXTENDED_ARG");
  int arg = 0;
  for (Py_ssize_t i = 0; i + 1 < n;) {
    const int op = bytes[i];
    arg = (arg << 8) | bytes[i + 1];
    if (op == extended_arg) {
      i += 2;
      continue;
    }
    Instruction ins;
    ins.opcode = op;
    ins.arg = arg;
    ins.offset = static_cast<int>(i);
    ins.next_offset = static_cast<int>(i + 2 + 2 * inline_cache_entries(op));
    bc->index_of_offset[ins.offset] = bc->instructions.size();
    bc->instructions.push_back(ins);
    arg = 0;
    i = ins.next_offset;
  }
  // co_exceptiontable: entries of varints (6 bits a byte, 0x40 = more), in code units.
  PyRef table = getattr(code, "co_exceptiontable");
  const auto* tb = reinterpret_cast<const uint8_t*>(PyBytes_AsString(table.get()));
  const Py_ssize_t tn = PyBytes_Size(table.get());
  Py_ssize_t at = 0;
  auto varint = [&]() {
    int b = tb[at++], v = b & 63;
    while ((b & 64) && at < tn) {
      b = tb[at++];
      v = (v << 6) | (b & 63);
    }
    return v;
  };
  while (at < tn) {
    ExceptionEntry e;
    e.start = varint() * 2;
    e.end = e.start + varint() * 2;
    e.target = varint() * 2;
    const int depth_lasti = varint();
    e.depth = depth_lasti >> 1;
    e.lasti = depth_lasti & 1;
    bc->exception_table.push_back(e);
  }
  // Jumps may target an EXTENDED_ARG prefix: map those offsets to the instruction they prefix.
  for (Py_ssize_t i = 0; i + 1 < n; i += 2)
    if (bytes[i] == extended_arg && !bc->index_of_offset.count(static_cast<int>(i))) {
      auto next = bc->index_of_offset.lower_bound(static_cast<int>(i));
      if (next != bc->index_of_offset.end()) bc->index_of_offset[static_cast<int>(i)] = next->second;
    }
  slot = std::move(bc);
  return *slot;
}

const ExceptionEntry* Bytecode::handler_at(int offset) const {
  for (const ExceptionEntry& e : exception_table)
    if (e.start <= offset && offset < e.end) return &e;
  return nullptr;
}

// ----------------------------------------------------------------------------------------------
// Translator

Translator::Translator(Capture& out) : out_(out) { init_torch_ops(); }

SourceLoc Translator::loc() const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
    if (!is_library_file((*it)->bytecode->filename))
      return SourceLoc{(*it)->bytecode->filename, (*it)->line, 0, (*it)->bytecode->function};
  if (frames_.empty()) return {};
  const Frame* f = frames_.back();
  return SourceLoc{f->bytecode->filename, f->line, 0, f->bytecode->function};
}

void Translator::graph_break(std::string category, std::string reason, std::string hint) {
  GraphBreak b;
  b.category = std::move(category);
  b.reason = std::move(reason);
  b.hint = std::move(hint);
  for (const Frame* f : frames_)
    b.user_stack.push_back(SourceLoc{f->bytecode->filename, f->line, 0, f->bytecode->function});
  // Show the user's frames; library frames only when there is nothing else (or when
  // AOTRACE_LIBRARY_FRAMES=1 asks for them, to debug a break inside a library).
  std::vector<SourceLoc> user;
  for (const auto& l : b.user_stack)
    if (!is_library_file(l.file)) user.push_back(l);
  if (!user.empty() && !std::getenv("AOTRACE_LIBRARY_FRAMES")) b.user_stack = std::move(user);
  out_.breaks.push_back(std::move(b));
  throw GraphBreakSignal{out_.breaks.back().category, out_.breaks.back().reason,
                         out_.breaks.back().hint};
}

void Translator::raise_python(PyRef exc, std::string reason, std::string hint, bool user_error_if_uncaught) {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    Frame* f = *it;
    if (f->pc == 0) continue;
    const int offset = f->bytecode->instructions[f->pc - 1].offset;
    if (const ExceptionEntry* h = f->bytecode->handler_at(offset)) throw PythonRaise{exc, f, *h, offset};
  }
  if (user_error_if_uncaught) user_error(reason, loc(), hint);
  graph_break("python exception", std::move(reason), std::move(hint));
}

bool Translator::in_try_block() const {
  for (const Frame* f : frames_) {
    if (f->pc == 0) continue;
    if (f->bytecode->handler_at(f->bytecode->instructions[f->pc - 1].offset)) return true;
  }
  return false;
}

void Translator::raise_pending(const std::string& what, std::string hint) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb && value) PyException_SetTraceback(value, tb);
  PyRef exc = PyRef::steal(value);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  std::string text = exc ? type_name(exc.get()) : "an exception";
  if (exc) {
    PyRef s = PyRef::steal(PyObject_Str(exc.get()));
    if (s && PyUnicode_GetLength(s.get()) > 0) text += ": " + py_str(s.get());
    else PyErr_Clear();
  }
  if (!exc) exc = PyRef::steal(PyObject_CallNoArgs(PyExc_RuntimeError));
  raise_python(exc, what + " raised " + text, std::move(hint));
}

VarRef Translator::run(Frame& frame) {
  frames_.push_back(&frame);
  while (!frame.returned) {
    try {
      step(frame);
    } catch (const PythonRaise& e) {
      if (e.frame != &frame) {  // handled further out: this frame unwinds
        frames_.pop_back();
        throw;
      }
      // CPython's exception unwinding: the stack down to the handler's depth, the raising
      // offset (when asked), the exception; then the handler.
      frame.stack.resize(static_cast<size_t>(e.handler.depth));
      if (e.handler.lasti) {
        PyRef lasti = PyRef::steal(PyLong_FromLong(e.offset / 2));
        frame.push(constant(lasti.get()));
      }
      frame.push(constant(e.exc.get()));
      frame.pc = frame.bytecode->index_at(e.handler.target);
      frame.kw_names = PyRef();
    } catch (const UserError&) {
      // This frame unwinds too: a builder that inlines Python (nn.TransformerEncoder's layers)
      // may catch the error further out and raise it in the traced code (TorchOp::call), which
      // looks for a try block in the frames that are still running.
      frames_.pop_back();
      throw;
    }
  }
  frames_.pop_back();
  return frame.return_value;
}

void Translator::step(Frame& frame) {
  const auto& ins = frame.bytecode->instructions;
  AOT_CHECK(frame.pc < ins.size(), "fell off the end of " + frame.bytecode->function);
  if (&frame == entry_) {
    entry_stack_before_ = frame.stack;
    entry_kw_names_before_ = frame.kw_names;
    entry_pc_before_ = frame.pc;
    if (can_resume()) save_entry_containers(frame);  // only resuming needs them
  }
  const Instruction& i = ins[frame.pc++];
  // Exception cleanup code has no line (-1): it keeps the line of the code it handles.
  if (const int line = PyCode_Addr2Line(reinterpret_cast<PyCodeObject*>(frame.bytecode->code.get()), i.offset);
      line >= 0)
    frame.line = line;
  OpcodeHandler h = opcode_handler(i.opcode);
  if (!h)
    graph_break("unsupported bytecode",
                "the Translator has no handler for bytecode " + opcode_name(i.opcode),
                "rewrite this statement with simpler Python, or move it out of the traced "
                "function");
  h(*this, frame, i);
}

VarRef Translator::inline_function(PyObject* fn, std::vector<VarRef> args,
                                   std::vector<std::pair<std::string, VarRef>> kwargs,
                                   const std::vector<VarRef>* closure) {
  if (inline_depth_ >= kMaxInlineDepth)
    graph_break("unsupported Python", "calls nested deeper than " +
                                          std::to_string(kMaxInlineDepth) + " (recursion?)",
                "avoid recursion in the traced code");
  Frame f;
  bind_frame(f, fn, std::move(args), std::move(kwargs), closure);
  // A generator (genexpr, `yield`): run it to the end at once, collecting what it yields.
  std::vector<VarRef> yielded;
  const bool generator = PyLong_AsLong(getattr(f.bytecode->code.get(), "co_flags").get()) & 0x20;
  if (generator) f.yields = &yielded;
  ++inline_depth_;
  struct DepthGuard {
    int& d;
    ~DepthGuard() { --d; }
  } guard{inline_depth_};
  VarRef r = run(f);
  if (generator) {
    auto it = std::make_shared<IteratorVar>(std::move(yielded));
    it->returned = r;
    return it;
  }
  return r;
}

void Translator::bind_frame(Frame& f, PyObject* fn, std::vector<VarRef> args,
                            std::vector<std::pair<std::string, VarRef>> kwargs,
                            const std::vector<VarRef>* closure) {
  PyRef code = getattr(fn, "__code__");
  const Bytecode& bc = bytecode_of(code.get());
  f.bytecode = &bc;
  f.globals = getattr(fn, "__globals__");
  PyObject* b = PyDict_GetItemString(f.globals.get(), "__builtins__");
  f.builtins = b ? (PyModule_Check(b) ? PyRef::borrow(PyModule_GetDict(b)) : PyRef::borrow(b))
                 : PyRef::borrow(PyEval_GetBuiltins());
  keep_alive_.push_back(PyRef::borrow(fn));
  f.function = PyRef::borrow(fn);

  auto get_int = [&](const char* name) {
    return static_cast<int>(PyLong_AsLong(getattr(code.get(), name).get()));
  };
  const int argcount = get_int("co_argcount");
  const int posonly = get_int("co_posonlyargcount");
  const int kwonly = get_int("co_kwonlyargcount");
  const int flags = get_int("co_flags");
  f.locals.resize(bc.localsplus_names.size());
  f.closure = closure;
  auto name_at = [&](int i) { return bc.localsplus_names[static_cast<size_t>(i)]; };

  const std::string fname = bc.function;
  std::vector<VarRef> extra_positional;
  for (size_t i = 0; i < args.size(); ++i) {
    if (static_cast<int>(i) < argcount) f.locals[i] = args[i];
    else extra_positional.push_back(args[i]);
  }
  int next_slot = argcount + kwonly;
  if (flags & CO_VARARGS_FLAG) {
    f.locals[static_cast<size_t>(next_slot++)] =
        std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, extra_positional);
  } else if (!extra_positional.empty()) {
    user_error(fname + "() takes " + std::to_string(argcount) + " positional arguments but " +
                   std::to_string(args.size()) + " were given",
               loc());
  }
  std::shared_ptr<DictVar> var_kwargs;
  if (flags & CO_VARKEYWORDS_FLAG) {
    var_kwargs = std::make_shared<DictVar>();
    f.locals[static_cast<size_t>(next_slot++)] = var_kwargs;
  }
  for (auto& [k, v] : kwargs) {
    bool placed = false;
    for (int i = posonly; i < argcount + kwonly; ++i)
      if (name_at(i) == k) {
        if (f.locals[static_cast<size_t>(i)])
          user_error(fname + "() got multiple values for argument '" + k + "'", loc());
        f.locals[static_cast<size_t>(i)] = v;
        placed = true;
        break;
      }
    if (!placed) {
      if (var_kwargs) {
        var_kwargs->set(PyRef::steal(PyUnicode_FromString(k.c_str())), v);
        continue;
      }
      user_error(fname + "() got an unexpected keyword argument '" + k + "'", loc());
    }
  }
  // Defaults: positional from __defaults__ (right-aligned), keyword-only from __kwdefaults__.
  PyRef defaults = getattr(fn, "__defaults__");
  if (defaults.get() != Py_None) {
    const int nd = static_cast<int>(PyTuple_Size(defaults.get()));
    for (int i = argcount - nd; i < argcount; ++i)
      if (i >= 0 && !f.locals[static_cast<size_t>(i)])
        f.locals[static_cast<size_t>(i)] =
            constant(PyTuple_GetItem(defaults.get(), i - (argcount - nd)));
  }
  PyRef kwdefaults = getattr(fn, "__kwdefaults__");
  for (int i = argcount; i < argcount + kwonly; ++i) {
    if (f.locals[static_cast<size_t>(i)]) continue;
    PyObject* d = kwdefaults.get() != Py_None
                      ? PyDict_GetItemString(kwdefaults.get(), name_at(i).c_str())
                      : nullptr;
    if (d) f.locals[static_cast<size_t>(i)] = constant(d);
  }
  for (int i = 0; i < argcount + kwonly; ++i)
    if (!f.locals[static_cast<size_t>(i)])
      user_error(fname + "() missing required argument '" + name_at(i) + "'", loc());
}

// Python objects whose call the Translator follows when an argument is traced (a tensor, or a
// container holding one); null when `obj` runs for real.
namespace {

// A class of the user's whose instances are plain attribute bags: a Python class from a user
// file with a Python __init__, object's __new__/__setattr__/__getattribute__ and no __slots__,
// and none of the kinds capture models otherwise (modules, tuples, dataclasses, exceptions).
bool plain_user_class(PyObject* cls) {
  if (!PyType_Check(cls)) return false;
  auto* type = reinterpret_cast<PyTypeObject*>(cls);
  if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || PyType_IsSubtype(type, &PyTuple_Type) ||
      PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(PyExc_BaseException)) ||
      PyObject_HasAttrString(cls, "__dataclass_fields__") || PyObject_HasAttrString(cls, "__slots__"))
    return false;
  if (PyObject_IsSubclass(cls, getattr(import("torch.nn").get(), "Module").get()) != 0 ||
      PyObject_IsSubclass(cls, getattr(import("torch").get(), "Tensor").get()) != 0) {
    PyErr_Clear();
    return false;
  }
  PyTypeObject* base = &PyBaseObject_Type;
  if (type->tp_new != base->tp_new || type->tp_setattro != base->tp_setattro ||
      type->tp_getattro != base->tp_getattro)
    return false;
  PyRef key = PyRef::steal(PyUnicode_FromString("__init__"));
  PyObject* init = _PyType_Lookup(type, key.get());
  if (!init || !PyFunction_Check(init)) return false;
  PyObject* code = PyFunction_GET_CODE(init);
  return !is_library_file(py_str(reinterpret_cast<PyCodeObject*>(code)->co_filename));
}

}  // namespace

VarRef Translator::call_python_object(PyObject* obj, const std::vector<VarRef>& args,
                                      const std::vector<std::pair<std::string, VarRef>>& kwargs) {
  if (plain_user_class(obj)) {  // Box(x): an instance of the trace, built by its own __init__
    auto d = std::make_shared<DictVar>();
    d->dataclass = PyRef::borrow(obj);
    d->instance = true;
    PyRef key = PyRef::steal(PyUnicode_FromString("__init__"));
    PyObject* init = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(obj), key.get());
    std::vector<VarRef> all = args;
    all.insert(all.begin(), d);
    inline_function(init, std::move(all), kwargs);
    return d;
  }
  bool traced = false;
  for (const VarRef& a : args) traced = traced || as<TensorVar>(a) || !to_python(a);
  for (const auto& [k, v] : kwargs) traced = traced || as<TensorVar>(v) || !to_python(v);
  if (!traced) return nullptr;
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  PyRef op = import("operator");
  // operator.itemgetter(i, ...) / attrgetter("a.b", ...): their arguments from __reduce__.
  const bool items = type == getattr(op.get(), "itemgetter").get();
  if ((items || type == getattr(op.get(), "attrgetter").get()) && args.size() == 1 && kwargs.empty()) {
    PyRef reduced = check(PyObject_CallMethod(obj, "__reduce__", nullptr), "__reduce__");
    PyObject* keys = PyTuple_GetItem(reduced.get(), 1);
    std::vector<VarRef> out;
    for (Py_ssize_t i = 0; i < PyTuple_Size(keys); ++i) {
      PyObject* key = PyTuple_GetItem(keys, i);
      if (items) {
        out.push_back(subscript(args[0], constant(key)));
        continue;
      }
      VarRef v = args[0];
      const std::string path = py_str(key);
      for (size_t start = 0;;) {
        const size_t dot = path.find('.', start);
        v = attribute(v, path.substr(start, dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      out.push_back(v);
    }
    return out.size() == 1 ? out[0] : std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::move(out));
  }
  // A dataclass with its generated __init__ and no __post_init__: its fields, by name.
  if (PyType_Check(obj) && PyObject_HasAttrString(obj, "__dataclass_fields__") &&
      !PyObject_HasAttrString(obj, "__post_init__")) {
    PyRef fields = check(PyObject_CallOneArg(getattr(import("dataclasses").get(), "fields").get(), obj), "dataclasses.fields");
    PyRef missing = getattr(import("dataclasses").get(), "MISSING");
    auto d = std::make_shared<DictVar>();
    d->dataclass = PyRef::borrow(obj);
    size_t positional = 0;
    for (Py_ssize_t i = 0; i < PyTuple_Size(fields.get()); ++i) {
      PyObject* field = PyTuple_GetItem(fields.get(), i);
      if (PyObject_IsTrue(getattr(field, "init").get()) != 1) return nullptr;
      const std::string name = py_str(getattr(field, "name").get());
      VarRef value;
      if (positional < args.size()) value = args[positional++];
      for (const auto& [k, v] : kwargs)
        if (k == name) value = v;
      if (!value) {
        PyRef def = getattr(field, "default"), factory = getattr(field, "default_factory");
        if (def.get() != missing.get()) value = constant(def.get());
        else if (factory.get() != missing.get()) value = wrap(check(PyObject_CallNoArgs(factory.get()), "default_factory").get(), Source());
        else user_error(type_name(obj) + "() missing required argument '" + name + "'", loc());
      }
      d->set(PyRef::steal(PyUnicode_FromString(name.c_str())), value);
    }
    if (positional < args.size()) user_error(type_name(obj) + "() takes more positional arguments than it has fields", loc());
    return d;
  }
  // A namedtuple class (collections.namedtuple, typing.NamedTuple) built of traced values.
  if (PyType_Check(obj) && PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(obj), &PyTuple_Type)) {
    PyRef fields = attribute_or_null(obj, "_fields");
    if (!fields || !PyTuple_Check(fields.get())) return nullptr;
    PyRef defaults = attribute_or_null(obj, "_field_defaults");
    const Py_ssize_t n = PyTuple_Size(fields.get());
    std::vector<VarRef> values(static_cast<size_t>(n));
    std::vector<std::string> names;
    for (Py_ssize_t i = 0; i < n; ++i) names.push_back(py_str(PyTuple_GetItem(fields.get(), i)));
    if (args.size() > names.size())
      user_error(type_name(obj) + "() takes " + std::to_string(names.size()) + " arguments but " +
                     std::to_string(args.size()) + " were given",
                 loc());
    for (size_t i = 0; i < args.size(); ++i) values[i] = args[i];
    for (const auto& [k, v] : kwargs) {
      auto it = std::find(names.begin(), names.end(), k);
      if (it == names.end()) user_error(type_name(obj) + "() got an unexpected keyword argument '" + k + "'", loc());
      values[static_cast<size_t>(it - names.begin())] = v;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i]) continue;
      PyObject* d = defaults && PyDict_Check(defaults.get()) ? PyDict_GetItemString(defaults.get(), names[i].c_str()) : nullptr;
      if (!d) user_error(type_name(obj) + "() missing required argument '" + names[i] + "'", loc());
      values[i] = constant(d);
    }
    return ops::named_tuple(std::move(values), std::move(names));
  }
  // An instance of a class with a Python __call__: its code is traced with the object as self.
  if (!PyType_Check(obj) && !PyFunction_Check(obj) && !PyCFunction_Check(obj) && !PyMethod_Check(obj)) {
    PyRef call = attribute_or_null(type, "__call__");
    if (call && PyFunction_Check(call.get())) {
      std::vector<VarRef> all{constant(obj)};
      all.insert(all.end(), args.begin(), args.end());
      return inline_function(call.get(), std::move(all), kwargs);
    }
  }
  return nullptr;
}

// module(*args, **kwargs) as nn.Module.__call__ runs it at inference: the forward pre-hooks
// (global ones first) may replace the arguments, then the forward (an instance attribute
// `forward` wins over the class's), then the forward hooks may replace the result. Hooks are
// traced like any Python (weight_norm's pre-hook recomputes the weight from g and v).
std::vector<PyRef> forward_hooks(PyObject* module, bool pre) {
  const char* own = pre ? "_forward_pre_hooks" : "_forward_hooks";
  const std::string global = std::string("_global") + own;
  std::vector<PyRef> out;
  PyRef g = getattr(import("torch.nn.modules.module").get(), global.c_str()), m = getattr(module, own);
  for (PyObject* d : {g.get(), m.get()}) {
    PyObject *key, *value;
    for (Py_ssize_t pos = 0; PyDict_Check(d) && PyDict_Next(d, &pos, &key, &value);) out.push_back(PyRef::borrow(value));
  }
  return out;
}

PyObject* instance_forward(PyObject* module) {
  PyObject** dict = _PyObject_GetDictPtr(module);
  return dict && *dict ? PyDict_GetItemString(*dict, "forward") : nullptr;
}

VarRef Translator::call_module(const VarRef& fn, std::vector<VarRef> args,
                               std::vector<std::pair<std::string, VarRef>> kwargs) {
  PyObject* mod = as<ModuleVar>(fn)->module.get();
  auto as_tuple = [](std::vector<VarRef> items) {
    return std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::move(items));
  };
  for (const PyRef& hook : forward_hooks(mod, true)) {
    VarRef r = call(wrap(hook.get(), Source()), {fn, as_tuple(args)}, {});
    if (auto* c = as<ConstVar>(r); c && c->obj.get() == Py_None) continue;
    auto* seq = as<SequenceVar>(r);
    args = seq && seq->kind == SequenceVar::Kind::Tuple ? seq->items : std::vector<VarRef>{r};
  }
  VarRef result;
  if (PyObject* own = instance_forward(mod)) {
    result = call(wrap(own, fn->source.attr("forward")), args, kwargs);
  } else {
    PyRef forward = getattr(reinterpret_cast<PyObject*>(Py_TYPE(mod)), "forward");
    std::vector<VarRef> all = args;
    all.insert(all.begin(), fn);
    if (const TorchOp* op = torch_function(forward.get())) result = op->call(*this, CallArgs{std::move(all), kwargs});
    else result = inline_function(forward.get(), std::move(all), kwargs);
  }
  for (const PyRef& hook : forward_hooks(mod, false)) {
    VarRef r = call(wrap(hook.get(), Source()), {fn, as_tuple(args), result}, {});
    if (auto* c = as<ConstVar>(r); c && c->obj.get() == Py_None) continue;
    result = r;
  }
  return result;
}

VarRef Translator::call(const VarRef& fn, std::vector<VarRef> args,
                        std::vector<std::pair<std::string, VarRef>> kwargs) {
  if (eager_) return call_eager(fn, std::move(args), std::move(kwargs));
  return fn->call(*this, std::move(args), std::move(kwargs));
}

VarRef Var::call(Translator& t, std::vector<VarRef>, Kwargs) {
  t.graph_break("unsupported Python", "calling " + describe() + " is not supported",
                "call a function, a module or a torch operation");
}

VarRef TorchFnVar::call(Translator& t, std::vector<VarRef> args, Kwargs kwargs) {
  CallArgs ca{std::move(args), std::move(kwargs)};
  if (self) ca.args.insert(ca.args.begin(), self);
  return op->call(t, ca);
}

VarRef ModuleVar::call(Translator& t, std::vector<VarRef> args, Kwargs kwargs) {
  return t.call_module(Var::self(), std::move(args), std::move(kwargs));
}

VarRef FunctionVar::call(Translator& t, std::vector<VarRef> args, Kwargs kwargs) {
  if (self) args.insert(args.begin(), self);
  if (const TorchOp* op = torch_function(fn.get())) return op->call(t, CallArgs{std::move(args), std::move(kwargs)});
  return t.inline_function(fn.get(), std::move(args), std::move(kwargs), traced_closure ? &closure : nullptr);
}

VarRef BuiltinVar::call(Translator& t, std::vector<VarRef> args, Kwargs kwargs) {
  return call_builtin(t, self(), std::move(args), std::move(kwargs));
}

VarRef ContainerMethodVar::call(Translator& t, std::vector<VarRef> args, Kwargs kwargs) {
  return call_container_method(t, *this, std::move(args), std::move(kwargs));
}

VarRef PartialVar::call(Translator& t, std::vector<VarRef> call_args, Kwargs call_kwargs) {
  std::vector<VarRef> all = args;
  all.insert(all.end(), call_args.begin(), call_args.end());
  auto kw = kwargs;
  for (auto& [k, v] : call_kwargs) {
    auto it = std::find_if(kw.begin(), kw.end(), [&](const auto& e) { return e.first == k; });
    if (it != kw.end()) it->second = v;
    else kw.emplace_back(k, v);
  }
  return t.call(fn, std::move(all), std::move(kw));
}

// super(): the class from the frame's __class__ cell, self from its first argument.
VarRef Translator::zero_argument_super() {
  const Frame* f = frames_.back();
  VarRef cls_var;
  for (size_t i = 0; i < f->bytecode->localsplus_names.size(); ++i)
    if (f->bytecode->localsplus_names[i] == "__class__")
      if (auto* cell = as<CellVar>(f->locals[i])) cls_var = cell->contents;
  if (!cls_var || f->locals.empty() || !f->locals[0]) user_error("super(): no arguments and no __class__ cell", loc());
  VarRef self = f->locals[0];
  if (auto* cell = as<CellVar>(self)) self = cell->contents;
  PyRef cls = to_python(cls_var);
  if (!cls) graph_break("unsupported Python", "super() with these arguments", "");
  return std::make_shared<SuperVar>(cls, self);
}

VarRef ConstVar::call(Translator& t, std::vector<VarRef> args, Kwargs kwargs) {
  PyObject* o = obj.get();
  if (o == builtin_object("super").get()) {
    if (args.empty()) return t.zero_argument_super();
    PyRef cls = t.to_python(args[0]);
    if (!cls || args.size() != 2) t.graph_break("unsupported Python", "super() with these arguments", "");
    return std::make_shared<SuperVar>(cls, args[1]);
  }
  if (o == ::aotrace::embed::getattr(import("functools").get(), "partial").get() && !args.empty())
    return std::make_shared<PartialVar>(args[0], std::vector<VarRef>(args.begin() + 1, args.end()), std::move(kwargs));
  if (PyObject* bound = PyMethod_Check(o) ? PyMethod_GET_SELF(o) : PyCFunction_Check(o) ? PyCFunction_GET_SELF(o) : nullptr;
      bound && is_autograd_function(bound))
    t.graph_break("torch.autograd.Function",
                  "calling " + callable_name(bound) + ".apply: a custom torch.autograd.Function "
                  "runs arbitrary Python in its forward",
                  "write the forward with torch operations directly, or move it out of the "
                  "traced function");
  if (VarRef r = t.call_python_object(o, args, kwargs)) return r;
  // A compile-time callable: run it for real on compile-time arguments.
  PyRef pargs = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef a = t.to_python(args[i]);
    if (!a)
      t.graph_break("torch callable with no op mapping",
                    callable_name(o) + " has no mapping to graph ops (called with " + args[i]->describe() + " argument)",
                    "use a torch operation that aotrace supports (see `aotrace explain`)");
    PyTuple_SetItem(pargs.get(), static_cast<Py_ssize_t>(i), a.release());
  }
  PyRef pkw = PyRef::steal(PyDict_New());
  for (auto& [k, v] : kwargs) {
    PyRef a = t.to_python(v);
    if (!a)
      t.graph_break("torch callable with no op mapping",
                    callable_name(o) + " has no mapping to graph ops (called with " + v->describe() +
                        " keyword argument '" + k + "')",
                    "use a torch operation that aotrace supports");
    PyDict_SetItemString(pkw.get(), k.c_str(), a.get());
  }
  PyObject* r = PyObject_Call(o, pargs.get(), pkw.get());
  if (!r) t.raise_pending("calling " + callable_name(o), "the traced code raised at compile time; fix the call");
  PyRef result = PyRef::steal(r);
  return t.wrap(result.get(), Source());
}

// After a graph break: every value is real, so the call runs in Python.
VarRef Translator::call_eager(const VarRef& fn, std::vector<VarRef> args,
                              std::vector<std::pair<std::string, VarRef>> kwargs) {
  // A method of a list or dict of the trace changes the trace's container.
  if (auto* m = as<ContainerMethodVar>(fn); m && !m->as_python(*this))
    return call_container_method(*this, *m, std::move(args), std::move(kwargs));
  PyRef callable = to_python(fn);  // a Tensor method: bound to the real tensor
  if (!callable)
    graph_break("unsupported Python", "running " + fn->describe() + " after a graph break", "");
  PyRef pargs = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef a = to_python(args[i]);
    if (!a) graph_break("unsupported Python", "running a call with " + args[i]->describe() + " after a graph break", "");
    PyTuple_SetItem(pargs.get(), static_cast<Py_ssize_t>(i), a.release());
  }
  PyRef pkw = PyRef::steal(PyDict_New());
  for (auto& [k, v] : kwargs) {
    PyRef a = to_python(v);
    if (!a) graph_break("unsupported Python", "running a call with " + v->describe() + " after a graph break", "");
    PyDict_SetItemString(pkw.get(), k.c_str(), a.get());
  }
  PyObject* r = PyObject_Call(callable.get(), pargs.get(), pkw.get());
  if (!r)
    raise_pending("running " + callable_name(callable.get()));
  PyRef result = PyRef::steal(r);
  return wrap(result.get(), Source());
}

}  // namespace aotrace::embed
