// Binding a torch call's arguments through torch's own signatures (STYLE 19), as torch's Python
// argument parser does. Every callable of the op table gets its signatures from torch itself:
// an aten schema (`torch._C._jit_get_schemas_for_operator`) for a C++ function or method, a
// Python function's `inspect.signature` for one written in Python (F.softmax, Tensor.split).
// A call binds to the first overload that accepts it, and every argument is then known by its
// parameter name: `torch.var(x, -1, True)` binds to var.dim(self, dim, unbiased, keepdim), so
// the positional True is `unbiased`, not `keepdim`.
#include <cstdlib>
#include <deque>
#include <map>

#include "embed/torch_ops_args.h"

namespace aotrace::embed {

using Kind = Signature::Kind;

namespace {

bool same_parameter(const std::string& a, const std::string& b) {
  // Python's signatures call aten's `self` `input` (torch.var(input, ...)).
  return a == b || (a == "self" && b == "input") || (a == "input" && b == "self");
}

// Whether the keyword `name` names the schema parameter `param`: torch's argument parser also
// takes numpy's names (python_arg_parser.cpp: axis, keepdims, x, a, x1, x2).
bool keyword_names(const std::string& param, const std::string& name) {
  if (same_parameter(param, name)) return true;
  if (param == "self" || param == "input") return name == "x" || name == "a" || name == "x1";
  if (param == "dim") return name == "axis";
  if (param == "keepdim") return name == "keepdims";
  if (param == "other") return name == "x2";
  return false;
}

// Whether builders must read arguments by names torch's signatures have (tests set
// AOTRACE_STRICT_BINDING=1). Otherwise a builder's unknown name falls back to its position.
bool strict_binding() {
  static const bool strict = [] {
    const char* v = std::getenv("AOTRACE_STRICT_BINDING");
    return v && *v && std::string(v) != "0";
  }();
  return strict;
}

// A builder's name for an argument: "dim", or alternatives "tensor|self" for a builder shared by
// callables whose signatures name it differently.
std::vector<std::string> alternatives(const std::string& names) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t bar = names.find('|', start);
    out.push_back(names.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

}  // namespace

int Signature::find(const std::string& names) const {
  for (const std::string& name : alternatives(names))
    for (bool synonyms : {false, true})  // LSTM.forward(self, input, hx) has both
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].kind != Kind::VarPositional && params[i].kind != Kind::VarKeyword &&
            (synonyms ? same_parameter(params[i].name, name) : params[i].name == name))
          return static_cast<int>(i);
  return -1;
}

bool OpSignatures::knows(const std::string& name) const {
  for (const Signature& s : overloads)
    if (s.find(name) >= 0) return true;
  return false;
}

namespace {

VarRef keyword(const CallArgs& a, const std::string& names) {  // "dim", or "tensor|self"
  for (const std::string& name : alternatives(names))
    for (const auto& [k, v] : a.kwargs)
      if (same_parameter(k, name)) return v;
  return nullptr;
}

bool has_var(const Signature& s, Kind kind) {  // *args / **kwargs
  for (const auto& p : s.params)
    if (p.kind == kind) return true;
  return false;
}

// The argument of a bound call that the parameter `i` of its overload holds.
VarRef bound_argument(const CallArgs& a, int i) {
  const Signature::Param& p = a.bound->params[static_cast<size_t>(i)];
  if (p.kind == Kind::KeywordOnly) return keyword(a, p.name);
  return static_cast<size_t>(i) < a.args.size() ? a.args[static_cast<size_t>(i)] : nullptr;
}

}  // namespace

VarRef CallArgs::get(size_t position, const char* name) const {
  if (bound) {
    // By name, wherever the matched overload has it.
    if (const int i = bound->find(name); i >= 0) return bound_argument(*this, i);
    if (op->knows(name)) return nullptr;  // a parameter of another overload: not given here
    if (has_var(*bound, Kind::VarKeyword) && keyword(*this, name)) return keyword(*this, name);
    // A name this callable's signatures do not have (F.relu's `inplace`, read by the builder it
    // shares with torch.relu): absent, unless the builder would take a value by its position.
    if (position >= args.size() || !args[position]) return nullptr;
    AOT_CHECK(!strict_binding() || has_var(*bound, Kind::VarPositional),
              "the op table's builder for " + op->name + " reads argument " +
                  std::to_string(position) + " as '" + name + "', a name no signature of it has (" +
                  bound->text + ")");
    return args[position];
  }
  if (position < args.size()) return args[position];
  return keyword(*this, name);
}

VarRef CallArgs::kw(const char* name) const {
  if (bound)
    if (const int i = bound->find(name); i >= 0) return bound_argument(*this, i);
  return keyword(*this, name);
}

namespace ops {

namespace {

// ---------------------------------------------------------------------------------------------
// Reading signatures from torch.

std::deque<OpSignatures>& signature_store() {
  static std::deque<OpSignatures> store;  // stable addresses: CallArgs and TorchOps point in
  return store;
}

Signature from_schema(PyObject* schema) {
  Signature s;
  s.text = py_str(check(PyObject_Str(schema), "str(schema)").get());
  PyRef args = getattr(schema, "arguments");
  for (Py_ssize_t k = 0; k < PyList_Size(args.get()); ++k) {
    PyObject* arg = PyList_GetItem(args.get(), k);
    Signature::Param p;
    p.name = py_str(getattr(arg, "name").get());
    p.type = py_str(check(PyObject_Str(getattr(arg, "type").get()), "str(type)").get());
    p.kind =
        getattr(arg, "kwarg_only").get() == Py_True ? Kind::KeywordOnly : Kind::PositionalOrKeyword;
    const bool has_default =
        check(PyObject_CallMethod(arg, "has_default_value", nullptr), "has_default_value").get() ==
        Py_True;
    p.required = !has_default && p.type.rfind("Optional[", 0) != 0;
    s.params.push_back(std::move(p));
  }
  return s;
}

bool writes_out(const Signature& s) {
  for (const auto& p : s.params)
    if (p.name == "out") return true;  // out= variants write into a given tensor: not traced
  return false;
}

const OpSignatures* store(OpSignatures sigs) {
  if (sigs.overloads.empty()) return nullptr;
  signature_store().push_back(std::move(sigs));
  return &signature_store().back();
}

const OpSignatures* aten_signatures(const std::string& aten_name) {
  static std::map<std::string, const OpSignatures*> cache;
  auto [it, inserted] = cache.try_emplace(aten_name, nullptr);
  if (!inserted) return it->second;
  PyRef schemas =
      check(PyObject_CallMethod(import("torch._C").get(), "_jit_get_schemas_for_operator", "s",
                                aten_name.c_str()),
            "torch._C._jit_get_schemas_for_operator");
  OpSignatures sigs;
  sigs.name = aten_name;
  sigs.aten = true;
  for (Py_ssize_t i = 0; i < PyList_Size(schemas.get()); ++i) {
    Signature s = from_schema(PyList_GetItem(schemas.get(), i));
    if (!writes_out(s)) sigs.overloads.push_back(std::move(s));
  }
  it->second = store(std::move(sigs));
  return it->second;
}

// A Python function's signature, as inspect.signature gives it.
const OpSignatures* python_signature(const std::string& name, PyObject* fn) {
  PyRef sig = PyRef::steal(PyObject_CallMethod(import("inspect").get(), "signature", "O", fn));
  if (!sig) {
    PyErr_Clear();
    return nullptr;
  }
  Signature s;
  s.text = name + py_str(check(PyObject_Str(sig.get()), "str(signature)").get());
  PyRef params = check(
      PyObject_CallMethod(getattr(sig.get(), "parameters").get(), "values", nullptr), "values");
  PyRef list = check(PySequence_List(params.get()), "list");
  PyRef empty = getattr(import("inspect").get(), "Parameter");
  empty = getattr(empty.get(), "empty");
  for (Py_ssize_t i = 0; i < PyList_Size(list.get()); ++i) {
    PyObject* p = PyList_GetItem(list.get(), i);
    Signature::Param param;
    param.name = py_str(getattr(p, "name").get());
    param.kind = static_cast<Kind>(PyLong_AsLong(getattr(p, "kind").get()));  // inspect's order
    param.required = getattr(p, "default").get() == empty.get() &&
                     param.kind != Kind::VarPositional && param.kind != Kind::VarKeyword;
    s.params.push_back(std::move(param));
  }
  OpSignatures sigs;
  sigs.name = name;
  sigs.overloads.push_back(std::move(s));
  return store(std::move(sigs));
}

// The signature written as a Python lambda's: "self, memory_format=None".
const OpSignatures* written_signature(const std::string& name, const std::string& params) {
  PyRef globals = PyRef::steal(PyDict_New());
  PyRef fn = PyRef::steal(
      PyRun_String(("lambda " + params + ": None").c_str(), Py_eval_input, globals.get(), nullptr));
  AOT_CHECK(fn, "the signature written for " + name + " does not parse: " + params);
  return python_signature(name, fn.get());
}

// torch._jit_internal.boolean_dispatch (F.max_pool2d): a `*args, **kwargs` wrapper choosing
// between two functions of one signature; the signature is theirs.
PyObject* dispatched_function(PyObject* fn) {
  PyRef code = attribute_or_null(fn, "__code__");
  PyRef closure = attribute_or_null(fn, "__closure__");
  if (!code || !closure || !PyTuple_Check(closure.get())) return nullptr;
  PyRef names = getattr(code.get(), "co_freevars");
  for (Py_ssize_t i = 0; i < PyTuple_Size(names.get()) && i < PyTuple_Size(closure.get()); ++i)
    if (py_str(PyTuple_GetItem(names.get(), i)) == "if_false")
      return PyCell_GET(PyTuple_GetItem(closure.get(), i));
  return nullptr;
}

// Tensor dunders implemented by an aten op of another name.
const std::map<std::string, std::string>& dunder_ops() {
  static const std::map<std::string, std::string> m = {
      {"__add__", "add"},       {"__radd__", "add"},
      {"__iadd__", "add_"},     {"__sub__", "sub"},
      {"__isub__", "sub_"},     {"__mul__", "mul"},
      {"__rmul__", "mul"},      {"__imul__", "mul_"},
      {"__truediv__", "div"},   {"__idiv__", "div_"},
      {"__itruediv__", "div_"}, {"__mod__", "remainder"},
      {"__pow__", "pow"},       {"__eq__", "eq"},
      {"__ne__", "ne"},         {"__lt__", "lt"},
      {"__le__", "le"},         {"__gt__", "gt"},
      {"__ge__", "ge"},         {"__invert__", "bitwise_not"},
      {"__abs__", "abs"},       {"__neg__", "neg"},
      {"__matmul__", "matmul"}, {"__round__", "round"},
  };
  return m;
}

}  // namespace

const OpSignatures* signature_for(const std::string& name, PyObject* callable) {
  // Callables whose Python arguments torch parses by hand (python_variable_methods.cpp and
  // python_torch_functions_manual.cpp), with no schema of the same shape: their signatures as
  // torch documents them, or none where the builder parses them as torch does.
  static const std::map<std::string, std::string> written = {
      {"float", "self, memory_format=None"},
      {"double", "self, memory_format=None"},
      {"half", "self, memory_format=None"},
      {"bfloat16", "self, memory_format=None"},
      {"long", "self, memory_format=None"},
      {"int", "self, memory_format=None"},
      {"bool", "self, memory_format=None"},
      {"short", "self, memory_format=None"},
      {"byte", "self, memory_format=None"},
      {"char", "self, memory_format=None"},
      {"new_tensor", "self, data, dtype=None, device=None, requires_grad=False"},
      {"tolist", "self"},
      {"numpy", "self, *, force=False"},
      {"item", "self"},
      {"ndimension", "self"},
      {"torch.tensor", "data, *, dtype=None, device=None, requires_grad=False, pin_memory=False"},
      {"torch.as_tensor", "data, dtype=None, device=None"},
      {"torch.spmm", "input, mat2"},
  };
  static const char* const by_hand[] = {"to",
                                        "type",
                                        "__getitem__",
                                        "__setitem__",
                                        "torch.overrides.has_torch_function",
                                        "torch.overrides.has_torch_function_unary",
                                        "torch.overrides.has_torch_function_variadic"};
  for (const char* h : by_hand)
    if (name == h) return nullptr;
  if (auto it = written.find(name); it != written.end()) return written_signature(name, it->second);
  if (!callable) {  // a Tensor method this torch lacks (found by name: x.celu)
    std::string aten = name;
    if (auto it = dunder_ops().find(aten); it != dunder_ops().end()) aten = it->second;
    return aten_signatures("aten::" + aten);
  }
  if (PyFunction_Check(callable)) {
    if (PyObject* f = dispatched_function(callable)) return python_signature(name, f);
    if (const OpSignatures* s = python_signature(name, callable)) return s;
  }
  // torch.ops.aten.NAME.overload: that overload's schema only.
  if (PyRef schema = attribute_or_null(callable, "_schema")) {
    OpSignatures sigs;
    sigs.name = name;
    sigs.aten = true;
    Signature s = from_schema(schema.get());
    if (!writes_out(s)) sigs.overloads.push_back(std::move(s));
    return store(std::move(sigs));
  }
  if (PyRef qualified = attribute_or_null(callable, "_qualified_op_name"))  // an overload packet
    return aten_signatures(py_str(qualified.get()));
  PyObject* target = callable;
  PyRef wrapped = attribute_or_null(callable, "__wrapped__");  // functools.wraps around a builtin
  if (wrapped) target = wrapped.get();
  PyRef fn_name = attribute_or_null(target, "__name__");
  if (!fn_name) return nullptr;
  std::string aten = py_str(fn_name.get());
  if (auto it = dunder_ops().find(aten); it != dunder_ops().end()) aten = it->second;
  return aten_signatures("aten::" + aten);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Binding a call.

bool is_real_tensor(PyObject* o) { return is_instance_of(o, "torch", "Tensor"); }

bool rank0(Translator& t, const VarRef& v) {
  auto* tv = as<TensorVar>(v);
  return tv && t.graph().type(tv->value).rank() == 0;
}

// Whether `v` can be passed as a schema argument `name` of `type`, by torch's
// python_arg_parser rules: a bool is not an int, an int is a float, a single int is an int list.
// `lenient` admits what the parser admits only for some ops: Python numbers as tensors, 0-dim
// tensors as numbers.
bool accepts(Translator& t, const std::string& name, const std::string& type, const VarRef& v,
             bool lenient) {
  if (type.rfind("Optional[", 0) == 0)
    return is_none(v) || accepts(t, name, type.substr(9, type.size() - 10), v, lenient);
  auto* c = as<ConstVar>(v);
  PyObject* o = c ? c->obj.get() : nullptr;
  const bool is_number = as<SymIntVar>(v) || (o && !is_real_tensor(o) &&
                                              (PyLong_Check(o) || PyFloat_Check(o)));  // bools too
  if (type == "Tensor") return as<TensorVar>(v) || (lenient && is_number);
  if (type.rfind("List[", 0) == 0) {
    const std::string item = type.substr(5, type.size() - 6);
    if (item == "int" && accepts(t, name, "int", v, lenient)) return true;
    auto items = sequence_items(t, v);
    if (!items) return false;
    for (const auto& i : *items)
      if (!accepts(t, name, item, i, lenient)) return false;
    return true;
  }
  if (as<TensorVar>(v)) {
    if (!lenient || !rank0(t, v)) return false;
    return type == "number" || type == "float" || type == "int" || type == "bool" ||
           type == "complex";
  }
  if (as<SymIntVar>(v))
    return type == "int" || type == "float" || type == "number" || type == "complex";
  if (!o || is_real_tensor(o)) return false;
  const bool is_bool = PyBool_Check(o), is_int = PyLong_Check(o) && !is_bool;
  // The JIT spells ScalarType, Layout and MemoryFormat as int.
  if (type == "int" && (name == "dtype" || name == "layout" || name == "memory_format"))
    return is_instance_of(o, "torch", "dtype") || is_instance_of(o, "torch", "layout") ||
           is_instance_of(o, "torch", "memory_format") || is_int;
  if (type == "bool") return is_bool;
  if (type == "int") return is_int;
  if (type == "float") return is_int || PyFloat_Check(o);
  if (type == "number") return is_int || is_bool || PyFloat_Check(o) || PyComplex_Check(o);
  if (type == "complex") return is_int || PyFloat_Check(o) || PyComplex_Check(o);
  if (type == "str") return PyUnicode_Check(o);
  if (type == "Device") return PyUnicode_Check(o) || is_int || is_instance_of(o, "torch", "device");
  if (type == "Generator") return is_instance_of(o, "torch", "Generator");
  if (type == "Any") return true;
  return false;  // TorchScript's own overloads (t[], Dict[...], AnyEnumType) are not Python's
}

struct Binding {
  CallArgs call;
  std::string error;  // why it does not bind, as Python says it
};

// Binds `a` to `s` as Python binds a call to a signature (and, for a typed schema, as torch's
// argument parser also checks types). On success `error` is empty.
Binding bind_to(Translator& t, const OpSignatures& op, const Signature& s, const CallArgs& a,
                bool lenient) {
  Binding b;
  std::vector<VarRef> values(s.params.size());
  std::vector<VarRef> extra_positional;
  std::vector<std::pair<std::string, VarRef>> extra_keywords;
  std::vector<VarRef> positional = a.args;  // a bound call's gaps: not given
  while (!positional.empty() && !positional.back()) positional.pop_back();
  std::vector<size_t> slot_params;  // the parameters positional arguments fill, in order
  int var_positional = -1, var_keyword = -1;
  for (size_t k = 0; k < s.params.size(); ++k) {
    const Kind kind = s.params[k].kind;
    if (kind == Kind::Positional || kind == Kind::PositionalOrKeyword) slot_params.push_back(k);
    if (kind == Kind::VarPositional) var_positional = static_cast<int>(k);
    if (kind == Kind::VarKeyword) var_keyword = static_cast<int>(k);
  }
  const size_t slots = slot_params.size();
  // torch's varargs int lists: x.view(2, 3), torch.zeros(2, 3), x.permute(0, 2, 1) (a single
  // int-list parameter after self).
  if (op.aten && positional.size() > slots) {
    size_t first = s.params.size() > 0 && s.params[0].type == "Tensor" ? 1 : 0;
    if (slots == first + 1 && s.params[first].type.find("List[int]") != std::string::npos) {
      std::vector<VarRef> items(positional.begin() + static_cast<long>(first), positional.end());
      bool ints = true;
      for (const auto& i : items) ints &= accepts(t, s.params[first].name, "int", i, lenient);
      if (ints) {
        positional.resize(first);
        positional.push_back(
            std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::move(items)));
      }
    }
  }
  for (size_t i = 0; i < positional.size(); ++i) {
    if (i < slot_params.size()) {
      values[slot_params[i]] = positional[i];
    } else if (var_positional >= 0) {
      extra_positional.push_back(positional[i]);
    } else {
      b.error = "takes " + std::to_string(slots) + " positional arguments but " +
                std::to_string(positional.size()) + " were given";
      return b;
    }
  }
  for (const auto& [name, value] : a.kwargs) {
    if (!value) continue;
    int k = -1;
    for (size_t j = 0; j < s.params.size(); ++j)
      if (s.params[j].kind != Kind::Positional && s.params[j].kind != Kind::VarPositional &&
          s.params[j].kind != Kind::VarKeyword &&
          (op.aten ? keyword_names(s.params[j].name, name) : s.params[j].name == name))
        k = static_cast<int>(j);
    if (k < 0) {
      // torch's factory functions take requires_grad= beside the tensor options.
      const bool options = op.aten && name == "requires_grad" && s.find("device") >= 0;
      if (var_keyword < 0 && !options) {
        b.error = "got an unexpected keyword argument '" + name + "'";
        return b;
      }
      extra_keywords.emplace_back(name, value);
      continue;
    }
    if (values[static_cast<size_t>(k)]) {
      b.error = "got multiple values for argument '" + name + "'";
      return b;
    }
    values[static_cast<size_t>(k)] = value;
  }
  for (size_t k = 0; k < s.params.size(); ++k) {
    const Signature::Param& p = s.params[k];
    if (!values[k]) {
      if (p.required) {
        b.error = "missing a required argument: '" + p.name + "'";
        return b;
      }
      continue;
    }
    if (!p.type.empty() && !accepts(t, p.name, p.type, values[k], lenient)) {
      b.error = "argument '" + p.name + "' must be " + p.type + ", not " + values[k]->describe();
      return b;
    }
  }
  for (size_t k = 0; k < s.params.size(); ++k) {
    const Kind kind = s.params[k].kind;
    if (kind == Kind::KeywordOnly) {
      if (values[k]) b.call.kwargs.emplace_back(s.params[k].name, values[k]);
    } else if (kind == Kind::Positional || kind == Kind::PositionalOrKeyword) {
      if (values[k]) {
        b.call.args.resize(k + 1);
        b.call.args[k] = values[k];
      }
    }
  }
  if (!extra_positional.empty()) {
    b.call.args.resize(static_cast<size_t>(var_positional));
    b.call.args.insert(b.call.args.end(), extra_positional.begin(), extra_positional.end());
  }
  for (auto& kv : extra_keywords) b.call.kwargs.push_back(std::move(kv));
  b.call.op = &op;
  b.call.bound = &s;
  return b;
}

// A stand-in Python value for asking torch itself whether it accepts a call: tensors as meta
// tensors of their dtype and shape. Null when some argument has no stand-in.
PyRef stand_in(Translator& t, const VarRef& v) {
  if (!v) return {};
  if (auto* c = as<ConstVar>(v)) return c->obj;
  if (auto* s = as<SymIntVar>(v))
    return PyRef::steal(PyLong_FromLongLong(s->expr.as_constant().value_or(2)));
  if (auto* tv = as<TensorVar>(v)) {
    const ir::TensorType& type = t.graph().type(tv->value);
    PyRef shape = PyRef::steal(PyTuple_New(type.rank()));
    for (int d = 0; d < type.rank(); ++d)
      PyTuple_SetItem(
          shape.get(), d,
          PyLong_FromLongLong(type.shape[static_cast<size_t>(d)].as_constant().value_or(2)));
    PyRef torch = import("torch");
    PyRef dtype = getattr(torch.get(), std::string(ir::dtype_torch_name(type.dtype)).c_str());
    PyRef kwargs = PyRef::steal(Py_BuildValue("{s:O,s:s}", "dtype", dtype.get(), "device", "meta"));
    PyRef args = PyRef::steal(PyTuple_Pack(1, shape.get()));
    PyRef r =
        PyRef::steal(PyObject_Call(getattr(torch.get(), "empty").get(), args.get(), kwargs.get()));
    if (!r) PyErr_Clear();
    return r;
  }
  if (auto* seq = as<SequenceVar>(v)) {
    PyRef list = PyRef::steal(PyList_New(0));
    for (const auto& item : seq->items) {
      PyRef i = stand_in(t, item);
      if (!i) return {};
      PyList_Append(list.get(), i.get());
    }
    if (seq->kind == SequenceVar::Kind::List) return list;
    return PyRef::steal(PyList_AsTuple(list.get()));
  }
  return {};
}

}  // namespace

PyRef call_for_real(PyObject* fn, const CallArgs& a, const std::function<PyRef(const VarRef&)>& convert) {
  PyRef args = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(a.args.size())));
  for (size_t i = 0; i < a.args.size(); ++i) {
    PyRef v = convert(a.args[i]);
    if (!v) return {};
    PyTuple_SetItem(args.get(), static_cast<Py_ssize_t>(i), v.release());
  }
  PyRef kwargs = PyRef::steal(PyDict_New());
  for (const auto& [k, v] : a.kwargs) {
    PyRef p = convert(v);
    if (!p) return {};
    PyDict_SetItemString(kwargs.get(), k.c_str(), p.get());
  }
  return PyRef::steal(PyObject_Call(fn, args.get(), kwargs.get()));
}

PyRef torch_exception(Translator& t, PyObject* callable, const CallArgs& a) {
  if (!callable) return {};
  if (call_for_real(callable, a, [&](const VarRef& v) { return stand_in(t, v); }) || !PyErr_Occurred())
    return {};
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return PyRef::steal(value);
}

namespace {

// torch's own verdict on the call: its TypeError message when it rejects the arguments; empty
// when it accepts them or cannot be asked.
std::string torch_rejects(Translator& t, PyObject* callable, const CallArgs& a) {
  PyRef exc = torch_exception(t, callable, a);
  if (!exc || !PyErr_GivenExceptionMatches(exc.get(), PyExc_TypeError)) return {};
  PyRef text = PyRef::steal(PyObject_Str(exc.get()));
  if (!text) PyErr_Clear();
  return text ? py_str(text.get()) : "TypeError";
}

std::string describe_call(const CallArgs& a) {
  std::string s;
  for (const auto& v : a.args)
    s += (s.empty() ? "" : ", ") + (v ? v->describe() : std::string("…"));
  for (const auto& [k, v] : a.kwargs) s += (s.empty() ? "" : ", ") + k + "=" + v->describe();
  return s;
}

std::optional<CallArgs> try_overloads(Translator& t, const OpSignatures& op, const CallArgs& a,
                                      std::string* first_error) {
  for (bool lenient : {false, true})
    for (const Signature& s : op.overloads) {
      Binding b = bind_to(t, op, s, a, lenient);
      if (b.error.empty()) return std::move(b.call);
      if (first_error->empty()) *first_error = b.error;
    }
  return std::nullopt;
}

}  // namespace

CallArgs bind_call(Translator& t, const TorchOp& op, const CallArgs& a) {
  if (!op.signature || a.bound) return a;
  if (a.kw("out"))
    unsupported(t, op.name + "(…, out=…)", "assign the result instead: y = " + op.name + "(…)");
  std::string error;
  if (auto bound = try_overloads(t, *op.signature, a, &error)) return *bound;
  if (!op.signature->aten)  // Python's own binding: exact, and what Python raises
    user_error(op.name + "() " + error + " (Python raises TypeError here too)", t.loc(),
               "call it as its signature says: " + op.signature->overloads[0].text);
  std::string verdict = torch_rejects(t, op.callable, a);
  if (!verdict.empty())
    user_error(op.name + "(" + describe_call(a) +
                   ") is not a valid call; torch raises TypeError: " + verdict,
               t.loc(), "call it as one of the signatures above");
  // torch accepts what no schema overload took: a gap in our reading of its parser.
  AOT_CHECK(!strict_binding(), "binding " + op.name + "(" + describe_call(a) + ") to " +
                                   op.signature->name + " failed (" + error +
                                   "), though torch accepts it");
  return a;
}

CallArgs bind_schema(Translator& t, const std::string& aten_name, const CallArgs& call) {
  const OpSignatures* op = aten_signatures(aten_name);
  AOT_CHECK(op, "torch has no schema " + aten_name);
  std::string error;
  auto bound = try_overloads(t, *op, call, &error);
  if (!bound)
    user_error(aten_name.substr(6) + "() received an invalid combination of arguments: (" +
                   describe_call(call) + "), which no overload of " + aten_name +
                   " accepts: " + error,
               t.loc(), "call it as the torch documentation shows");
  // Every argument by its schema name (kw("self"), kw("dim"), ...).
  CallArgs named;
  for (size_t k = 0; k < bound->args.size(); ++k)
    if (bound->args[k]) named.kwargs.emplace_back(bound->bound->params[k].name, bound->args[k]);
  for (auto& kv : bound->kwargs) named.kwargs.push_back(kv);
  return named;
}

}  // namespace ops
}  // namespace aotrace::embed
