// Private to embed/: a small owning reference for CPython objects, and helpers.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>
#include <utility>

#include "ir/diagnostics.h"

namespace aotrace::embed {

// An owned (strong) reference. `PyRef::steal` takes a new reference; `PyRef::borrow` increfs.
class PyRef {
 public:
  PyRef() = default;
  static PyRef steal(PyObject* o) { return PyRef(o); }
  static PyRef borrow(PyObject* o) {
    Py_XINCREF(o);
    return PyRef(o);
  }
  PyRef(const PyRef& o) : obj_(o.obj_) { Py_XINCREF(obj_); }
  PyRef(PyRef&& o) noexcept : obj_(std::exchange(o.obj_, nullptr)) {}
  PyRef& operator=(PyRef o) noexcept {
    std::swap(obj_, o.obj_);
    return *this;
  }
  ~PyRef() { Py_XDECREF(obj_); }

  PyObject* get() const { return obj_; }
  PyObject* release() { return std::exchange(obj_, nullptr); }
  explicit operator bool() const { return obj_ != nullptr; }

 private:
  explicit PyRef(PyObject* o) : obj_(o) {}
  PyObject* obj_ = nullptr;
};

// The pending Python exception as "TypeError: message" (clears it). Empty when none.
std::string fetch_python_error();
// internal_error with the pending Python exception when `o` is null; returns it as a PyRef.
PyRef check(PyObject* o, const char* what);
std::string py_str(PyObject* o);   // str(o), never throws
std::string py_repr(PyObject* o);  // repr(o), never throws
std::string type_name(PyObject* o);
// None, a bool, an int, a float or a str: a value with an exact repr (assumptions, constant outputs).
bool is_plain_value(PyObject* o);
PyRef import(const char* module);
// A stable name for a callable: "torch.cumsum", "math.sqrt", "mymodule.Helper.run".
std::string callable_name(PyObject* o);
PyRef getattr(PyObject* o, const char* name);  // internal_error when missing
PyRef attribute_or_null(PyObject* o, const char* name);  // null (no Python error) when missing
// The namespace of the script run_script ran (borrowed), or null before.
PyObject* script_namespace();
// The globals (borrowed, kept for the process) of a helper module named `name` made from
// Python `source`: compiled and run on the first call, the same dict on every later one.
PyObject* helper_module(const char* name, const char* source);

}  // namespace aotrace::embed

namespace aotrace::ir {
struct HostTensor;
enum class DType : uint8_t;
}  // namespace aotrace::ir

namespace aotrace::embed {

// Conversions between torch tensors and the IR's host tensors (bytes through a uint8 view, so
// every dtype converts the same way).
PyRef dtype_object(ir::DType dtype);
PyRef tensor_from_host(const ir::HostTensor& h);
ir::HostTensor host_from_tensor(PyObject* tensor);

}  // namespace aotrace::embed
