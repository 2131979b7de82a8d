#include "embed/py.h"

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

std::string py_str(PyObject* o) {
  PyObject* s = o ? PyObject_Str(o) : nullptr;
  if (!s) {
    PyErr_Clear();
    return "<unprintable>";
  }
  const char* c = PyUnicode_AsUTF8(s);
  std::string r = c ? c : "<unprintable>";
  if (!c) PyErr_Clear();
  Py_DECREF(s);
  return r;
}

std::string py_repr(PyObject* o) {
  PyObject* s = o ? PyObject_Repr(o) : nullptr;
  if (!s) {
    PyErr_Clear();
    return "<unprintable>";
  }
  const char* c = PyUnicode_AsUTF8(s);
  std::string r = c ? c : "<unprintable>";
  if (!c) PyErr_Clear();
  Py_DECREF(s);
  return r;
}

std::string type_name(PyObject* o) { return o ? Py_TYPE(o)->tp_name : "NULL"; }

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

PyRef getattr(PyObject* o, const char* name) {
  return check(PyObject_GetAttrString(o, name), name);
}

}  // namespace aotrace::embed
