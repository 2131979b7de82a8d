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

void binary_op(Translator& t, Frame& f, const Instruction& i) {
  VarRef b = f.pop();
  VarRef a = f.pop();
  AOT_CHECK(i.arg >= 0 && i.arg < 26, "BINARY_OP with unknown operator");
  // In-place forms (+=) on immutable values behave as the plain operator; a list += extends.
  const std::string op = kBinaryOps[i.arg % 13];
  auto* ta = as<TensorVar>(a);
  if (i.arg >= 13 && ta && !t.eager()) {
    const std::string what = "operator " + op + "=";
    ops::refuse_inplace_on_outside(t, a, what, "x = x " + op + " y");
    // An intermediate: computed out of place, then written into the variable (ops::inplace:
    // its dtype kept), which the names bound to it share.
    f.push(ops::inplace(t, a, t.binary_op(op, a, b), what.c_str()));
    return;
  }
  if (auto* list = as<SequenceVar>(a); i.arg >= 13 && list && list->kind == SequenceVar::Kind::List && op == "+") {
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

void raise_varargs(Translator& t, Frame& f, const Instruction& i) {
  std::string what = "an exception";
  if (i.arg >= 1) {
    VarRef e = f.top(i.arg - 1);
    PyRef o = t.to_python(e);
    if (o) what = py_repr(o.get());
  }
  user_error("the traced code raises " + what + " at compile time", t.loc(),
             "a failing assert or raise in the entry means the inputs declared in the YAML do "
             "not satisfy the model's checks");
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
  };
}

}  // namespace aotrace::embed
