// Value semantics of the Translator: wrapping outside objects, attributes, subscripts,
// operators, truth and iteration. Tensors go through the op table (torch_ops.cpp).
#include <algorithm>

#include <optional>

#include "embed/torch_ops.h"
#include "embed/translator.h"

namespace aotrace::embed {

std::string ConstVar::describe() const {
  std::string r = py_repr(obj.get());
  if (r.size() > 60) r = r.substr(0, 57) + "...";
  return type_name(obj.get()) + " " + r;
}

std::string SequenceVar::describe() const {
  const char* k = kind == Kind::List ? "list" : kind == Kind::Size ? "torch.Size" : "tuple";
  return std::string(k) + " of " + std::to_string(items.size());
}

std::string DictVar::describe() const {
  if (dataclass) return type_name(dataclass.get()) + " instance";
  return "dict of " + std::to_string(keys.size()) + " items";
}

std::string ModuleVar::describe() const { return "module " + type_name(module.get()); }

std::string FunctionVar::describe() const {
  return "function " + py_str(::aotrace::embed::getattr(fn.get(), "__qualname__").get());
}

bool is_instance_of(PyObject* obj, const char* module, const char* cls) {
  PyRef m = import(module);
  PyRef c = getattr(m.get(), cls);
  int r = PyObject_IsInstance(obj, c.get());
  if (r < 0) PyErr_Clear();
  return r == 1;
}

namespace {

// A weight's name in state_dict style: "L['self'].blocks[0].fc.weight" -> "blocks.0.fc.weight",
// "G['table']" -> "table". Sources without a name give "const<N>".
std::string weight_name(const Source& source, size_t index) {
  std::string s = source.str();
  if (s.rfind("L['self']", 0) == 0) s = s.substr(9);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '[') {
      if (!out.empty()) out += '.';
    } else if (c == ']' || c == '\'' || (c == '.' && out.empty())) {
      continue;
    } else if (isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
      out += c;
    }
  }
  if (out.rfind("L.", 0) == 0 || out.rfind("G.", 0) == 0) out = out.substr(2);
  return out.empty() ? "const" + std::to_string(index) : out;
}

}  // namespace

VarRef Translator::constant(PyObject* obj, const Source& source) {
  return std::make_shared<ConstVar>(PyRef::borrow(obj), source);
}

void Translator::set_root_module(PyObject* module) {
  for (const char* method : {"named_parameters", "named_buffers"}) {
    PyRef items = PyRef::steal(PyObject_CallMethod(module, method, nullptr));
    PyRef seq = items ? PyRef::steal(PySequence_List(items.get())) : PyRef();
    if (!seq) {  // a module whose named_* raise: names from sources instead
      PyErr_Clear();
      continue;
    }
    for (Py_ssize_t i = 0; i < PyList_Size(seq.get()); ++i) {
      PyObject* pair = PyList_GetItem(seq.get(), i);
      PyObject* tensor = PyTuple_GetItem(pair, 1);
      if (tensor == Py_None) continue;
      if (parameter_names_.emplace(tensor, py_str(PyTuple_GetItem(pair, 0))).second)
        named_tensors_.push_back(PyRef::borrow(tensor));
    }
  }
}

VarRef Translator::weight_for(PyObject* tensor, const Source& source) {
  if (auto it = weights_by_tensor_.find(tensor); it != weights_by_tensor_.end())
    return std::make_shared<TensorVar>(it->second, source);  // tied: stored once
  PyRef dtype_str = check(PyObject_Str(getattr(tensor, "dtype").get()), "str(dtype)");
  auto dtype = ir::parse_dtype(py_str(dtype_str.get()));
  if (!dtype)
    graph_break("unsupported dtype", "tensor " + source.str() + " has dtype " +
                                         py_str(dtype_str.get()) + ", which aotrace does not support");
  PyRef arr = check(PyObject_CallMethod(tensor, "detach", nullptr), "detach");
  arr = check(PyObject_CallMethod(arr.get(), "cpu", nullptr), "cpu");
  arr = check(PyObject_CallMethod(arr.get(), "contiguous", nullptr), "contiguous");
  PyRef shape = check(PySequence_Tuple(getattr(arr.get(), "shape").get()), "shape");
  ir::TensorType type;
  type.dtype = *dtype;
  for (Py_ssize_t i = 0; i < PyTuple_Size(shape.get()); ++i)
    type.shape.push_back(ir::SymExpr(PyLong_AsLongLong(PyTuple_GetItem(shape.get(), i))));
  // Bytes through a uint8 view, so every dtype (bf16 too) copies the same way.
  PyRef torch = import("torch");
  PyRef flat = check(PyObject_CallMethod(arr.get(), "reshape", "(i)", -1), "reshape");
  PyRef u8 = check(PyObject_CallMethod(flat.get(), "view", "(O)", getattr(torch.get(), "uint8").get()),
                   "view(uint8)");
  PyRef np = check(PyObject_CallMethod(u8.get(), "numpy", nullptr), "numpy");
  PyRef raw = check(PyObject_CallMethod(np.get(), "tobytes", nullptr), "tobytes");
  auto data = std::make_shared<ir::Bytes>(
      reinterpret_cast<const uint8_t*>(PyBytes_AsString(raw.get())),
      reinterpret_cast<const uint8_t*>(PyBytes_AsString(raw.get())) + PyBytes_Size(raw.get()));
  auto known = parameter_names_.find(tensor);
  ir::ValueId v = out_.graph.add_weight(known != parameter_names_.end() ? known->second
                                                                        : weight_name(source, out_.graph.weights.size()),
                                        type,
                                        source.str(), std::move(data));
  weights_by_tensor_[tensor] = v;
  keep_alive_.push_back(PyRef::borrow(tensor));
  return std::make_shared<TensorVar>(v, source);
}

PyRef Translator::weight_item(const VarRef& v) {
  auto* tv = as<TensorVar>(v);
  if (!tv || tv->source.empty() || eager_) return {};
  for (const auto& [tensor, value] : weights_by_tensor_) {
    if (value != tv->value) continue;
    PyRef n = PyRef::steal(PyObject_CallMethod(tensor, "numel", nullptr));
    if (!n || PyLong_AsLongLong(n.get()) != 1) {
      PyErr_Clear();
      return {};
    }
    PyRef item = check(PyObject_CallMethod(tensor, "item", nullptr), "Tensor.item");
    add_assumption(tv->source.str() + ".item() == " + py_repr(item.get()) +
                   " (a weight's value, read at compile time)");
    return item;
  }
  return {};
}

VarRef Translator::wrap(PyObject* obj, const Source& source) {
  if (is_instance_of(obj, "torch", "Tensor"))
    return eager_ ? constant(obj, source) : weight_for(obj, source);
  if (is_instance_of(obj, "torch.nn", "Module"))
    return std::make_shared<ModuleVar>(PyRef::borrow(obj), source);
  if (const TorchOp* op = torch_function(obj))
    return std::make_shared<TorchFnVar>(op, nullptr, op->name, PyRef::borrow(obj));
  if (is_instance_of(obj, "functools", "partial")) {
    std::vector<VarRef> args;
    std::vector<std::pair<std::string, VarRef>> kwargs;
    PyRef pa = getattr(obj, "args"), pk = getattr(obj, "keywords");
    for (Py_ssize_t i = 0; i < PyTuple_Size(pa.get()); ++i)
      args.push_back(wrap(PyTuple_GetItem(pa.get(), i), Source()));
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(pk.get(), &pos, &k, &v)) kwargs.emplace_back(py_str(k), wrap(v, Source()));
    return std::make_shared<PartialVar>(wrap(getattr(obj, "func").get(), Source()), std::move(args),
                                        std::move(kwargs));
  }
  if (PyFunction_Check(obj)) return std::make_shared<FunctionVar>(PyRef::borrow(obj), nullptr, source);
  if (PyMethod_Check(obj)) {
    PyObject* func = PyMethod_GET_FUNCTION(obj);
    PyObject* self = PyMethod_GET_SELF(obj);
    if (const TorchOp* op = torch_function(func))
      return std::make_shared<TorchFnVar>(op, wrap(self, Source()), op->name, PyRef::borrow(func));
    if (PyFunction_Check(func))
      return std::make_shared<FunctionVar>(PyRef::borrow(func), wrap(self, Source()), source);
  }
  if (is_symbolic_builtin(obj))
    return std::make_shared<BuiltinVar>(PyRef::borrow(obj), symbolic_builtin_name(obj), source);
  if (PyTuple_Check(obj) || PyList_Check(obj)) {
    // Containers are wrapped item by item, so tensors and modules inside them are tracked. A
    // list is one variable however often it is read, so that what the traced code stores into
    // it is what it reads back (YOLO's self.grid[i] = ...).
    if (auto it = external_containers_.find(obj); PyList_Check(obj) && it != external_containers_.end()) return it->second;
    std::vector<VarRef> items;
    PyRef seq = check(PySequence_Fast(obj, "sequence"), "sequence");
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.get()); ++i)
      items.push_back(wrap(PySequence_Fast_GET_ITEM(seq.get(), i), source.item(i)));
    auto var = std::make_shared<SequenceVar>(
        PyList_Check(obj) ? SequenceVar::Kind::List : SequenceVar::Kind::Tuple, std::move(items), source);
    if (PyList_Check(obj)) {
      var->external = PyRef::borrow(obj);
      external_containers_[obj] = var;
    }
    return var;
  }
  // A plain dict (or OrderedDict) from outside, as one variable too, so that what the traced
  // code or a forward hook stores into it (features[name] = out) is what it reads back.
  if (PyDict_CheckExact(obj) || Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(
                                                    getattr(import("collections").get(), "OrderedDict").get())) {
    if (auto it = external_containers_.find(obj); it != external_containers_.end()) return it->second;
    auto var = std::make_shared<DictVar>(source);
    var->external = PyRef::borrow(obj);
    external_containers_[obj] = var;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(obj, &pos, &k, &v)) {
      const Source item = PyUnicode_Check(k) ? source.item(py_str(k)) : PyLong_Check(k) ? source.item(PyLong_AsLongLong(k)) : Source();
      var->set(PyRef::borrow(k), wrap(v, item));
    }
    return var;
  }
  return constant(obj, source);
}

void Translator::note_mutation(const VarRef& container) {
  auto* seq = as<SequenceVar>(container);
  auto* dict = as<DictVar>(container);
  if (!(seq && seq->external) && !(dict && dict->external)) return;
  const std::string what = !container->source.empty() ? container->source.str()
                           : seq                      ? "a list from outside the traced code"
                                                      : "a dict from outside the traced code";
  add_assumption(what + " is modified by the traced code; every call runs as the capture did, from its "
                 "contents at compile time");
}

void Translator::add_assumption(const std::string& text) {
  for (const auto& a : out_.assumptions)
    if (a.text == text) return;
  out_.assumptions.push_back(ir::Assumption{text, loc()});
}

void Translator::note_specialisation(const SymIntVar& v) {
  if (v.input < 0) return;
  for (auto& g : out_.guards)
    if (g.kind == ir::Guard::Kind::DimEq && g.input == v.input && g.dim == v.dim) {
      g.origin = loc();
      return;
    }
}

VarRef Translator::add_input(const CaptureInput& input, int index, const Source& source,
                             PyObject* example) {
  input_values_.push_back(PyRef::borrow(example));
  ir::TensorType type;
  type.dtype = input.dtype;
  for (int64_t d : input.shape) type.shape.push_back(ir::SymExpr(d));
  for (const CaptureInput::DynamicDim& dd : input.dynamic) {
    type.shape.at(static_cast<size_t>(dd.dim)) = ir::SymExpr::symbol(dd.symbol);
    out_.graph.symbols[dd.symbol] = dd.range;
  }
  ir::ValueId v = out_.graph.add_input(input.name, type, source.str());
  auto guard = [&](ir::Guard::Kind kind, int dim, int64_t value) -> ir::Guard& {
    ir::Guard g;
    g.kind = kind;
    g.input = index;
    g.dim = dim;
    g.value = value;
    g.dtype = input.dtype;
    g.source = source.str();
    g.origin = input.origin;
    out_.guards.push_back(g);
    return out_.guards.back();
  };
  guard(ir::Guard::Kind::Rank, 0, static_cast<int64_t>(input.shape.size()));
  guard(ir::Guard::Kind::DType, 0, 0);
  if (input.on_cuda) {
    ir::Guard& on_gpu = guard(ir::Guard::Kind::Device, 0, 0);
    on_gpu.device = ir::Device{ir::Device::Kind::cuda, 0};
    on_gpu.origin = input.device_origin;
  }
  for (size_t d = 0; d < input.shape.size(); ++d) {
    const CaptureInput::DynamicDim* dd = nullptr;
    for (const auto& x : input.dynamic)
      if (x.dim == static_cast<int>(d)) dd = &x;
    if (!dd) {
      guard(ir::Guard::Kind::DimEq, static_cast<int>(d), input.shape[d]);
      continue;
    }
    // The first dim of a symbol binds it, within its range; later ones equal the first.
    auto bound = symbol_dims_.find(dd->symbol);
    if (bound != symbol_dims_.end()) {
      ir::Guard& g = guard(ir::Guard::Kind::DimsEqual, static_cast<int>(d), 0);
      g.other_input = bound->second.input;
      g.other_dim = bound->second.dim;
      g.other_source = bound->second.source;
      g.symbol = dd->symbol;
      g.origin = dd->declared;
      continue;
    }
    symbol_dims_[dd->symbol] = SymbolDim{index, static_cast<int>(d), source.str()};
    ir::Guard& range = guard(ir::Guard::Kind::DimRange, static_cast<int>(d), dd->range.min);
    range.value2 = dd->range.max;
    range.symbol = dd->symbol;
    range.origin = dd->declared;
    if (dd->range.multiple_of > 1) {
      ir::Guard& m = guard(ir::Guard::Kind::DimMultiple, static_cast<int>(d), dd->range.multiple_of);
      m.symbol = dd->symbol;
      m.origin = dd->declared;
    }
  }
  input_vars_.emplace_back(static_cast<int>(out_.graph.inputs.size() - 1), std::make_shared<TensorVar>(v, source));
  return input_vars_.back().second;
}

VarRef Translator::add_scalar_input(const CaptureInput& input, int index, const Source& source,
                                    PyObject* example) {
  // A graph input no op reads, so that the runtime takes and guards the value it was compiled
  // for; the program sees the Python value. Resuming after a break evaluates graphs on tensors:
  // the value as a 0-d tensor.
  ir::HostTensor value = ir::HostTensor::zeros(input.dtype, {});
  value.set(0, input.value);
  input_values_.push_back(tensor_from_host(value));
  out_.graph.add_input(input.name, ir::TensorType{input.dtype, {}, {}}, source.str());
  auto guard = [&](ir::Guard::Kind kind, int64_t v) {
    ir::Guard g;
    g.kind = kind;
    g.input = index;
    g.value = v;
    g.dtype = input.dtype;
    g.scalar = input.value;
    g.source = source.str();
    g.origin = input.origin;
    out_.guards.push_back(g);
  };
  guard(ir::Guard::Kind::Rank, 0);
  guard(ir::Guard::Kind::DType, 0);
  guard(ir::Guard::Kind::ValueEq, 0);
  // No source: its uses need no assumption, the guard checks it on every call.
  return std::make_shared<ConstVar>(PyRef::borrow(example), Source());
}

ir::ValueId Translator::rng_state() {
  if (out_.graph.rng_input >= 0) return out_.graph.inputs.at(static_cast<size_t>(out_.graph.rng_input)).value;
  // (seed 0, offset 0) when the program runs for real after a break; the runtime's per call.
  ir::HostTensor state = ir::HostTensor::zeros(ir::DType::i64, {2});
  input_values_.push_back(tensor_from_host(state));
  out_.graph.rng_input = static_cast<int>(out_.graph.inputs.size());
  return out_.graph.add_input("<rng>", ir::TensorType{ir::DType::i64, {}, {ir::SymExpr(2)}}, "<generator state>");
}

bool Translator::is_entry_input(const VarRef& v) const {
  return std::any_of(input_vars_.begin(), input_vars_.end(), [&](const auto& in) { return in.second == v; });
}

PyRef Translator::real_function(const FunctionVar& f) {
  // MAKE_FUNCTION in traced code made `f.fn` without a closure: its cells are CellVars of the
  // traced frame. Code that reads a free variable (a comprehension reading `x`) run for real
  // needs real cells, or CPython reads a closure that is not there.
  if (!f.traced_closure || f.closure.empty()) return f.fn;
  PyRef cells = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(f.closure.size())));
  for (size_t i = 0; i < f.closure.size(); ++i) {
    auto* cell = as<CellVar>(f.closure[i]);
    PyRef contents;
    if (cell && cell->contents) {
      contents = to_python(cell->contents);
      if (!contents) return {};
    }
    PyTuple_SetItem(cells.get(), static_cast<Py_ssize_t>(i), check(PyCell_New(contents.get()), "cell").release());
  }
  PyFunctionObject* src = reinterpret_cast<PyFunctionObject*>(f.fn.get());
  PyRef fn = check(PyFunction_NewWithQualName(src->func_code, src->func_globals, src->func_qualname),
                   "PyFunction_New");
  if (src->func_defaults) PyFunction_SetDefaults(fn.get(), src->func_defaults);
  if (src->func_kwdefaults) PyFunction_SetKwDefaults(fn.get(), src->func_kwdefaults);
  if (PyFunction_SetClosure(fn.get(), cells.get()) != 0) check(nullptr, "PyFunction_SetClosure");
  return fn;
}

PyRef Translator::to_python(const VarRef& v) { return v->as_python(*this); }

PyRef Var::as_python(Translator&) { return {}; }

PyRef SymIntVar::as_python(Translator& t) {
  auto value = expr.as_constant();
  if (!value) {
    std::string dims;
    for (const std::string& s : expr.symbols()) dims += (dims.empty() ? "" : ", ") + s;
    t.graph_break("dynamic shape",
                  "the code needs the concrete value of " + expr.str() +
                      " (a Python int, e.g. a loop over range() or a dict key), but " + dims +
                      " is a dynamic dim",
                  "declare " + dims + " static, or list its sizes (`" + expr.symbols().front() +
                      ": [32, 64, 128]` under dims)");
  }
  t.note_specialisation(*this);
  return PyRef::steal(PyLong_FromLongLong(*value));
}

PyRef SequenceVar::as_python(Translator& t) {
  PyRef out = PyRef::steal(PyList_New(static_cast<Py_ssize_t>(items.size())));
  for (size_t i = 0; i < items.size(); ++i) {
    PyRef item = t.to_python(items[i]);
    if (!item) return {};
    PyList_SetItem(out.get(), static_cast<Py_ssize_t>(i), item.release());
  }
  if (kind == Kind::List) return out;
  PyRef tuple = PyRef::steal(PyList_AsTuple(out.get()));
  if (kind == Kind::Size)
    return check(PyObject_CallOneArg(::aotrace::embed::getattr(import("torch").get(), "Size").get(), tuple.get()), "torch.Size");
  return tuple;
}

PyRef SliceVar::as_python(Translator& t) {
  PyRef a = t.to_python(start), b = t.to_python(stop), c = t.to_python(step);
  if (!a || !b || !c) return {};
  return PyRef::steal(PySlice_New(a.get(), b.get(), c.get()));
}

PyRef FunctionVar::as_python(Translator& t) {
  PyRef f = t.real_function(*this);
  if (!f || !self) return f;
  PyRef bound_to = t.to_python(self);
  if (!bound_to) return {};
  return check(PyMethod_New(f.get(), bound_to.get()), "bound method");
}

PyRef DictVar::as_python(Translator& t) {
  PyRef out = PyRef::steal(PyDict_New());
  for (size_t i = 0; i < keys.size(); ++i) {
    PyRef item = t.to_python(values[i]);
    if (!item) return {};
    PyDict_SetItem(out.get(), keys[i].get(), item.get());
  }
  if (dataclass && instance) {  // object.__new__(cls), its __dict__ filled
    PyRef obj = check(PyObject_CallMethod(dataclass.get(), "__new__", "O", dataclass.get()), "__new__");
    PyRef dict = ::aotrace::embed::getattr(obj.get(), "__dict__");
    if (PyDict_Update(dict.get(), out.get()) != 0) check(nullptr, "__dict__.update");
    return obj;
  }
  if (dataclass) {
    PyRef none = PyRef::steal(PyTuple_New(0));
    return check(PyObject_Call(dataclass.get(), none.get(), out.get()), "a dataclass");
  }
  return out;
}

PyRef IteratorVar::as_python(Translator& t) {
  PyRef list = PyRef::steal(PyList_New(0));
  for (size_t i = next; i < items.size(); ++i) {
    PyRef item = t.to_python(items[i]);
    if (!item) return {};
    PyList_Append(list.get(), item.get());
  }
  return check(PyObject_GetIter(list.get()), "iter");
}

PyRef TorchFnVar::as_python(Translator& t) {
  if (!self) return obj;
  PyRef tensor = t.to_python(self);
  if (!tensor) return {};
  const std::string method = name.rfind("Tensor.", 0) == 0 ? name.substr(7) : name;
  PyObject* r = PyObject_GetAttrString(tensor.get(), method.c_str());
  if (!r) PyErr_Clear();
  return PyRef::steal(r);
}

PyRef ContainerMethodVar::as_python(Translator& t) {
  if (!as<ConstVar>(self) && !as<ModuleVar>(self)) return {};
  PyRef real = t.to_python(self);
  return real ? attribute_or_null(real.get(), name.c_str()) : PyRef();
}

PyRef PartialVar::as_python(Translator& t) {
  PyRef f = t.to_python(fn);
  if (!f) return {};
  PyRef pargs = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(args.size() + 1)));
  PyTuple_SetItem(pargs.get(), 0, f.release());
  for (size_t i = 0; i < args.size(); ++i) {
    PyRef a = t.to_python(args[i]);
    if (!a) return {};
    PyTuple_SetItem(pargs.get(), static_cast<Py_ssize_t>(i + 1), a.release());
  }
  PyRef kw = PyRef::steal(PyDict_New());
  for (auto& [k, val] : kwargs) {
    PyRef a = t.to_python(val);
    if (!a) return {};
    PyDict_SetItemString(kw.get(), k.c_str(), a.get());
  }
  return check(PyObject_Call(::aotrace::embed::getattr(import("functools").get(), "partial").get(), pargs.get(), kw.get()),
               "functools.partial");
}

void Translator::note_constant_use(const VarRef& v) {
  auto* c = as<ConstVar>(v);
  if (!c || c->source.empty()) return;
  PyObject* o = c->obj.get();
  if (is_plain_value(o))
    add_assumption(c->source.str() + " == " + py_repr(o));
}

void Translator::note_float_use(const VarRef& v) {
  auto* c = as<ConstVar>(v);
  if (c && !c->source.empty() && PyFloat_Check(c->obj.get())) note_constant_use(v);
}

bool Translator::truth(const VarRef& v) { return v->truth(*this); }

bool Var::truth(Translator& t) {
  t.note_constant_use(self());
  PyRef o = t.to_python(self());
  if (!o) return true;  // modules, functions, …
  int r = PyObject_IsTrue(o.get());
  if (r < 0) t.raise_pending("truth value");
  return r == 1;
}

bool TensorVar::truth(Translator& t) {
  if (PyRef v = t.weight_item(self())) return PyObject_IsTrue(v.get()) == 1;
  t.graph_break("data-dependent control flow",
                "a branch depends on the value of a tensor, which is unknown at compile time",
                "use torch.where(cond, a, b) to select values, or decide the branch outside the "
                "traced function");
}

namespace {
VarRef py_int(Translator& t, long long v) {
  PyRef o = PyRef::steal(PyLong_FromLongLong(v));
  return t.constant(o.get());
}
}  // namespace

VarRef Var::len(Translator&) { return nullptr; }
VarRef SequenceVar::len(Translator& t) { return py_int(t, static_cast<long long>(items.size())); }
VarRef DictVar::len(Translator& t) { return py_int(t, static_cast<long long>(keys.size())); }
VarRef TensorVar::len(Translator& t) { return t.subscript(t.attribute(self(), "shape"), py_int(t, 0)); }

VarRef ModuleVar::len(Translator& t) {  // the module's own __len__, as Python calls it
  const Py_ssize_t n = PyObject_Length(module.get());
  if (n < 0) t.raise_pending("len() of " + describe());
  return py_int(t, static_cast<long long>(n));
}

PyRef TensorVar::python_type(Translator&) { return ::aotrace::embed::getattr(import("torch").get(), "Tensor"); }

PyRef SequenceVar::python_type(Translator&) {
  if (kind == Kind::Size) return ::aotrace::embed::getattr(import("torch").get(), "Size");
  return PyRef::borrow(kind == Kind::List ? reinterpret_cast<PyObject*>(&PyList_Type)
                                          : reinterpret_cast<PyObject*>(&PyTuple_Type));
}

PyRef DictVar::python_type(Translator&) {
  return dataclass ? dataclass : PyRef::borrow(reinterpret_cast<PyObject*>(&PyDict_Type));
}

PyRef IteratorVar::python_type(Translator&) {
  PyRef empty = PyRef::steal(PyList_New(0));
  PyRef it = check(PyObject_GetIter(empty.get()), "iter");
  return PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(it.get())));
}

namespace {
// The class attribute `name` of type(obj) found along its MRO without running descriptors.
PyObject* class_attribute(PyObject* obj, const std::string& name) {
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
  return _PyType_Lookup(Py_TYPE(obj), key.get());  // borrowed
}

}  // namespace

bool is_autograd_function(PyObject* cls) {
  if (!PyType_Check(cls)) return false;
  PyRef base = getattr(import("torch.autograd").get(), "Function");
  const int r = PyObject_IsSubclass(cls, base.get());
  if (r < 0) PyErr_Clear();
  return r == 1 && cls != base.get();
}

VarRef Translator::attribute(const VarRef& obj, const std::string& name) {
  if (VarRef m = container_method(*this, obj, name)) return m;
  return obj->getattr(*this, name);
}

// A plain Python object's attribute, read for real.
VarRef Var::getattr(Translator& t, const std::string& name) {
  PyRef o = t.to_python(self());
  if (!o)
    t.graph_break("unsupported Python", "attribute '" + name + "' of " + describe(),
                  "read attributes of modules, tensors and plain Python objects only");
  PyObject* r = PyObject_GetAttrString(o.get(), name.c_str());
  if (!r) t.raise_pending("reading attribute '" + name + "' of " + describe());
  PyRef value = PyRef::steal(r);
  return t.wrap(value.get(), source.attr(name));
}

VarRef SuperVar::getattr(Translator& t, const std::string& name) {
  PyRef instance = t.to_python(self);
  if (!instance) t.graph_break("unsupported Python", "super() of " + self->describe(), "");
  PyRef super_obj = check(PyObject_CallFunctionObjArgs(builtin_object("super").get(), cls.get(), instance.get(), nullptr),
                          "super()");
  PyObject* r = PyObject_GetAttrString(super_obj.get(), name.c_str());
  if (!r) t.raise_pending("super()." + name);
  PyRef value = PyRef::steal(r);
  if (PyMethod_Check(value.get()) && PyMethod_GET_SELF(value.get()) == instance.get() &&
      PyFunction_Check(PyMethod_GET_FUNCTION(value.get())))
    return std::make_shared<FunctionVar>(PyRef::borrow(PyMethod_GET_FUNCTION(value.get())), self, Source());
  return t.wrap(value.get(), Source());
}

VarRef TensorVar::getattr(Translator& t, const std::string& name) {
  if (VarRef r = tensor_attribute(t, Var::self(), name)) return r;
  if (const TorchOp* op = tensor_method(name)) return std::make_shared<TorchFnVar>(op, Var::self(), "Tensor." + name);
  t.graph_break("torch callable with no op mapping", "Tensor attribute '" + name + "' is not supported",
                "use an attribute or method aotrace supports (shape, dtype, view, sum, …)");
}

VarRef ModuleVar::getattr(Translator& t, const std::string& name) {
  PyObject* mod = module.get();
  if (VarRef written = t.module_attribute_written(mod, name)) return written;
  // CPython's order (object.__getattribute__, then nn.Module.__getattr__): a data descriptor
  // of the class, the instance dict, any other class attribute (a method named like a
  // submodule wins over it), and only then parameters, buffers and submodules.
  PyObject* descr = class_attribute(mod, name);
  if (descr && PyObject_TypeCheck(descr, &PyProperty_Type)) {
    // A property runs as traced code (it may compute tensors).
    PyRef fget = ::aotrace::embed::getattr(descr, "fget");
    if (PyFunction_Check(fget.get())) return t.inline_function(fget.get(), {self()}, {});
  }
  const bool data_descriptor = descr && Py_TYPE(descr)->tp_descr_set;
  PyObject** dict = _PyObject_GetDictPtr(mod);
  const bool in_instance_dict = !data_descriptor && dict && *dict && PyDict_GetItemString(*dict, name.c_str());
  if (!descr && !in_instance_dict) {
    for (const char* held : {"_parameters", "_buffers", "_modules"}) {
      PyRef d = ::aotrace::embed::getattr(mod, held);
      if (PyObject* item = PyDict_GetItemString(d.get(), name.c_str())) {
        if (item == Py_None) return t.constant(Py_None, source.attr(name));
        return t.wrap(item, source.attr(name));
      }
    }
  }
  PyObject* r = PyObject_GetAttrString(mod, name.c_str());
  if (!r) t.raise_pending("reading " + source.str() + "." + name);
  PyRef value = PyRef::steal(r);
  if (name == "training") t.add_assumption(source.attr(name).str() + " == " + py_str(value.get()));
  // A method bound to this module keeps the module variable as `self`, so the weights it
  // reads keep their sources (ResNet's forward calls self._forward_impl).
  if (PyMethod_Check(value.get()) && PyMethod_GET_SELF(value.get()) == mod &&
      PyFunction_Check(PyMethod_GET_FUNCTION(value.get())) && !torch_function(PyMethod_GET_FUNCTION(value.get())))
    return std::make_shared<FunctionVar>(PyRef::borrow(PyMethod_GET_FUNCTION(value.get())), self(), source.attr(name));
  return t.wrap(value.get(), source.attr(name));
}

namespace {

// A list or dict of the trace converts to a new Python object: a method run on that copy
// (list.sort, dict.popitem) would change nothing the trace sees, so it is not run.
[[noreturn]] void unmodelled_method(Translator& t, const Var& container, const std::string& name) {
  t.graph_break("unsupported Python", "method '" + name + "' of " + container.describe() + " in traced code",
                "use the list and dict methods aotrace models (append, extend, insert, pop, remove, clear, reverse, "
                "sort, copy, index, count; get, pop, update, clear, setdefault, copy, items, keys, values), or build a "
                "new value");
}

}  // namespace

VarRef DictVar::getattr(Translator& t, const std::string& name) {
  if (!dataclass) unmodelled_method(t, *this, name);
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));  // a dataclass instance's field
  if (const int k = find(key.get()); k >= 0) return values[static_cast<size_t>(k)];
  // The class attribute as its __dict__ holds it: a function is a method of this instance, a
  // property runs as traced code, a staticmethod or classmethod is what the class gives.
  PyObject* raw = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(dataclass.get()), key.get());
  if (raw && PyFunction_Check(raw)) return std::make_shared<FunctionVar>(PyRef::borrow(raw), self(), Source());
  if (raw && PyObject_TypeCheck(raw, &PyProperty_Type)) {
    PyRef fget = ::aotrace::embed::getattr(raw, "fget");
    if (PyFunction_Check(fget.get())) return t.inline_function(fget.get(), {self()}, {});
  }
  PyRef cls_attr = attribute_or_null(dataclass.get(), name.c_str());
  if (cls_attr) return t.wrap(cls_attr.get(), Source());
  t.raise_python(PyRef::steal(PyObject_CallFunction(PyExc_AttributeError, "s", name.c_str())),
                 describe() + " has no attribute '" + name + "'", "");
}

VarRef SequenceVar::getattr(Translator& t, const std::string& name) {
  if (kind == Kind::List) unmodelled_method(t, *this, name);
  for (size_t i = 0; i < fields.size() && i < items.size(); ++i)  // a named tuple's field: max(dim).values
    if (fields[i] == name) return items[i];
  if (name == "_fields" && !fields.empty()) {
    PyRef names = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(fields.size())));
    for (size_t i = 0; i < fields.size(); ++i)
      PyTuple_SetItem(names.get(), static_cast<Py_ssize_t>(i), PyUnicode_FromString(fields[i].c_str()));
    return t.constant(names.get());
  }
  return Var::getattr(t, name);
}

void Var::setattr(Translator& t, const std::string& name, VarRef) {
  t.graph_break("side effect", "assignment to attribute '" + name + "' of " + describe(),
                "keep the traced function free of attribute mutation (compute a local instead)");
}

void ModuleVar::setattr(Translator& t, const std::string& name, VarRef value) {
  t.store_module_attribute(self(), name, std::move(value));
}

void DictVar::setattr(Translator& t, const std::string& name, VarRef value) {
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
  if (instance) return set(key, std::move(value));  // an attribute of a plain object of the trace
  PyRef fields = dataclass ? attribute_or_null(dataclass.get(), "__dataclass_fields__") : PyRef();
  if (!fields || PyDict_Contains(fields.get(), key.get()) != 1) return Var::setattr(t, name, value);
  // A field of a dataclass instance of the trace (o.pooler_output = ...).
  PyRef params = attribute_or_null(dataclass.get(), "__dataclass_params__");
  PyRef frozen = params ? attribute_or_null(params.get(), "frozen") : PyRef();
  if (frozen && frozen.get() == Py_True) {
    PyRef error = ::aotrace::embed::getattr(import("dataclasses").get(), "FrozenInstanceError");
    t.raise_python(
        PyRef::steal(PyObject_CallFunction(error.get(), "s", ("cannot assign to field '" + name + "'").c_str())),
        "assignment to field '" + name + "' of a frozen dataclass", "", true);
  }
  set(key, std::move(value));
}

VarRef Translator::module_attribute_written(PyObject* module, const std::string& name) const {
  auto it = module_attribute_writes_.find({module, name});
  return it == module_attribute_writes_.end() ? nullptr : it->second;
}

void Translator::store_module_attribute(const VarRef& module, const std::string& name, VarRef value) {
  auto* m = as<ModuleVar>(module);
  AOT_CHECK(m, "store_module_attribute of " + module->describe());
  auto key = std::make_pair(m->module.get(), name);
  if (!module_attribute_writes_.count(key)) {
    PyObject* before = PyObject_GetAttrString(m->module.get(), name.c_str());
    std::string was = "unset";
    if (before) {
      was = is_plain_value(before) ? py_repr(before) : "a " + type_name(before);
      Py_DECREF(before);
    } else {
      PyErr_Clear();
    }
    const std::string where = module->source.empty() ? m->describe() : module->source.str();
    add_assumption(where + "." + name + " is assigned by the traced code; every call runs as the capture " +
                   "did, from its compile-time value (" + was + ")");
  }
  module_attribute_writes_[key] = std::move(value);
}

PyRef builtin_object(const char* name) {
  return PyRef::borrow(PyDict_GetItemString(PyEval_GetBuiltins(), name));
}

namespace {
int64_t normalise_index(Translator& t, int64_t i, size_t size) {
  int64_t n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n)
    t.raise_python(PyRef::steal(PyObject_CallFunction(PyExc_IndexError, "s", "index out of range")),
                   "index " + std::to_string(i) + " out of range for a sequence of " + std::to_string(n), "");
  return i;
}
}  // namespace

namespace {

// A slice as Python writes it in a subscript: "1:", ":3", "::2".
std::string slice_text(PyObject* slice) {
  auto part = [&](const char* name) {
    PyRef v = getattr(slice, name);
    return v.get() == Py_None ? std::string() : py_repr(v.get());
  };
  std::string s = part("start") + ":" + part("stop");
  if (std::string step = part("step"); !step.empty()) s += ":" + step;
  return s;
}

}  // namespace

VarRef Translator::subscript(const VarRef& obj, const VarRef& index) { return obj->getitem(*this, index); }

// A plain Python object's item, read for real.
VarRef Var::getitem(Translator& t, const VarRef& index) {
  PyRef o = t.to_python(self()), idx = t.to_python(index);
  if (!o || !idx) t.graph_break("unsupported Python", "indexing " + describe() + " with " + index->describe(), "");
  PyObject* r = PyObject_GetItem(o.get(), idx.get());
  if (!r) t.raise_pending("indexing " + describe());
  PyRef item = PyRef::steal(r);
  Source s = PyLong_Check(idx.get())      ? source.item(PyLong_AsLongLong(idx.get()))
             : PyUnicode_Check(idx.get()) ? source.item(py_str(idx.get()))
                                          : Source();
  return t.wrap(item.get(), s);
}

VarRef TensorVar::getitem(Translator& t, const VarRef& index) {
  const TorchOp* op = tensor_method("__getitem__");
  AOT_CHECK(op, "the op table has no Tensor.__getitem__");
  return op->call(t, CallArgs{{self(), index}, {}});
}

VarRef SequenceVar::getitem(Translator& t, const VarRef& index) {
  PyRef idx = t.to_python(index);
  if (idx && PyLong_Check(idx.get()))
    return items[static_cast<size_t>(normalise_index(t, PyLong_AsLongLong(idx.get()), items.size()))];
  if (idx && PySlice_Check(idx.get())) {
    Py_ssize_t start, stop, step;
    PySlice_Unpack(idx.get(), &start, &stop, &step);
    Py_ssize_t n = PySlice_AdjustIndices(static_cast<Py_ssize_t>(items.size()), &start, &stop, step);
    std::vector<VarRef> sliced;
    for (Py_ssize_t i = 0; i < n; ++i) sliced.push_back(items[static_cast<size_t>(start + i * step)]);
    return std::make_shared<SequenceVar>(kind, std::move(sliced));
  }
  t.graph_break("unsupported Python", "indexing a sequence with " + index->describe(), "");
}

VarRef DictVar::getitem(Translator& t, const VarRef& index) {
  PyRef idx = t.to_python(index);
  const int k = idx ? find(idx.get()) : -1;
  if (k < 0)
    t.raise_python(PyRef::steal(PyObject_CallFunctionObjArgs(PyExc_KeyError, idx ? idx.get() : Py_None, nullptr)),
                   "KeyError: " + (idx ? py_repr(idx.get()) : index->describe()), "");
  return values[static_cast<size_t>(k)];
}

VarRef ModuleVar::getitem(Translator& t, const VarRef& index) {
  PyRef idx = t.to_python(index);
  if (!idx) t.graph_break("unsupported Python", "indexing a module with " + index->describe(), "");
  PyObject* r = PyObject_GetItem(module.get(), idx.get());
  if (!r) t.raise_pending("indexing " + describe());
  PyRef item = PyRef::steal(r);
  Source s = PyLong_Check(idx.get())    ? source.item(PyLong_AsLongLong(idx.get()))
             : PySlice_Check(idx.get()) ? source.sliced(slice_text(idx.get()))
                                        : source.item(py_str(idx.get()));
  return t.wrap(item.get(), s);
}

namespace {

// The items of a traced sequence, or of a compile-time tuple or list.
std::optional<std::vector<VarRef>> sequence_operand(Translator& t, const VarRef& v, SequenceVar::Kind& kind) {
  if (auto* seq = as<SequenceVar>(v)) {
    kind = seq->kind == SequenceVar::Kind::Size ? SequenceVar::Kind::Tuple : seq->kind;
    return seq->items;
  }
  auto* c = as<ConstVar>(v);
  if (!c || !(PyTuple_Check(c->obj.get()) || PyList_Check(c->obj.get()))) return std::nullopt;
  kind = PyList_Check(c->obj.get()) ? SequenceVar::Kind::List : SequenceVar::Kind::Tuple;
  std::vector<VarRef> items;
  PyRef tuple = PyRef::steal(PySequence_Tuple(c->obj.get()));
  for (Py_ssize_t i = 0; i < PyTuple_Size(tuple.get()); ++i) items.push_back(t.constant(PyTuple_GetItem(tuple.get(), i)));
  return items;
}

// seq + seq and seq * n where a sequence holds traced values ([x] * 3, (a,) + rest).
VarRef sequence_operator(Translator& t, const std::string& op, const VarRef& a, const VarRef& b) {
  if (!as<SequenceVar>(a) && !as<SequenceVar>(b)) return nullptr;
  SequenceVar::Kind ka{}, kb{};
  auto ia = sequence_operand(t, a, ka), ib = sequence_operand(t, b, kb);
  if (op == "+" && ia && ib && ka == kb) {
    ia->insert(ia->end(), ib->begin(), ib->end());
    return std::make_shared<SequenceVar>(ka, std::move(*ia));
  }
  if ((op == "==" || op == "!=") && ia && ib) {
    // Sizes holding shape symbols (x.shape == (t, t)): item by item, each decided by the ranges.
    auto symbolic = [](const std::vector<VarRef>& items) {
      return std::any_of(items.begin(), items.end(), [](const VarRef& v) { return as<SymIntVar>(v) != nullptr; });
    };
    if (symbolic(*ia) || symbolic(*ib)) {
      bool equal = ka == kb && ia->size() == ib->size();
      for (size_t i = 0; equal && i < ia->size(); ++i) {
        PyRef r = t.to_python(t.binary_op("==", (*ia)[i], (*ib)[i]));
        if (!r) return nullptr;
        equal = PyObject_IsTrue(r.get()) == 1;
      }
      return t.constant(equal == (op == "==") ? Py_True : Py_False);
    }
  }
  if (op == "*" && (ia != std::nullopt) != (ib != std::nullopt)) {
    PyRef n = t.to_python(ia ? b : a);
    if (!n || !PyLong_Check(n.get())) return nullptr;
    const std::vector<VarRef>& items = ia ? *ia : *ib;
    std::vector<VarRef> out;
    for (long long k = PyLong_AsLongLong(n.get()); k > 0; --k) out.insert(out.end(), items.begin(), items.end());
    return std::make_shared<SequenceVar>(ia ? ka : kb, std::move(out));
  }
  return nullptr;
}

}  // namespace

// A comparison of sizes: decided by the symbols' ranges (a constant, guarded by the range
// guards), or a RangeSplit when it depends on one symbol the range does not decide, or a
// graph break when it depends on several. Null: no symbol (the caller compares the ints).
VarRef Translator::compare_sizes(const std::string& op, const ir::SymExpr& a, const ir::SymExpr& b) {
  const ir::SymExpr d = a - b;
  std::vector<std::string> symbols = d.symbols();
  auto holds = [&](int64_t x) {
    return op == "<" ? x < 0 : op == "<=" ? x <= 0 : op == ">" ? x > 0 : op == ">=" ? x >= 0 : op == "==" ? x == 0 : x != 0;
  };
  if (symbols.empty()) {  // the same symbols on both sides (seq == seq), or plain ints
    if (a.is_constant() && b.is_constant()) return nullptr;
    return constant(holds(d.constant()) ? Py_True : Py_False);
  }
  const std::string condition = a.str() + " " + op + " " + b.str();
  if (auto bounds = ir::sym_bounds(d, out_.graph.symbols)) {
    if (holds(bounds->first) == holds(bounds->second) &&
        (op != "==" && op != "!=" ? true : bounds->first == bounds->second || bounds->first > 0 || bounds->second < 0))
      return constant(holds(bounds->first) ? Py_True : Py_False);
  }
  if (symbols.size() == 1) {
    // Every size of the range, in order: its maximal runs of one truth value are the parts.
    const ir::SymRange range = out_.graph.symbols.at(symbols[0]);
    const int64_t m = std::max<int64_t>(1, range.multiple_of);
    const int64_t first = (range.min + m - 1) / m * m;
    if ((range.max - first) / m <= (int64_t{1} << 20)) {
      RangeSplit split{symbols[0], {}, condition, loc()};
      std::optional<bool> run_truth;
      for (int64_t x = first; x <= range.max; x += m) {
        auto v = d.evaluate({{symbols[0], x}});
        AOT_CHECK(v.has_value(), "size expression " + d.str() + " has no value at " + symbols[0] + " = " + std::to_string(x));
        const bool t = holds(*v);
        if (!run_truth || *run_truth != t) split.parts.push_back({x, x, m});
        split.parts.back().max = x;
        run_truth = t;
      }
      if (split.parts.size() == 1)
        return constant(*run_truth ? Py_True : Py_False);
      throw split;
    }
  }
  std::string dims;
  for (const std::string& s : symbols) dims += (dims.empty() ? "" : ", ") + s;
  graph_break("dynamic shape", "the branch on " + condition + " depends on the dynamic dims " + dims +
                                   " together; only a condition on one dynamic dim can split its range",
              "declare all but one of " + dims + " static, or list their sizes");
}

VarRef Translator::binary_op(const std::string& op, const VarRef& a, const VarRef& b) {
  if (as<TensorVar>(a) || as<TensorVar>(b)) return tensor_operator(*this, op, a, b);
  if (VarRef r = sequence_operator(*this, op, a, b)) return r;
  auto* sa = as<SymIntVar>(a);
  auto* sb = as<SymIntVar>(b);
  const bool comparison = op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=";
  if ((sa || sb) && (comparison || op == "+" || op == "-" || op == "*" || op == "//" || op == "%")) {
    PyRef pa = sa ? PyRef() : to_python(a), pb = sb ? PyRef() : to_python(b);
    auto expr = [&](SymIntVar* s, const PyRef& p) -> std::optional<ir::SymExpr> {
      if (s) return s->expr;
      if (p && PyLong_Check(p.get()) && !PyBool_Check(p.get())) return ir::SymExpr(PyLong_AsLongLong(p.get()));
      return std::nullopt;
    };
    auto ea = expr(sa, pa), eb = expr(sb, pb);
    if (ea && eb && comparison) {
      if (VarRef decided = compare_sizes(op, *ea, *eb)) return decided;
    } else if (ea && eb) {
      ir::SymExpr r = op == "+" ? *ea + *eb : op == "-" ? *ea - *eb : op == "*" ? *ea * *eb
                    : op == "//" ? floordiv(*ea, *eb) : mod(*ea, *eb);
      return std::make_shared<SymIntVar>(r);
    }
  }
  PyRef pa = to_python(a), pb = to_python(b);
  if (!pa || !pb)
    graph_break("unsupported Python", "operator " + op + " on " + a->describe() + " and " + b->describe(), "");
  if (op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=") {
    note_constant_use(a);
    note_constant_use(b);
  } else {
    note_float_use(a);
    note_float_use(b);
  }
  PyObject* r = nullptr;
  PyObject *x = pa.get(), *y = pb.get();
  if (op == "+") r = PyNumber_Add(x, y);
  else if (op == "-") r = PyNumber_Subtract(x, y);
  else if (op == "*") r = PyNumber_Multiply(x, y);
  else if (op == "/") r = PyNumber_TrueDivide(x, y);
  else if (op == "//") r = PyNumber_FloorDivide(x, y);
  else if (op == "%") r = PyNumber_Remainder(x, y);
  else if (op == "**") r = PyNumber_Power(x, y, Py_None);
  else if (op == "@") r = PyNumber_MatrixMultiply(x, y);
  else if (op == "&") r = PyNumber_And(x, y);
  else if (op == "|") r = PyNumber_Or(x, y);
  else if (op == "^") r = PyNumber_Xor(x, y);
  else if (op == "<<") r = PyNumber_Lshift(x, y);
  else if (op == ">>") r = PyNumber_Rshift(x, y);
  else if (op == "<") r = PyObject_RichCompare(x, y, Py_LT);
  else if (op == "<=") r = PyObject_RichCompare(x, y, Py_LE);
  else if (op == ">") r = PyObject_RichCompare(x, y, Py_GT);
  else if (op == ">=") r = PyObject_RichCompare(x, y, Py_GE);
  else if (op == "==") r = PyObject_RichCompare(x, y, Py_EQ);
  else if (op == "!=") r = PyObject_RichCompare(x, y, Py_NE);
  else internal_error("binary_op: unknown operator " + op);
  if (!r)
    raise_pending("operator " + op);
  PyRef result = PyRef::steal(r);
  return constant(result.get());
}

bool indexed_container(PyObject* module) {
  PyRef iter = attribute_or_null(reinterpret_cast<PyObject*>(Py_TYPE(module)), "__iter__");
  if (!iter) return false;
  for (const char* cls : {"Sequential", "ModuleList", "ParameterList"}) {
    PyRef container = attribute_or_null(getattr(import("torch.nn").get(), cls).get(), "__iter__");
    if (container && container.get() == iter.get()) return true;
  }
  return false;
}

VarRef Translator::iterate(const VarRef& v) { return v->iterate(*this); }

// A plain Python object's items, read for real.
VarRef Var::iterate(Translator& t) {
  PyRef o = t.to_python(self());
  if (!o) t.graph_break("unsupported Python", "iterating over " + describe(), "");
  PyObject* list = PySequence_List(o.get());
  if (!list) t.raise_pending("iterating over " + describe());
  PyRef l = PyRef::steal(list);
  std::vector<VarRef> items;
  for (Py_ssize_t i = 0; i < PyList_Size(l.get()); ++i) items.push_back(t.wrap(PyList_GetItem(l.get(), i), Source()));
  return std::make_shared<IteratorVar>(std::move(items));
}

VarRef SequenceVar::iterate(Translator&) { return std::make_shared<IteratorVar>(items); }

VarRef DictVar::iterate(Translator& t) { return std::make_shared<IteratorVar>(dict_items(t, *this, "keys")); }

VarRef IteratorVar::iterate(Translator&) {
  return std::make_shared<IteratorVar>(std::vector<VarRef>(items.begin() + static_cast<long>(next), items.end()));
}

VarRef ModuleVar::iterate(Translator& t) {
  // The module's own __iter__, run for real: Sequential, ModuleList and ParameterList give
  // their items (sourced by position), ModuleDict and ParameterDict their keys, a user's
  // class what it defines; a module without __iter__ raises TypeError as in Python.
  PyObject* list = PySequence_List(module.get());
  if (!list) t.raise_pending("iterating over " + describe());
  PyRef l = PyRef::steal(list);
  const bool positional = indexed_container(module.get());
  std::vector<VarRef> items;
  for (Py_ssize_t i = 0; i < PyList_Size(l.get()); ++i)
    items.push_back(t.wrap(PyList_GetItem(l.get(), i), positional ? source.item(i) : Source()));
  return std::make_shared<IteratorVar>(std::move(items));
}

VarRef TensorVar::iterate(Translator& t) {  // over its first dim, as x.unbind(0) (a 0-dim tensor: TypeError)
  const ir::TensorType& type = t.graph().type(value);
  if (type.rank() == 0)
    t.raise_python(PyRef::steal(PyObject_CallFunction(PyExc_TypeError, "s", "iteration over a 0-d tensor")),
                   "iteration over a 0-d tensor", "index the tensor's dims instead");
  if (!type.shape[0].as_constant())
    t.graph_break("dynamic shape", "iterating over a tensor whose first dim is dynamic",
                  "declare the dim static, or use whole-tensor operations");
  return t.iterate(t.call(t.attribute(self(), "unbind"), {}, {}));
}

}  // namespace aotrace::embed
