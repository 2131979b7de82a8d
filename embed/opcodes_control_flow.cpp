// Opcode handlers: jumps, loops, comparisons and operators, raise.
#include "embed/opcodes.h"
#include "embed/torch_ops.h"
#include "embed/torch_ops_args.h"

namespace aotrace::embed {

namespace {

void jump_to(Frame& f, int offset) { f.pc = f.bytecode->index_at(offset); }

void jump_forward_op(Translator&, Frame& f, const Instruction& i) { jump_to(f, jump_forward(i)); }
void jump_backward_op(Translator&, Frame& f, const Instruction& i) { jump_to(f, jump_backward(i)); }

bool is_none(const VarRef& v) {
  auto* c = as<ConstVar>(v);
  return c && c->obj.get() == Py_None;
}

template <bool Forward, bool WhenTrue>
void pop_jump_if(Translator& t, Frame& f, const Instruction& i) {
  if (t.truth(f.pop()) == WhenTrue) jump_to(f, Forward ? jump_forward(i) : jump_backward(i));
}

template <bool Forward, bool WhenNone>
void pop_jump_if_none(Translator& t, Frame& f, const Instruction& i) {
  VarRef v = f.pop();
  if (auto* c = as<ConstVar>(v); c && !c->source.empty())
    t.add_assumption(c->source.str() + (is_none(v) ? " is None" : " is not None"));
  if (is_none(v) == WhenNone) jump_to(f, Forward ? jump_forward(i) : jump_backward(i));
}

template <bool WhenTrue>
void jump_if_or_pop(Translator& t, Frame& f, const Instruction& i) {
  if (t.truth(f.top()) == WhenTrue) jump_to(f, jump_forward(i));
  else f.pop();
}

void get_iter(Translator& t, Frame& f, const Instruction&) {
  VarRef v = f.pop();
  f.push(as<IteratorVar>(v) ? v : t.iterate(v));
}

void for_iter(Translator&, Frame& f, const Instruction& i) {
  auto* it = as<IteratorVar>(f.top());
  AOT_CHECK(it, "FOR_ITER over a non-iterator");
  if (it->next < it->items.size()) {
    f.push(it->items[it->next++]);
    return;
  }
  f.pop();
  jump_to(f, jump_forward(i));
}

const char* const kBinaryOps[] = {"+", "&", "//", "<<", "@", "*", "%", "|", "**", ">>", "-", "/", "^"};

// Whether the instructions after an in-place operator are those of `x[index] op= v`
// (SWAP 3, SWAP 2, STORE_SUBSCR): its result is assigned back to the subscript it came from.
bool stores_back_to_subscript(const Frame& f) {
  const auto& ins = f.bytecode->instructions;
  if (f.pc + 2 >= ins.size()) return false;
  return opcode_name(ins[f.pc].opcode) == "SWAP" && ins[f.pc].arg == 3 && opcode_name(ins[f.pc + 1].opcode) == "SWAP" &&
         ins[f.pc + 1].arg == 2 && opcode_name(ins[f.pc + 2].opcode) == "STORE_SUBSCR";
}

void binary_op(Translator& t, Frame& f, const Instruction& i) {
  VarRef b = f.pop();
  VarRef a = f.pop();
  AOT_CHECK(i.arg >= 0 && i.arg < 26, "BINARY_OP with unknown operator");
  // In-place forms (+=) on immutable values behave as the plain operator; a list += extends.
  const std::string op = kBinaryOps[i.arg % 13];
  auto* ta = as<TensorVar>(a);
  if (i.arg >= 13 && ta && !t.eager() && stores_back_to_subscript(f)) {
    // x[index] op= v: Python updates the view x[index] in place, then assigns it back to
    // x[index]; the new value goes to x through that assignment (setitem), not the view.
    f.push(ops::inplace_value(t, a, t.binary_op(op, a, b), ("operator " + op + "=").c_str()));
    return;
  }
  if (i.arg >= 13 && ta && !t.eager()) {
    const std::string what = "operator " + op + "=";
    ops::refuse_inplace_on_outside(t, a, what, "x = x " + op + " y");
    // An intermediate: computed out of place, then written into the variable (ops::inplace:
    // its dtype kept), which the names bound to it share.
    f.push(ops::inplace(t, a, t.binary_op(op, a, b), what.c_str()));
    return;
  }
  if (auto* list = as<SequenceVar>(a); i.arg >= 13 && list && list->kind == SequenceVar::Kind::List && op == "+") {
    t.note_mutation(a);
    VarRef items = t.iterate(b);  // a list's += extends it (by any iterable), seen by its other names
    for (const VarRef& v : as<IteratorVar>(items)->items) list->items.push_back(v);
    f.push(a);
    return;
  }
  f.push(t.binary_op(op, a, b));
}

const char* const kCompareOps[] = {"<", "<=", "==", "!=", ">", ">="};

void compare_op(Translator& t, Frame& f, const Instruction& i) {
  VarRef b = f.pop();
  VarRef a = f.pop();
  AOT_CHECK(i.arg >= 0 && i.arg < 6, "COMPARE_OP with unknown operator");
  f.push(t.binary_op(kCompareOps[i.arg], a, b));
}

void is_op(Translator& t, Frame& f, const Instruction& i) {
  VarRef b = f.pop();
  VarRef a = f.pop();
  bool same;
  t.note_constant_use(a);
  t.note_constant_use(b);
  PyRef pa = as<TensorVar>(a) ? PyRef() : t.to_python(a);
  PyRef pb = as<TensorVar>(b) ? PyRef() : t.to_python(b);
  if (pa && pb) same = pa.get() == pb.get();
  else if (as<TensorVar>(a) && as<TensorVar>(b)) same = as<TensorVar>(a)->value == as<TensorVar>(b)->value;
  else same = a.get() == b.get();
  f.push(t.constant((same != (i.arg == 1)) ? Py_True : Py_False));
}

void contains_op(Translator& t, Frame& f, const Instruction& i) {
  VarRef container = f.pop();
  VarRef item = f.pop();
  if (auto* d = as<DictVar>(container)) {
    PyRef key = t.to_python(item);
    const bool found = key && d->find(key.get()) >= 0;
    f.push(t.constant(found != (i.arg == 1) ? Py_True : Py_False));
    return;
  }
  t.note_constant_use(container);
  t.note_constant_use(item);
  PyRef c = t.to_python(container), x = t.to_python(item);
  if (!c || !x)
    t.graph_break("unsupported Python", "'in' on " + container->describe(), "");
  int r = PySequence_Contains(c.get(), x.get());
  if (r < 0) t.graph_break("python exception", "'in' raised " + fetch_python_error(), "");
  f.push(t.constant((r == 1) != (i.arg == 1) ? Py_True : Py_False));
}

void unary_not(Translator& t, Frame& f, const Instruction&) {
  f.push(t.constant(t.truth(f.pop()) ? Py_False : Py_True));
}

void unary_negative(Translator& t, Frame& f, const Instruction&) {
  VarRef a = f.pop();
  if (as<TensorVar>(a)) {
    f.push(tensor_operator(t, "neg", a, nullptr));
    return;
  }
  PyRef zero = PyRef::steal(PyLong_FromLong(0));
  f.push(t.binary_op("-", t.constant(zero.get()), a));
}

void unary_positive(Translator&, Frame&, const Instruction&) {}

// `~x`: bitwise not of a tensor (logical on bool), Python's ~ on anything else.
void unary_invert(Translator& t, Frame& f, const Instruction&) {
  VarRef a = f.pop();
  if (as<TensorVar>(a)) {
    f.push(tensor_operator(t, "~", a, nullptr));
    return;
  }
  PyRef o = t.to_python(a);
  if (!o) t.graph_break("unsupported Python", "~ on " + a->describe(), "");
  PyObject* r = PyNumber_Invert(o.get());
  if (!r) t.graph_break("python exception", "~ raised " + fetch_python_error(), "");
  f.push(t.wrap(PyRef::steal(r).get(), Source()));
}

// raise / raise E / raise E from cause: to a handler of the traced code, or a user error.
void raise_varargs(Translator& t, Frame& f, const Instruction& i) {
  PyRef exc;
  if (i.arg == 0) {
    exc = t.handled_exception;
    if (!exc || exc.get() == Py_None) user_error("a bare `raise` with no exception being handled", t.loc());
  } else {
    if (i.arg == 2) f.pop();  // the cause: not kept
    VarRef e = f.pop();
    exc = t.to_python(e);
    if (!exc) user_error("the traced code raises " + e->describe(), t.loc());
    if (PyExceptionClass_Check(exc.get())) exc = check(PyObject_CallNoArgs(exc.get()), "an exception's class");
  }
  t.raise_python(exc, "the traced code raises " + py_repr(exc.get()) + " at compile time",
                 "a failing assert or raise in the entry means the inputs declared in the YAML do "
                 "not satisfy the model's checks",
                 /*user_error_if_uncaught=*/true);
}

// An `except` block's entry: the exception handled before it is kept under it on the stack.
void push_exc_info(Translator& t, Frame& f, const Instruction&) {
  VarRef exc = f.pop();
  f.push(t.constant(t.handled_exception ? t.handled_exception.get() : Py_None));
  t.handled_exception = t.to_python(exc);
  f.push(exc);
}

void pop_except(Translator& t, Frame& f, const Instruction&) {
  PyRef previous = t.to_python(f.pop());
  t.handled_exception = previous && previous.get() != Py_None ? previous : PyRef();
}

// `except T:`: whether the exception under T matches it.
void check_exc_match(Translator& t, Frame& f, const Instruction&) {
  PyRef type = t.to_python(f.pop());
  PyRef exc = t.to_python(f.top());
  if (!type || !exc) t.graph_break("unsupported Python", "an except clause matched against a traced value", "");
  const int r = PyErr_GivenExceptionMatches(exc.get(), type.get());
  f.push(t.constant(r ? Py_True : Py_False));
}

void reraise(Translator& t, Frame& f, const Instruction&) {
  PyRef exc = t.to_python(f.pop());
  if (!exc) internal_error("RERAISE of a traced value");
  t.raise_python(exc, "the traced code raises " + py_repr(exc.get()) + " at compile time",
                 "an exception raised in the traced code and not handled there", /*user_error_if_uncaught=*/true);
}

}  // namespace

HandlerList control_flow_handlers() {
  return {
      {"JUMP_FORWARD", jump_forward_op},
      {"JUMP_BACKWARD", jump_backward_op},
      {"JUMP_BACKWARD_NO_INTERRUPT", jump_backward_op},
      {"POP_JUMP_FORWARD_IF_TRUE", pop_jump_if<true, true>},
      {"POP_JUMP_FORWARD_IF_FALSE", pop_jump_if<true, false>},
      {"POP_JUMP_BACKWARD_IF_TRUE", pop_jump_if<false, true>},
      {"POP_JUMP_BACKWARD_IF_FALSE", pop_jump_if<false, false>},
      {"POP_JUMP_FORWARD_IF_NONE", pop_jump_if_none<true, true>},
      {"POP_JUMP_FORWARD_IF_NOT_NONE", pop_jump_if_none<true, false>},
      {"POP_JUMP_BACKWARD_IF_NONE", pop_jump_if_none<false, true>},
      {"POP_JUMP_BACKWARD_IF_NOT_NONE", pop_jump_if_none<false, false>},
      {"JUMP_IF_TRUE_OR_POP", jump_if_or_pop<true>},
      {"JUMP_IF_FALSE_OR_POP", jump_if_or_pop<false>},
      {"GET_ITER", get_iter},
      {"FOR_ITER", for_iter},
      {"BINARY_OP", binary_op},
      {"COMPARE_OP", compare_op},
      {"IS_OP", is_op},
      {"CONTAINS_OP", contains_op},
      {"UNARY_NOT", unary_not},
      {"UNARY_NEGATIVE", unary_negative},
      {"UNARY_POSITIVE", unary_positive},
      {"UNARY_INVERT", unary_invert},
      {"RAISE_VARARGS", raise_varargs},
      {"PUSH_EXC_INFO", push_exc_info},
      {"POP_EXCEPT", pop_except},
      {"CHECK_EXC_MATCH", check_exc_match},
      {"RERAISE", reraise},
  };
}

}  // namespace aotrace::embed
