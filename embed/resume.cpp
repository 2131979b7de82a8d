// The entry's translation and the graph-break continuation (DESIGN §2: `explain` keeps going
// after a break, like torch._dynamo.explain). On a break the entry frame goes back to the state
// before its breaking instruction (for a break inside an inlined call: the call in the entry
// frame), the graph so far is evaluated with the IR's reference implementations on the real
// example inputs, its live tensors become real torch tensors, that one instruction runs for
// real, and tracing resumes in a new graph whose inputs are the live tensors.
#include <algorithm>
#include <map>
#include <set>

#include "embed/translator.h"

namespace aotrace::embed {

namespace {

constexpr size_t kMaxBreaks = 64;

// Flattens the returned value into graph outputs and their Python structure.
ir::OutputTree flatten_outputs(Translator& t, const VarRef& v, std::vector<ir::ValueId>& outs) {
  ir::OutputTree tree;
  if (auto* tv = as<TensorVar>(v)) {
    tree.kind = ir::OutputTree::Kind::Leaf;
    tree.leaf = static_cast<int>(outs.size());
    outs.push_back(tv->value);
    return tree;
  }
  if (auto* seq = as<SequenceVar>(v)) {  // a torch.Size is a tuple of ints
    tree.kind = seq->kind == SequenceVar::Kind::List ? ir::OutputTree::Kind::List
                                                     : ir::OutputTree::Kind::Tuple;
    for (const auto& item : seq->items) tree.children.push_back(flatten_outputs(t, item, outs));
    return tree;
  }
  if (auto* d = as<DictVar>(v)) {
    tree.kind = ir::OutputTree::Kind::Dict;
    for (size_t i = 0; i < d->keys.size(); ++i) {
      if (!PyUnicode_Check(d->keys[i].get()))
        user_error("the traced function returns a dict with key " + py_repr(d->keys[i].get()) +
                       "; output dicts must have string keys",
                   t.loc());
      tree.keys.push_back(py_str(d->keys[i].get()));
      tree.children.push_back(flatten_outputs(t, d->values[i], outs));
    }
    return tree;
  }
  // A compile-time tuple, list or dict: its items, as if built in the traced code.
  if (auto* c = as<ConstVar>(v); c && (PyTuple_Check(c->obj.get()) || PyList_Check(c->obj.get()) ||
                                       PyDict_Check(c->obj.get()))) {
    PyObject* o = c->obj.get();
    if (PyDict_Check(o)) {
      auto d = std::make_shared<DictVar>();
      PyObject *key, *value;
      for (Py_ssize_t pos = 0; PyDict_Next(o, &pos, &key, &value);) d->set(PyRef::borrow(key), t.constant(value));
      return flatten_outputs(t, d, outs);
    }
    PyRef items = PyRef::steal(PySequence_Tuple(o));
    std::vector<VarRef> vars;
    for (Py_ssize_t i = 0; i < PyTuple_Size(items.get()); ++i) vars.push_back(t.constant(PyTuple_GetItem(items.get(), i)));
    return flatten_outputs(t, std::make_shared<SequenceVar>(PyList_Check(o) ? SequenceVar::Kind::List : SequenceVar::Kind::Tuple, std::move(vars)), outs);
  }
  // None, numbers, bools and strings: constants of the output, as Python returns them
  // (nanoGPT returns `(logits, None)` without targets).
  PyRef o = as<ConstVar>(v) || as<SymIntVar>(v) ? t.to_python(v) : PyRef();
  if (o && is_plain_value(o.get())) {
    tree.kind = ir::OutputTree::Kind::Constant;
    tree.value = py_repr(o.get());
    return tree;
  }
  user_error("the traced function returns " + v->describe() +
                 "; aotrace outputs must be tensors, None, numbers, bools or strings, in "
                 "tuples/lists/dicts",
             t.loc(), "return only tensors and plain values from the entry; compute other values outside it");
}

// Visits every variable slot reachable from a frame's locals and stack (containers, cells,
// bound selves), so that a pass can read or replace what is in them.
template <class Fn>
void visit_slots(VarRef& slot, Fn&& fn, std::set<Var*>& seen) {
  if (!slot) return;
  fn(slot);
  Var* v = slot.get();
  if (!seen.insert(v).second) return;
  if (auto* seq = as<SequenceVar>(slot)) for (auto& i : seq->items) visit_slots(i, fn, seen);
  else if (auto* d = as<DictVar>(slot)) for (auto& i : d->values) visit_slots(i, fn, seen);
  else if (auto* it = as<IteratorVar>(slot)) for (auto& i : it->items) visit_slots(i, fn, seen);
  else if (auto* c = as<CellVar>(slot)) visit_slots(c->contents, fn, seen);
  else if (auto* f = as<FunctionVar>(slot)) {
    visit_slots(f->self, fn, seen);
    for (auto& i : f->closure) visit_slots(i, fn, seen);
  } else if (auto* op = as<TorchFnVar>(slot)) visit_slots(op->self, fn, seen);
  else if (auto* m = as<ContainerMethodVar>(slot)) visit_slots(m->self, fn, seen);
  else if (auto* s = as<SuperVar>(slot)) visit_slots(s->self, fn, seen);
  else if (auto* sl = as<SliceVar>(slot)) {
    visit_slots(sl->start, fn, seen);
    visit_slots(sl->stop, fn, seen);
    visit_slots(sl->step, fn, seen);
  } else if (auto* p = as<PartialVar>(slot)) {
    visit_slots(p->fn, fn, seen);
    for (auto& i : p->args) visit_slots(i, fn, seen);
    for (auto& [k, i] : p->kwargs) visit_slots(i, fn, seen);
  }
}

template <class Fn>
void visit_frame(Frame& f, Fn&& fn) {
  std::set<Var*> seen;
  for (auto& slot : f.locals) visit_slots(slot, fn, seen);
  for (auto& slot : f.stack) visit_slots(slot, fn, seen);
}

bool is_tensor(PyObject* o) { return is_instance_of(o, "torch", "Tensor"); }

// Sends sys.stdout to sys.stderr while an instruction runs for real, so that a print in the
// model does not mix with the report on stdout (explain --json).
struct StdoutToStderr {
  PyRef saved;
  StdoutToStderr() : saved(PyRef::borrow(PySys_GetObject("stdout"))) {
    PySys_SetObject("stdout", PySys_GetObject("stderr"));
  }
  ~StdoutToStderr() { PySys_SetObject("stdout", saved.get()); }
};

}  // namespace

void Translator::save_entry_containers(Frame& entry) {
  // Code inlined from the entry's instruction may change containers the entry frame holds (a
  // comprehension advances the iterator it was given, a helper appends to a list) before it
  // breaks; the instruction then runs again for real, so their contents are put back first.
  entry_containers_before_.clear();
  visit_frame(entry, [&](VarRef& slot) {
    if (auto* seq = as<SequenceVar>(slot)) entry_containers_before_.push_back({slot, seq->items, {}, 0});
    else if (auto* d = as<DictVar>(slot)) entry_containers_before_.push_back({slot, d->values, d->keys, 0});
    else if (auto* it = as<IteratorVar>(slot)) entry_containers_before_.push_back({slot, it->items, {}, it->next});
  });
}

void Translator::restore_entry_containers() {
  for (auto& saved : entry_containers_before_) {
    if (auto* seq = as<SequenceVar>(saved.container)) seq->items = saved.items;
    else if (auto* d = as<DictVar>(saved.container)) d->values = saved.items, d->keys = saved.keys;
    else if (auto* it = as<IteratorVar>(saved.container)) it->items = saved.items, it->next = saved.next;
  }
}

void Translator::finish_graph(const VarRef& result) {
  std::vector<ir::ValueId> outs;
  ir::OutputTree tree = flatten_outputs(*this, result, outs);
  // Inputs updated in place: their new values follow the results, for the runtime to write back.
  std::vector<ir::InputUpdate> updates;
  for (const auto& [input, var] : input_vars_) {
    const ir::ValueId now = as<TensorVar>(var)->value;
    if (now == out_.graph.inputs.at(static_cast<size_t>(input)).value) continue;
    updates.push_back({input, static_cast<int>(outs.size())});
    outs.push_back(now);
  }
  out_.graph.set_outputs(std::move(outs), std::move(tree));
  out_.graph.input_updates = std::move(updates);
}

VarRef Translator::translate_entry(PyObject* fn, std::vector<VarRef> args,
                                   std::vector<std::pair<std::string, VarRef>> kwargs) {
  Frame entry;
  VarRef result;
  auto close = [&] {
    entry_ = nullptr;
    frames_.clear();
    out_.graphs.push_back(std::move(out_.graph));
    out_.graph = out_.graphs.front();
  };
  try {
    bind_frame(entry, fn, std::move(args), std::move(kwargs), nullptr);
  } catch (const GraphBreakSignal&) {
    close();
    return nullptr;
  }
  entry_ = &entry;
  for (;;) {
    try {
      result = run(entry);
      break;
    } catch (const GraphBreakSignal&) {
      frames_.clear();
      inline_depth_ = 0;
      if (!resume_after_break(entry)) {
        close();
        return nullptr;
      }
    }
  }
  frames_.push_back(&entry);  // for the location of an error about the outputs
  finish_graph(result);
  close();
  return result;
}

bool Translator::can_resume() const {
  if (input_values_.size() != out_.graph.inputs.size()) return false;
  for (const auto& v : input_values_)
    if (!v) return false;
  return true;
}

bool Translator::resume_after_break(Frame& entry) {
  if (out_.breaks.size() >= kMaxBreaks) return false;
  if (!module_attribute_writes_.empty()) return false;  // their graph values are not carried over
  if (!can_resume()) return false;

  entry.stack = entry_stack_before_;
  restore_entry_containers();
  entry.kw_names = entry_kw_names_before_;
  entry.pc = entry_pc_before_;
  entry.returned = false;

  // 1. The graph so far, with the entry's live tensors as outputs, on the real inputs.
  std::vector<ir::ValueId> live;
  visit_frame(entry, [&](VarRef& slot) {
    if (auto* tv = as<TensorVar>(slot))
      if (std::find(live.begin(), live.end(), tv->value) == live.end()) live.push_back(tv->value);
  });
  ir::OutputTree tree;
  tree.kind = ir::OutputTree::Kind::Tuple;
  for (size_t i = 0; i < live.size(); ++i) {
    ir::OutputTree leaf;
    leaf.leaf = static_cast<int>(i);
    tree.children.push_back(leaf);
  }
  out_.graph.set_outputs(live, tree);
  std::map<ir::ValueId, PyRef> real;
  try {
    std::vector<ir::HostTensor> inputs;
    for (const auto& v : input_values_) inputs.push_back(host_from_tensor(v.get()));
    std::vector<ir::HostTensor> results = ir::evaluate(out_.graph, inputs);
    for (size_t i = 0; i < live.size(); ++i) real[live[i]] = tensor_from_host(results.at(i));
  } catch (const std::exception& e) {
    if (std::getenv("AOTRACE_DEBUG_RESUME")) fprintf(stderr, "resume: %s\n", e.what());
    return false;  // the reference implementations cannot run this graph: stop at this break
  }

  // 2. Live tensors become real ones; the graph is closed and a new one begins.
  std::map<Var*, VarRef> replaced;
  visit_frame(entry, [&](VarRef& slot) {
    auto* tv = as<TensorVar>(slot);
    if (!tv) return;
    auto& r = replaced[slot.get()];
    if (!r) r = std::make_shared<ConstVar>(real.at(tv->value), tv->source);
    slot = r;
  });
  out_.graphs.push_back(std::move(out_.graph));
  out_.graph = ir::Graph();
  weights_by_tensor_.clear();
  external_containers_.clear();  // their tensors are values of the graph before
  input_values_.clear();
  input_vars_.clear();  // later graphs take the live values as inputs: nothing to write back

  // 3. The breaking instruction runs for real.
  eager_ = true;
  frames_.push_back(&entry);
  try {
    StdoutToStderr redirect;
    step(entry);
  } catch (const GraphBreakSignal&) {
    out_.breaks.pop_back();  // the same break again: it cannot run for real either
    eager_ = false;
    frames_.clear();
    out_.graph = std::move(out_.graphs.back());  // tracing stops in the first graph's region
    out_.graphs.pop_back();
    return false;
  } catch (...) {
    eager_ = false;
    frames_.clear();
    throw;
  }
  eager_ = false;
  frames_.clear();

  // 4. Real tensors in the frame become the new graph's inputs.
  std::map<PyObject*, VarRef> lifted;
  bool ok = true;
  auto lift = [&](VarRef& slot, const std::string& name, const Source& source) {
    auto* c = as<ConstVar>(slot);
    if (!c || !is_tensor(c->obj.get())) return;
    auto& l = lifted[c->obj.get()];
    if (!l) {
      PyRef dtype = check(PyObject_Str(getattr(c->obj.get(), "dtype").get()), "dtype");
      auto d = ir::parse_dtype(py_str(dtype.get()));
      if (!d) {
        ok = false;
        return;
      }
      ir::TensorType type;
      type.dtype = *d;
      PyRef shape = check(PySequence_Tuple(getattr(c->obj.get(), "shape").get()), "shape");
      for (Py_ssize_t i = 0; i < PyTuple_Size(shape.get()); ++i)
        type.shape.push_back(ir::SymExpr(PyLong_AsLongLong(PyTuple_GetItem(shape.get(), i))));
      ir::ValueId v = out_.graph.add_input(name, type, source.str());
      input_values_.push_back(c->obj);
      l = std::make_shared<TensorVar>(v, source);
    }
    slot = l;
  };
  int counter = 0;
  auto lift_all = [&](VarRef& top, const std::string& name, const Source& source) {
    std::set<Var*> seen;
    bool first = true;
    visit_slots(top, [&](VarRef& slot) {
      if (first) {
        first = false;
        lift(slot, name, source);
      } else {
        const std::string n = "___" + name + "_" + std::to_string(counter++);
        lift(slot, n, Source::local(n));
      }
    }, seen);
  };
  for (size_t i = 0; i < entry.locals.size(); ++i) {
    const std::string& n = entry.bytecode->localsplus_names[i];
    lift_all(entry.locals[i], n, Source::local(n));
  }
  for (size_t i = 0; i < entry.stack.size(); ++i) {
    const std::string n = "___stack" + std::to_string(i);
    lift_all(entry.stack[i], n, Source::local(n));
  }
  return ok;
}

}  // namespace aotrace::embed
