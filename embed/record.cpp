// `aotrace profiles record` (issue 15): the input shapes of every call of an entry while a user's
// driver script runs (a loop over real data that calls the model). The entry's code is matched
// by file, first line and name, so that a driver that imports the model's script as a module of
// its own (a second copy of the class) is recorded too. A profile hook (sys.setprofile and
// threading.setprofile) sees each Python call; at the entry's it records, for each parameter
// named, a tensor's dtype and shape, a tuple's or list's items as NAME.i and a dict's as
// NAME.key (the bundle inputs' names), and a Python scalar's type.
// Test: errors_tests Profiles.RecordAndSuggestOnASkewedEncoder.
#include "embed/embed.h"
#include "embed/py.h"

namespace aotrace::embed {
namespace {

const char* const kRecordSource = R"PY(
import json, sys, threading
import torch
import torch.nn as nn

_calls = []

def _flatten(name, value, out):
    if isinstance(value, torch.Tensor):
        out[name] = {"dtype": str(value.dtype).replace("torch.", ""), "shape": list(value.shape)}
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            _flatten(f"{name}.{i}", item, out)
    elif isinstance(value, dict):
        for k, item in value.items():
            _flatten(f"{name}.{k}", item, out)
    elif isinstance(value, (bool, int, float)):
        out[name] = {"dtype": type(value).__name__, "shape": []}

def key_of(obj):
    fn = type(obj).forward if isinstance(obj, nn.Module) else obj
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"{type(obj).__name__} has no Python code to record the calls of")
    return [code.co_filename, code.co_firstlineno, code.co_name]

def start(key, names):
    key = tuple(key)
    _calls.clear()
    def hook(frame, event, arg):
        if event != "call":
            return
        c = frame.f_code
        if c.co_name == key[2] and c.co_firstlineno == key[1] and c.co_filename == key[0]:
            loc = frame.f_locals
            rec = {}
            for n in names:
                if n in loc:
                    _flatten(n, loc[n], rec)
            _calls.append(rec)
    threading.setprofile(hook)
    sys.setprofile(hook)

def stop():
    sys.setprofile(None)
    threading.setprofile(None)
    return json.dumps(_calls)
)PY";

PyObject* record_helper() { return helper_module("__aotrace_record__", kRecordSource); }

PyRef call_helper(const char* function, PyObject* args) {
  PyObject* f = PyDict_GetItemString(record_helper(), function);  // borrowed
  return PyRef::steal(PyObject_CallObject(f, args));
}

}  // namespace

std::string Interpreter::record_calls(const std::string& call_expr, const std::vector<std::string>& parameters,
                                      const std::filesystem::path& driver) {
  PyObject* ns = script_namespace();
  AOT_CHECK(ns != nullptr, "record before run_script");
  PyRef entry = PyRef::steal(PyRun_String(call_expr.c_str(), Py_eval_input, ns, ns));
  if (!entry)
    user_error("evaluating `" + call_expr + "` in the spec's script failed: " + fetch_python_error(), {},
               "check the entry's `call:` in the spec");
  PyRef args = PyRef::steal(Py_BuildValue("(O)", entry.get()));
  PyRef key = call_helper("key_of", args.get());
  if (!key) user_error("cannot record the calls of `" + call_expr + "`: " + fetch_python_error(), {},
                       "record an nn.Module instance or a Python function");
  PyRef names = PyRef::steal(PyList_New(0));
  for (const std::string& p : parameters) PyList_Append(names.get(), PyRef::steal(PyUnicode_FromString(p.c_str())).get());
  PyRef start_args = PyRef::steal(Py_BuildValue("(OO)", key.get(), names.get()));
  check(call_helper("start", start_args.get()).release(), "starting the record hook");
  struct Stop {  // the hook goes whatever the driver does
    ~Stop() { call_helper("stop", PyRef::steal(PyTuple_New(0)).get()); PyErr_Clear(); }
  };
  std::string calls;
  {
    Stop stop;
    run_script(driver);
    PyRef result = call_helper("stop", PyRef::steal(PyTuple_New(0)).get());
    calls = py_str(check(result.release(), "stopping the record hook").get());
  }
  return calls;
}

}  // namespace aotrace::embed
