// The embedded interpreter: Debian's CPython 3.11 with torch; runs the user's script, captures
// one call of the entry through the frame hook, and runs calls eagerly for comparisons.
#include <chrono>
#include <fstream>
#include <sstream>

#include "embed/embed.h"
#include "embed/frame_hook.h"
#include "embed/translator.h"

namespace aotrace::embed {

namespace {

PyObject* main_namespace = nullptr;  // the script module's dict (owned)
std::string script_path;

// The innermost traceback entry in the user's script, for error locations.
SourceLoc user_location_of_traceback(PyObject* tb) {
  SourceLoc loc;
  for (PyObject* t = tb; t && t != Py_None;) {
    PyRef frame = getattr(t, "tb_frame");
    PyRef code = getattr(frame.get(), "f_code");
    std::string file = py_str(getattr(code.get(), "co_filename").get());
    const int line = static_cast<int>(PyLong_AsLong(getattr(t, "tb_lineno").get()));
    if (file.find("/dist-packages/") == std::string::npos &&
        file.find("/site-packages/") == std::string::npos && file.rfind("<frozen", 0) != 0)
      loc = SourceLoc{file, line, 0, py_str(getattr(code.get(), "co_name").get())};
    PyRef next = getattr(t, "tb_next");
    t = next.get() == Py_None ? nullptr : next.get();
  }
  return loc;
}

[[noreturn]] void raise_python_error(const std::string& what, const std::string& hint) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string msg = what + ": " + (type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "Error");
  if (value) msg += ": " + py_str(value);
  SourceLoc loc = user_location_of_traceback(tb);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  throw UserError(msg, loc, hint);
}

PyRef torch_module() { return import("torch"); }

bool is_module(PyObject* obj) {
  PyRef cls = getattr(import("torch.nn").get(), "Module");
  return PyObject_IsInstance(obj, cls.get()) == 1;
}

PyRef evaluate_call(const std::string& expr) {
  AOT_CHECK(main_namespace, "capture before run_script");
  PyObject* r = PyRun_String(expr.c_str(), Py_eval_input, main_namespace, main_namespace);
  if (!r)
    raise_python_error("evaluating `" + expr + "` in " + script_path + " failed",
                       "`call:` in the YAML must name an nn.Module or a function defined by the "
                       "script");
  return PyRef::steal(r);
}

void flatten_eager(PyObject* out, std::vector<ir::HostTensor>& result) {
  PyRef tensor_type = getattr(torch_module().get(), "Tensor");
  if (PyObject_IsInstance(out, tensor_type.get()) == 1) {
    result.push_back(host_from_tensor(out));
  } else if (PyTuple_Check(out) || PyList_Check(out)) {
    PyRef seq = check(PySequence_Fast(out, "seq"), "seq");
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.get()); ++i)
      flatten_eager(PySequence_Fast_GET_ITEM(seq.get(), i), result);
  } else {
    user_error("the entry returned " + type_name(out) + "; outputs must be tensors or tuples of tensors");
  }
}

// Calls `callable(*args)` with autograd off (as for an eval-mode model).
PyRef call_no_grad(PyObject* callable, PyObject* args) {
  PyRef torch = torch_module();
  PyRef prev = check(PyObject_CallMethod(torch.get(), "is_grad_enabled", nullptr), "is_grad_enabled");
  check(PyObject_CallMethod(torch.get(), "set_grad_enabled", "O", Py_False), "set_grad_enabled");
  PyObject* r = PyObject_Call(callable, args, nullptr);
  PyObject *et, *ev, *etb;
  PyErr_Fetch(&et, &ev, &etb);
  check(PyObject_CallMethod(torch.get(), "set_grad_enabled", "O", prev.get()), "set_grad_enabled");
  PyErr_Restore(et, ev, etb);
  if (!r)
    raise_python_error("running the entry raised",
                       "check that the model runs in eager PyTorch with the declared input shapes");
  return PyRef::steal(r);
}

}  // namespace

Interpreter& Interpreter::instance() {
  static Interpreter interp;
  return interp;
}

Interpreter::Interpreter() {
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  // Resolve the standard library and dist-packages of Debian's python3.11, whatever is on PATH.
  PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3.11");
  config.install_signal_handlers = 0;
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status))
    internal_error(std::string("initialising the embedded CPython 3.11 failed: ") +
                   (status.err_msg ? status.err_msg : "?"));
  PyObject* torch = PyImport_ImportModule("torch");
  if (!torch)
    user_error("importing torch in the embedded Python 3.11 failed: " + fetch_python_error(), {},
               "install Debian's python3-torch (make deps)");
  Py_DECREF(torch);
}

void Interpreter::run_script(const std::filesystem::path& script) {
  std::ifstream in(script);
  if (!in) user_error("cannot read the script " + script.string(), {}, "check `script:` in the YAML");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string abs = std::filesystem::absolute(script).lexically_normal().string();
  script_path = abs;

  PyRef sys_path = getattr(import("sys").get(), "path");
  PyRef dir = PyRef::steal(PyUnicode_FromString(std::filesystem::path(abs).parent_path().c_str()));
  PyList_Insert(sys_path.get(), 0, dir.get());

  PyRef module = check(PyModule_New("__aotrace_main__"), "module");
  PyRef modules = getattr(import("sys").get(), "modules");
  PyDict_SetItemString(modules.get(), "__aotrace_main__", module.get());
  PyObject* ns = PyModule_GetDict(module.get());
  PyDict_SetItemString(ns, "__file__", PyRef::steal(PyUnicode_FromString(abs.c_str())).get());
  PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins());
  PyObject* code = Py_CompileString(buf.str().c_str(), abs.c_str(), Py_file_input);
  if (!code) raise_python_error("the script " + abs + " does not compile", "fix the syntax error");
  PyRef result = PyRef::steal(PyEval_EvalCode(code, ns, ns));
  Py_DECREF(code);
  if (!result) raise_python_error("running the script " + abs + " raised", "the script must run with plain python3.11");
  Py_XDECREF(main_namespace);
  main_namespace = ns;
  Py_INCREF(main_namespace);
}

Capture Interpreter::capture(const std::string& call_expr, const std::vector<CaptureInput>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  PyRef callable = evaluate_call(call_expr);
  const bool module = is_module(callable.get());
  PyRef fn;
  if (module) {
    check(PyObject_CallMethod(callable.get(), "eval", nullptr), "eval()");
    fn = getattr(reinterpret_cast<PyObject*>(Py_TYPE(callable.get())), "forward");
  } else if (PyFunction_Check(callable.get())) {
    fn = callable;
  } else if (PyMethod_Check(callable.get())) {
    fn = PyRef::borrow(PyMethod_GET_FUNCTION(callable.get()));
  } else {
    user_error("`call: " + call_expr + "` is " + type_name(callable.get()) +
                   "; it must be an nn.Module or a Python function",
               {}, "point `call:` at the model object or the function to trace");
  }
  if (!PyFunction_Check(fn.get()))
    user_error("the forward of `" + call_expr + "` is not Python code and cannot be traced");

  // Example inputs: random values of the profile's shapes, from a fixed seed so that a capture
  // is deterministic (they steer the Python run past graph breaks at compile time).
  PyRef torch = torch_module();
  PyRef generator = check(PyObject_CallMethod(torch.get(), "Generator", nullptr), "torch.Generator");
  check(PyObject_CallMethod(generator.get(), "manual_seed", "(i)", 0), "manual_seed");
  PyRef args = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(inputs.size())));
  for (size_t i = 0; i < inputs.size(); ++i) {
    PyRef shape = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(inputs[i].shape.size())));
    for (size_t d = 0; d < inputs[i].shape.size(); ++d)
      PyTuple_SetItem(shape.get(), static_cast<Py_ssize_t>(d), PyLong_FromLongLong(inputs[i].shape[d]));
    PyRef kwargs = PyRef::steal(PyDict_New());
    PyDict_SetItemString(kwargs.get(), "dtype", dtype_object(inputs[i].dtype).get());
    if (ir::is_floating(inputs[i].dtype)) PyDict_SetItemString(kwargs.get(), "generator", generator.get());
    const char* maker = ir::is_floating(inputs[i].dtype) ? "randn" : "zeros";
    PyRef a = PyRef::steal(PyTuple_Pack(1, shape.get()));
    PyObject* t = PyObject_Call(getattr(torch.get(), maker).get(), a.get(), kwargs.get());
    if (!t) internal_error("creating an example input: " + fetch_python_error());
    PyTuple_SetItem(args.get(), static_cast<Py_ssize_t>(i), t);
  }

  Capture out;
  Translator translator(out);
  FrameHookRequest request;
  request.code = getattr(fn.get(), "__code__").release();
  PyRef code_ref = PyRef::steal(request.code);
  request.on_entry = [&](const std::vector<PyObject*>& frame_args) {
    PyRef code = getattr(fn.get(), "__code__");
    PyRef varnames = getattr(code.get(), "co_varnames");
    std::vector<VarRef> vars;
    int next_input = 0;
    for (size_t i = 0; i < frame_args.size(); ++i) {
      const std::string name = py_str(PyTuple_GetItem(varnames.get(), static_cast<Py_ssize_t>(i)));
      const Source source = Source::local(name);
      if (module && i == 0) {
        vars.push_back(std::make_shared<ModuleVar>(PyRef::borrow(frame_args[i]), source));
        translator.add_assumption("L['self'].training == False");
        continue;
      }
      int k = -1;
      for (size_t j = 0; j < inputs.size(); ++j)
        if (PyTuple_GetItem(args.get(), static_cast<Py_ssize_t>(j)) == frame_args[i]) k = static_cast<int>(j);
      if (k >= 0) {
        if (k != next_input++)
          internal_error("entry parameters do not follow the YAML input order");
        vars.push_back(translator.add_input(inputs[static_cast<size_t>(k)], k, source, frame_args[i]));
      } else {
        vars.push_back(translator.wrap(frame_args[i], source));
      }
    }
    translator.translate_entry(fn.get(), std::move(vars));
  };
  try {
    ScopedFrameHook hook(request);
    call_no_grad(callable.get(), args.get());
  } catch (const UserError&) {
    // The Translator's diagnosis (e.g. a shape mismatch at the user's line) comes first.
    if (request.error) std::rethrow_exception(request.error);
    throw;
  }
  if (request.error) std::rethrow_exception(request.error);
  if (!request.seen)
    internal_error("the entry's frame was never evaluated while calling `" + call_expr + "`");
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::vector<ir::HostTensor> Interpreter::run_eager(const std::string& call_expr,
                                                   const std::vector<ir::HostTensor>& inputs) {
  PyRef callable = evaluate_call(call_expr);
  if (is_module(callable.get())) check(PyObject_CallMethod(callable.get(), "eval", nullptr), "eval()");
  PyRef args = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(inputs.size())));
  for (size_t i = 0; i < inputs.size(); ++i)
    PyTuple_SetItem(args.get(), static_cast<Py_ssize_t>(i), tensor_from_host(inputs[i]).release());
  PyRef out = call_no_grad(callable.get(), args.get());
  std::vector<ir::HostTensor> result;
  flatten_eager(out.get(), result);
  return result;
}

}  // namespace aotrace::embed
