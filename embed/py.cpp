#include <map>

#include "embed/py.h"

#include "ir/ir.h"

namespace aotrace::embed {

std::string fetch_python_error() {
  if (!PyErr_Occurred()) return {};
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string s = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "Error";
  if (value) s += ": " + py_str(value);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return s;
}

PyRef check(PyObject* o, const char* what) {
  if (!o) internal_error(std::string(what) + ": " + fetch_python_error());
  return PyRef::steal(o);
}

PyObject* helper_module(const char* name, const char* source) {
  static std::map<std::string, PyObject*> made;  // name → its dict (one reference kept)
  if (auto it = made.find(name); it != made.end()) return it->second;
  PyRef module = check(PyModule_New(name), "module");
  PyObject* dict = PyModule_GetDict(module.get());
  PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins());
  const std::string file = std::string("<") + name + ">";
  PyRef code = check(Py_CompileString(source, file.c_str(), Py_file_input), name);
  check(PyEval_EvalCode(code.get(), dict, dict), name);
  Py_INCREF(dict);
  made.emplace(name, dict);
  return dict;
}

namespace {
// `convert(o)` (str or repr) as UTF-8; never raises.
std::string to_text(PyObject* o, PyObject* (*convert)(PyObject*)) {
  PyObject* s = o ? convert(o) : nullptr;
  const char* c = s ? PyUnicode_AsUTF8(s) : nullptr;
  std::string r = c ? c : "<unprintable>";
  if (!c) PyErr_Clear();
  Py_XDECREF(s);
  return r;
}
}  // namespace

std::string py_str(PyObject* o) { return to_text(o, PyObject_Str); }

std::string py_repr(PyObject* o) { return to_text(o, PyObject_Repr); }

std::string type_name(PyObject* o) { return o ? Py_TYPE(o)->tp_name : "NULL"; }

bool is_plain_value(PyObject* o) {
  return o == Py_None || PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o);  // bool is an int
}

PyRef import(const char* module) {
  return check(PyImport_ImportModule(module), (std::string("import ") + module).c_str());
}

std::string callable_name(PyObject* o) {
  PyObject* name = PyObject_GetAttrString(o, "__name__");
  if (!name) {
    PyErr_Clear();
    return type_name(o) + " object";
  }
  const std::string n = py_str(name);
  Py_DECREF(name);
  // Found by identity in the namespaces users call through.
  for (const char* ns : {"torch", "torch.nn.functional", "math", "operator"}) {
    PyObject* m = PyImport_ImportModule(ns);
    if (!m) {
      PyErr_Clear();
      continue;
    }
    PyObject* same = PyObject_GetAttrString(m, n.c_str());
    if (!same) PyErr_Clear();
    const bool found = same == o;
    Py_XDECREF(same);
    Py_DECREF(m);
    if (found) return std::string(ns) + "." + n;
  }
  PyObject* mod = PyObject_GetAttrString(o, "__module__");
  PyObject* qual = PyObject_GetAttrString(o, "__qualname__");
  if (!mod || !qual) PyErr_Clear();
  std::string r = (mod && PyUnicode_Check(mod) ? py_str(mod) + "." : std::string()) +
                  (qual && PyUnicode_Check(qual) ? py_str(qual) : n);
  Py_XDECREF(mod);
  Py_XDECREF(qual);
  return r;
}

PyRef attribute_or_null(PyObject* o, const char* name) {
  PyObject* a = PyObject_GetAttrString(o, name);
  if (!a) PyErr_Clear();
  return PyRef::steal(a);
}

PyRef getattr(PyObject* o, const char* name) {
  return check(PyObject_GetAttrString(o, name), name);
}

PyRef dtype_object(ir::DType dtype) {
  return getattr(import("torch").get(), std::string(ir::dtype_torch_name(dtype)).c_str());
}

PyRef tensor_from_host(const ir::HostTensor& h) {
  PyRef torch = import("torch");
  PyRef shape = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(h.shape.size())));
  for (size_t i = 0; i < h.shape.size(); ++i)
    PyTuple_SetItem(shape.get(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(h.shape[i]));
  // bytes -> uint8 tensor -> view as the dtype -> reshape: works for every dtype.
  PyRef bytes = PyRef::steal(PyByteArray_FromStringAndSize(reinterpret_cast<const char*>(h.data.data()),
                                                           static_cast<Py_ssize_t>(h.data.size())));
  PyRef kwargs = PyRef::steal(PyDict_New());
  PyDict_SetItemString(kwargs.get(), "dtype", getattr(torch.get(), "uint8").get());
  PyRef u8;
  if (h.data.empty()) {
    PyRef zero = PyRef::steal(Py_BuildValue("(i)", 0));
    u8 = check(PyObject_Call(getattr(torch.get(), "zeros").get(), zero.get(), kwargs.get()), "torch.zeros");
  } else {
    PyRef pargs = PyRef::steal(PyTuple_Pack(1, bytes.get()));
    u8 = check(PyObject_Call(getattr(torch.get(), "frombuffer").get(), pargs.get(), kwargs.get()),
               "torch.frombuffer");
  }
  PyRef typed = check(PyObject_CallMethod(u8.get(), "view", "O", dtype_object(h.dtype).get()), "view");
  PyRef shaped = check(PyObject_CallMethod(typed.get(), "reshape", "(O)", shape.get()), "reshape");
  return check(PyObject_CallMethod(shaped.get(), "clone", nullptr), "clone");
}

ir::HostTensor host_from_tensor(PyObject* t) {
  ir::HostTensor h;
  PyRef dtype = check(PyObject_Str(getattr(t, "dtype").get()), "dtype");
  auto d = ir::parse_dtype(py_str(dtype.get()));
  if (!d) user_error("the entry returned a tensor of unsupported dtype " + py_str(dtype.get()));
  h.dtype = *d;
  PyRef shape = check(PySequence_Tuple(getattr(t, "shape").get()), "shape");
  for (Py_ssize_t i = 0; i < PyTuple_Size(shape.get()); ++i)
    h.shape.push_back(PyLong_AsLongLong(PyTuple_GetItem(shape.get(), i)));
  PyRef c = check(PyObject_CallMethod(t, "detach", nullptr), "detach");
  c = check(PyObject_CallMethod(c.get(), "reshape", "(i)", -1), "reshape");
  // A copy with unit stride: contiguous() keeps an empty or one-element view's odd stride
  // (x.diagonal(offset=...)), which view(uint8) refuses.
  PyRef kwargs = PyRef::steal(PyDict_New());
  PyDict_SetItemString(kwargs.get(), "memory_format", getattr(import("torch").get(), "contiguous_format").get());
  PyRef none = PyRef::steal(PyTuple_New(0));
  c = check(PyObject_Call(getattr(c.get(), "clone").get(), none.get(), kwargs.get()), "clone");
  c = check(PyObject_CallMethod(c.get(), "view", "O", getattr(import("torch").get(), "uint8").get()), "view");
  PyRef np = check(PyObject_CallMethod(c.get(), "numpy", nullptr), "numpy");
  PyRef raw = check(PyObject_CallMethod(np.get(), "tobytes", nullptr), "tobytes");
  const auto* p = reinterpret_cast<const uint8_t*>(PyBytes_AsString(raw.get()));
  h.data.assign(p, p + PyBytes_Size(raw.get()));
  return h;
}


}  // namespace aotrace::embed
