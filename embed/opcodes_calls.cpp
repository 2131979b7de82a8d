// Opcode handlers: calls (PRECALL/CALL/KW_NAMES/CALL_FUNCTION_EX), MAKE_FUNCTION, RETURN_VALUE.
#include "embed/opcodes.h"

namespace aotrace::embed {

namespace {

void precall(Translator&, Frame&, const Instruction&) {}

void kw_names(Translator&, Frame& f, const Instruction& i) {
  f.kw_names = PyRef::borrow(PyTuple_GetItem(f.bytecode->consts.get(), i.arg));
}

// Stack: [NULL, callable, args…] (or [callable, self, args…]); the last len(kw_names) args are
// keyword arguments.
void call(Translator& t, Frame& f, const Instruction& i) {
  std::vector<VarRef> args = f.pop_n(static_cast<size_t>(i.arg));
  VarRef b = f.pop();
  VarRef a = f.pop();
  std::vector<std::pair<std::string, VarRef>> kwargs;
  if (f.kw_names) {
    const size_t nkw = static_cast<size_t>(PyTuple_Size(f.kw_names.get()));
    const size_t first = args.size() - nkw;
    for (size_t k = 0; k < nkw; ++k)
      kwargs.emplace_back(py_str(PyTuple_GetItem(f.kw_names.get(), static_cast<Py_ssize_t>(k))),
                          args[first + k]);
    args.resize(first);
    f.kw_names = PyRef();
  }
  VarRef callable = b;
  if (!as<NullVar>(a)) {
    callable = a;
    args.insert(args.begin(), b);
  }
  f.push(t.call(callable, std::move(args), std::move(kwargs)));
}

// Stack: [NULL, callable, args tuple/list, kwargs dict?].
void call_function_ex(Translator& t, Frame& f, const Instruction& i) {
  std::vector<std::pair<std::string, VarRef>> kwargs;
  if (i.arg & 1) {
    VarRef kw = f.pop();
    if (auto* dict = as<DictVar>(kw)) {
      for (size_t k = 0; k < dict->keys.size(); ++k)
        kwargs.emplace_back(py_str(dict->keys[k].get()), dict->values[k]);
    } else {
      PyRef d = t.to_python(kw);
      if (!d || !PyDict_Check(d.get()))
        t.graph_break("unsupported Python", "**kwargs holding " + kw->describe(),
                      "pass keyword arguments explicitly");
      PyObject *key, *value;
      Py_ssize_t pos = 0;
      while (PyDict_Next(d.get(), &pos, &key, &value))
        kwargs.emplace_back(py_str(key), t.wrap(value, Source()));
    }
  }
  VarRef args_var = f.pop();
  VarRef callable = f.pop();
  if (!f.stack.empty() && as<NullVar>(f.top())) f.pop();
  auto* seq = as<SequenceVar>(args_var);
  std::vector<VarRef> args;
  if (seq) args = seq->items;
  else {
    VarRef it = t.iterate(args_var);
    args = as<IteratorVar>(it)->items;
  }
  f.push(t.call(callable, std::move(args), std::move(kwargs)));
}

void make_function(Translator& t, Frame& f, const Instruction& i) {
  VarRef code = f.pop();
  auto* code_const = as<ConstVar>(code);
  AOT_CHECK(code_const && PyCode_Check(code_const->obj.get()), "MAKE_FUNCTION without a code object");
  std::vector<VarRef> closure;
  if (i.arg & 0x08) {
    VarRef cells = f.pop();
    auto* seq = as<SequenceVar>(cells);
    AOT_CHECK(seq, "MAKE_FUNCTION closure is not a tuple");
    closure = seq->items;
  }
  if (i.arg & 0x04) f.pop();  // annotations
  PyRef kwdefaults, defaults;
  if (i.arg & 0x02) kwdefaults = t.to_python(f.pop());
  if (i.arg & 0x01) defaults = t.to_python(f.pop());
  if (((i.arg & 0x02) && !kwdefaults) || ((i.arg & 0x01) && !defaults))
    t.graph_break("unsupported Python", "a nested function whose defaults hold tensors",
                  "pass the tensors as arguments instead of defaults");
  PyRef fn = check(PyFunction_New(code_const->obj.get(), f.globals.get()), "PyFunction_New");
  if (defaults) {
    PyRef tuple = PyRef::steal(PySequence_Tuple(defaults.get()));
    PyFunction_SetDefaults(fn.get(), tuple.get());
  }
  if (kwdefaults) PyFunction_SetKwDefaults(fn.get(), kwdefaults.get());
  auto var = std::make_shared<FunctionVar>(fn, nullptr, Source());
  var->closure = std::move(closure);
  var->traced_closure = true;
  f.push(var);
}

void return_value(Translator&, Frame& f, const Instruction&) {
  f.return_value = f.pop();
  f.returned = true;
}

// Generators are run to the end when called (Translator::inline_function): RETURN_GENERATOR
// pushes the value its POP_TOP discards, YIELD_VALUE collects and "receives" None.
void return_generator(Translator& t, Frame& f, const Instruction&) {
  if (!f.yields)
    t.graph_break("unsupported Python", "a generator outside a generator frame", "");
  f.push(t.constant(Py_None));
}

void yield_value(Translator& t, Frame& f, const Instruction&) {
  if (!f.yields)
    t.graph_break("unsupported Python", "yield outside a generator frame", "");
  f.yields->push_back(f.pop());
  f.push(t.constant(Py_None));
}

// `yield from it` in a generator run to its end (GET_YIELD_FROM_ITER, LOAD_CONST None, then a
// SEND loop): every item of `it` is yielded at once, and the loop is skipped with the
// sub-generator's return value on the stack, as SEND leaves it when the sub-iterator is done.
void get_yield_from_iter(Translator& t, Frame& f, const Instruction&) {
  if (!f.yields) t.graph_break("unsupported Python", "yield from outside a generator frame", "");
  VarRef source = f.pop();
  VarRef items = t.iterate(source);
  auto* it = as<IteratorVar>(items);
  for (size_t k = it->next; k < it->items.size(); ++k) f.yields->push_back(it->items[k]);
  const auto& ins = f.bytecode->instructions;
  if (f.pc + 1 >= ins.size() || opcode_name(ins[f.pc + 1].opcode) != "SEND")
    t.graph_break("unsupported bytecode", "GET_YIELD_FROM_ITER outside `yield from`", "");
  f.pc = f.bytecode->index_at(jump_forward(ins[f.pc + 1]));
  auto* gen = as<IteratorVar>(source);
  f.push(gen && gen->returned ? gen->returned : t.constant(Py_None));
}

// with CM: as v — the context manager is a compile-time object (torch.no_grad(),
// torch.autocast(...), a user class): __enter__ runs for real now and __exit__ at the end of the
// block (the normal path calls it with three Nones). An exception raised in the block reaches
// __exit__ through the exception table (WITH_EXCEPT_START).
void before_with(Translator& t, Frame& f, const Instruction&) {
  VarRef mgr = f.pop();
  PyRef m = t.to_python(mgr);
  if (!m || as<ModuleVar>(mgr))
    t.graph_break("unsupported Python", "`with` on " + mgr->describe(),
                  "use a context manager that does not hold tensors (torch.no_grad())");
  PyObject* exit = PyObject_GetAttrString(m.get(), "__exit__");
  if (!exit) t.graph_break("python exception", "`with` object has no __exit__: " + fetch_python_error(), "");
  PyRef exit_ref = PyRef::steal(exit);
  PyObject* entered = PyObject_CallMethod(m.get(), "__enter__", nullptr);
  if (!entered)
    t.graph_break("python exception", "__enter__ raised " + fetch_python_error(), "");
  PyRef entered_ref = PyRef::steal(entered);
  f.push(t.constant(exit_ref.get()));
  f.push(entered_ref.get() == m.get() ? mgr : t.wrap(entered_ref.get(), Source()));
}

// An exception left a `with` block: __exit__(type, value, traceback) decides whether it is
// swallowed (its result, tested by the next instruction).
void with_except_start(Translator& t, Frame& f, const Instruction&) {
  PyRef exit = t.to_python(f.top(3)), exc = t.to_python(f.top(0));
  if (!exit || !exc) internal_error("WITH_EXCEPT_START without __exit__ and an exception");
  PyRef tb = PyRef::steal(PyException_GetTraceback(exc.get()));
  PyObject* r = PyObject_CallFunctionObjArgs(exit.get(), reinterpret_cast<PyObject*>(Py_TYPE(exc.get())), exc.get(),
                                             tb ? tb.get() : Py_None, nullptr);
  if (!r) t.raise_pending("__exit__");
  f.push(t.wrap(PyRef::steal(r).get(), Source()));
}

}  // namespace

HandlerList call_handlers() {
  return {
      {"PRECALL", precall},
      {"KW_NAMES", kw_names},
      {"CALL", call},
      {"CALL_FUNCTION_EX", call_function_ex},
      {"MAKE_FUNCTION", make_function},
      {"RETURN_VALUE", return_value},
      {"RETURN_GENERATOR", return_generator},
      {"YIELD_VALUE", yield_value},
      {"GET_YIELD_FROM_ITER", get_yield_from_iter},
      {"BEFORE_WITH", before_with},
      {"WITH_EXCEPT_START", with_except_start},
  };
}

}  // namespace aotrace::embed
