// The embedded interpreter: Debian's CPython 3.11 with torch; runs the user's script, captures
// one call of the entry through the frame hook, and runs calls eagerly for comparisons.
#include <chrono>
#include <functional>
#include <fstream>
#include <map>
#include <utility>
#include <sstream>

#include "embed/embed.h"
#include "embed/files_read.h"
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

// The entries `call:` expressions evaluated to, once per script run: `call: Net().eval()` builds
// one module, whose weights the capture, the golden vectors and every eager run share.
std::map<std::string, PyRef>& evaluated_calls() {
  static std::map<std::string, PyRef> calls;
  return calls;
}

PyRef evaluate_call(const std::string& expr) {
  AOT_CHECK(main_namespace, "capture before run_script");
  if (auto it = evaluated_calls().find(expr); it != evaluated_calls().end()) return it->second;
  PyObject* r = PyRun_String(expr.c_str(), Py_eval_input, main_namespace, main_namespace);
  if (!r)
    raise_python_error("evaluating `" + expr + "` in " + script_path + " failed",
                       "`call:` in the YAML must name an nn.Module or a function defined by the "
                       "script");
  return evaluated_calls()[expr] = PyRef::steal(r);
}

bool is_tensor(PyObject* obj) {
  PyRef tensor_type = getattr(torch_module().get(), "Tensor");
  return PyObject_IsInstance(obj, tensor_type.get()) == 1;
}

// A dataclass instance's fields as a dict (name -> value, in field order); null for others.
PyRef dataclass_fields(PyObject* out) {
  if (PyType_Check(out) || !PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(out)), "__dataclass_fields__"))
    return {};
  PyRef fields = check(PyObject_CallOneArg(getattr(import("dataclasses").get(), "fields").get(), out), "dataclasses.fields");
  PyRef d = PyRef::steal(PyDict_New());
  for (Py_ssize_t i = 0; i < PyTuple_Size(fields.get()); ++i) {
    PyRef name = getattr(PyTuple_GetItem(fields.get(), i), "name");
    PyDict_SetItem(d.get(), name.get(), getattr(out, py_str(name.get()).c_str()).get());
  }
  return d;
}

void flatten_eager(PyObject* out, std::vector<ir::HostTensor>& result) {
  if (PyRef fields = dataclass_fields(out)) {
    flatten_eager(fields.get(), result);
  } else if (is_tensor(out)) {
    result.push_back(host_from_tensor(out));
  } else if (PyTuple_Check(out) || PyList_Check(out)) {
    PyRef seq = check(PySequence_Fast(out, "seq"), "seq");
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.get()); ++i)
      flatten_eager(PySequence_Fast_GET_ITEM(seq.get(), i), result);
  } else if (PyDict_Check(out)) {  // values in insertion order, as the Translator flattens them
    PyObject *key, *value;
    for (Py_ssize_t pos = 0; PyDict_Next(out, &pos, &key, &value);) flatten_eager(value, result);
  } else if (is_plain_value(out)) {
    // a constant of the output (None, a number, a bool, a string): no tensor
  } else {
    user_error("the entry returned " + type_name(out) +
               "; outputs must be tensors or tuples, lists or dicts of tensors");
  }
}

// The tensors of `out` at the leaves of `tree` (result[leaf], sized by the caller to the
// graph's outputs); false when `out` does not have the tree's structure.
bool flatten_like(PyObject* out, const ir::OutputTree& tree, std::vector<ir::HostTensor>& result) {
  using Kind = ir::OutputTree::Kind;
  switch (tree.kind) {
    case Kind::Leaf:
      if (!is_tensor(out) || tree.leaf < 0 || static_cast<size_t>(tree.leaf) >= result.size()) return false;
      result[static_cast<size_t>(tree.leaf)] = host_from_tensor(out);
      return true;
    case Kind::Tuple:
    case Kind::List: {
      if (!PyTuple_Check(out) && !PyList_Check(out)) return false;
      PyRef seq = check(PySequence_Fast(out, "seq"), "seq");
      if (PySequence_Fast_GET_SIZE(seq.get()) != static_cast<Py_ssize_t>(tree.children.size())) return false;
      for (size_t i = 0; i < tree.children.size(); ++i)
        if (!flatten_like(PySequence_Fast_GET_ITEM(seq.get(), static_cast<Py_ssize_t>(i)), tree.children[i], result))
          return false;
      return true;
    }
    case Kind::Constant:
      return py_repr(out) == tree.value;  // the value the capture folded, or another program
    case Kind::Dict: {
      if (PyRef fields = dataclass_fields(out)) return flatten_like(fields.get(), tree, result);
      if (!PyDict_Check(out) || PyDict_Size(out) != static_cast<Py_ssize_t>(tree.keys.size())) return false;
      for (size_t i = 0; i < tree.keys.size(); ++i) {
        PyObject* value = PyDict_GetItemString(out, tree.keys[i].c_str());  // borrowed
        if (!value || !flatten_like(value, tree.children.at(i), result)) return false;
      }
      return true;
    }
  }
  return false;
}

// A Python int, float or bool of a scalar input.
PyRef python_scalar(double value, ir::DType dtype) {
  if (dtype == ir::DType::b8) return PyRef::borrow(value != 0 ? Py_True : Py_False);
  if (ir::is_floating(dtype)) return PyRef::steal(PyFloat_FromDouble(value));
  return PyRef::steal(PyLong_FromLongLong(static_cast<long long>(value)));
}

ir::HostTensor scalar_host(double value, ir::DType dtype) {
  ir::HostTensor t = ir::HostTensor::zeros(dtype, {});
  t.set(0, value);
  return t;
}

// Which inputs the arguments pass as Python scalars.
void mark_scalars(const CaptureArg& a, std::vector<bool>& scalar) {
  if (a.kind == CaptureArg::Kind::Scalar) scalar.at(static_cast<size_t>(a.input)) = true;
  for (const CaptureArg& item : a.items) mark_scalars(item, scalar);
}

// An argument of the call built from the inputs' Python values.
PyRef build_argument(const CaptureArg& a, const std::vector<PyRef>& leaves) {
  switch (a.kind) {
    case CaptureArg::Kind::Tensor:
    case CaptureArg::Kind::Scalar: return leaves.at(static_cast<size_t>(a.input));
    case CaptureArg::Kind::Tuple:
    case CaptureArg::Kind::List: {
      const auto n = static_cast<Py_ssize_t>(a.items.size());
      PyRef seq = PyRef::steal(a.kind == CaptureArg::Kind::Tuple ? PyTuple_New(n) : PyList_New(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* item = build_argument(a.items[static_cast<size_t>(i)], leaves).release();
        if (a.kind == CaptureArg::Kind::Tuple) PyTuple_SetItem(seq.get(), i, item);
        else PyList_SetItem(seq.get(), i, item);
      }
      return seq;
    }
    case CaptureArg::Kind::Dict: {
      PyRef d = PyRef::steal(PyDict_New());
      for (const CaptureArg& item : a.items)
        PyDict_SetItemString(d.get(), item.key.c_str(), build_argument(item, leaves).get());
      return d;
    }
  }
  internal_error("build_argument: bad kind");
}

PyRef tuple_of(const std::vector<PyRef>& items) {
  PyRef t = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
  for (size_t i = 0; i < items.size(); ++i) PyTuple_SetItem(t.get(), static_cast<Py_ssize_t>(i), PyRef(items[i]).release());
  return t;
}

// The call's positional arguments.
PyRef build_arguments(const std::vector<CaptureArg>& arguments, const std::vector<PyRef>& leaves) {
  std::vector<PyRef> args;
  for (const CaptureArg& a : arguments) args.push_back(build_argument(a, leaves));
  return tuple_of(args);
}

// Records the outputs `out` of a real call of `graph`'s program in Graph::outputs order: the
// output tree's leaves, then the inputs the call updated in place (`leaves`: the inputs it was
// given, one per graph input, as the call left them).
void record_outputs(PyObject* out, PyObject* args, const ir::Graph& graph, EagerCall& call) {
  std::vector<ir::HostTensor> result(graph.outputs.size());
  call.has_outputs = flatten_like(out, graph.output_tree, result);
  for (const ir::InputUpdate& u : graph.input_updates)
    result.at(static_cast<size_t>(u.output)) = host_from_tensor(PyTuple_GetItem(args, u.input));
  call.outputs = call.has_outputs ? std::move(result) : std::vector<ir::HostTensor>{};
}

// Torch's intra-op thread count set to one while it lives, so that eager results (parallel
// reductions are split by thread) are the same on every machine; the count before is restored.
class OneTorchThread {
 public:
  OneTorchThread() : torch_(torch_module()) {
    PyRef n = check(PyObject_CallMethod(torch_.get(), "get_num_threads", nullptr), "get_num_threads");
    previous_ = PyLong_AsLong(n.get());
    check(PyObject_CallMethod(torch_.get(), "set_num_threads", "(i)", 1), "set_num_threads");
  }
  ~OneTorchThread() {
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);  // a pending error of the call stays pending
    Py_XDECREF(PyObject_CallMethod(torch_.get(), "set_num_threads", "(l)", previous_));
    PyErr_Clear();
    PyErr_Restore(et, ev, etb);
  }
  OneTorchThread(const OneTorchThread&) = delete;
  OneTorchThread& operator=(const OneTorchThread&) = delete;

 private:
  PyRef torch_;
  long previous_ = 1;
};

// Eager float16 and bfloat16 on torch's CPU build, which lacks many float16 kernels (1.13:
// layer_norm, linear, softmax, gelu, conv, …). A call that raises "not implemented for 'Half'"
// (or 'BFloat16') runs again under this torch function mode: an op that raises so runs on its
// low-precision tensors widened to float32, and its floating results are rounded back, as a
// GPU's float16 kernels compute in float32 and round their outputs. Only ops that raise are
// touched, and not in-place or out= ones (a widened copy would take the write), nor ops mixing
// in wider floats (their results are wider anyway). Only calls that raised run under it: a
// mode makes has_torch_function true, which turns torch fast paths off (nn.TransformerEncoder's
// nested tensors). `ops` lists the ops it widened, for the compile's note.
const char kLowPrecisionEager[] = R"PY(
import torch
from torch.overrides import TorchFunctionMode

_LOW = ((torch.float16, "'Half'"), (torch.bfloat16, "'BFloat16'"))

def lacking(e):  # the low-precision dtypes error e says torch has no kernel for
    return [d for d, n in _LOW if isinstance(e, RuntimeError) and 'not implemented for ' + n in str(e)]

def _floats(v, out):
    if isinstance(v, torch.Tensor):
        if v.is_floating_point() and v.dim() > 0:
            out.add(v.dtype)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _floats(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _floats(x, out)

def _cast(v, src, dst):
    if isinstance(v, torch.Tensor):
        return v.to(dst) if v.dtype == src else v
    if isinstance(v, tuple) and hasattr(v, '_fields'):
        return type(v)(*[_cast(x, src, dst) for x in v])
    if isinstance(v, (list, tuple)):
        return type(v)(_cast(x, src, dst) for x in v)
    if isinstance(v, dict):
        return {k: _cast(x, src, dst) for k, x in v.items()}
    return v

class WidenLowPrecision(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            return func(*args, **kwargs)
        except RuntimeError as e:
            error = e
        name = getattr(func, '__name__', '') or str(func)
        low = lacking(error)
        floats = set()
        _floats((args, kwargs), floats)
        if len(low) != 1 or floats != {low[0]} or name.endswith('_') or 'out' in kwargs:
            raise error
        low = low[0]
        result = func(*_cast(args, low, torch.float32), **_cast(kwargs, low, torch.float32))
        if name not in self.ops:
            self.ops.append(name)
        return _cast(result, torch.float32, low)
)PY";

// Calls `callable(*make_args())` with autograd off (as for an eval-mode model). When it raises
// for a float16/bfloat16 kernel torch's CPU build lacks, it calls again on new arguments (the
// first call may have changed its own in place) with those ops widened (kLowPrecisionEager),
// and their names go to `widened`.
PyRef call_no_grad(PyObject* callable, const std::function<PyRef()>& make_args,
                   std::vector<std::string>* widened = nullptr) {
  PyRef torch = torch_module();
  PyRef prev = check(PyObject_CallMethod(torch.get(), "is_grad_enabled", nullptr), "is_grad_enabled");
  check(PyObject_CallMethod(torch.get(), "set_grad_enabled", "O", Py_False), "set_grad_enabled");
  PyObject* r = PyObject_Call(callable, make_args().get(), nullptr);
  PyObject *et, *ev, *etb;
  PyErr_Fetch(&et, &ev, &etb);
  if (et) PyErr_NormalizeException(&et, &ev, &etb);  // torch sets a message, not an exception object
  PyObject* helpers = r ? nullptr : helper_module("aotrace_low_precision_eager", kLowPrecisionEager);
  PyRef lacks = helpers && ev ? check(PyObject_CallFunctionObjArgs(PyDict_GetItemString(helpers, "lacking"), ev, nullptr),
                                      "lacking")
                              : PyRef();
  if (lacks && PyObject_IsTrue(lacks.get())) {
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(etb);
    PyRef mode = check(PyObject_CallNoArgs(PyDict_GetItemString(helpers, "WidenLowPrecision")), "WidenLowPrecision");
    check(PyObject_CallMethod(mode.get(), "__enter__", nullptr), "WidenLowPrecision.__enter__");
    r = PyObject_Call(callable, make_args().get(), nullptr);
    PyErr_Fetch(&et, &ev, &etb);
    check(PyObject_CallMethod(mode.get(), "__exit__", "OOO", Py_None, Py_None, Py_None), "WidenLowPrecision.__exit__");
    PyRef ops = check(PyObject_GetAttrString(mode.get(), "ops"), "WidenLowPrecision.ops");
    for (Py_ssize_t i = 0; widened && i < PyList_Size(ops.get()); ++i)
      widened->push_back(py_str(PyList_GetItem(ops.get(), i)));
  }
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
  // As /usr/bin/python3.11 does: the UTF-8 mode when the locale is C or POSIX (CI, containers),
  // so a script's open()/read_text() decode as they do when it runs on its own.
  PyPreConfig preconfig;
  PyPreConfig_InitIsolatedConfig(&preconfig);
  preconfig.utf8_mode = -1;  // decided from LC_CTYPE, as for the python3.11 command
  PyStatus pre = Py_PreInitialize(&preconfig);
  if (PyStatus_Exception(pre))
    internal_error(std::string("pre-initialising the embedded CPython 3.11 failed: ") +
                   (pre.err_msg ? pre.err_msg : "?"));
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  // Resolve the standard library and dist-packages of Debian's python3.11, whatever is on PATH.
  PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3.11");
  config.install_signal_handlers = 0;
  // As `python3.11 -u`: sys.stdout and sys.stderr write through to the file descriptors. When
  // aotrace's output is a pipe or a file they would otherwise be block-buffered and flushed only
  // by Py_Finalize, which aotrace never reaches (it exits with the interpreter alive), so the
  // script's prints were lost; unbuffered, they also stay in order with aotrace's own lines.
  config.buffered_stdio = 0;
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status))
    internal_error(std::string("initialising the embedded CPython 3.11 failed: ") +
                   (status.err_msg ? status.err_msg : "?"));
  install_file_read_hook();
  compile_user_modules_from_source();
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
  evaluated_calls().clear();
  Py_INCREF(main_namespace);
}

PyObject* script_namespace() { return main_namespace; }

std::vector<CaptureArg> one_argument_per_input(const std::vector<CaptureInput>& inputs) {
  std::vector<CaptureArg> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    CaptureArg a;
    a.kind = inputs[i].scalar ? CaptureArg::Kind::Scalar : CaptureArg::Kind::Tensor;
    a.key = inputs[i].name;
    a.input = static_cast<int>(i);
    args.push_back(std::move(a));
  }
  return args;
}

namespace {

// Whether nn.Module.__call__ does more for `module` than call its class's forward: forward
// hooks (its own or global ones) or an instance attribute `forward`.
bool runs_more_than_forward(PyObject* module) {
  return !forward_hooks(module, true).empty() || !forward_hooks(module, false).empty() || instance_forward(module);
}

}  // namespace

Capture Interpreter::capture(const std::string& call_expr, const std::vector<CaptureInput>& inputs,
                             std::vector<CaptureArg> arguments) {
  if (arguments.empty()) arguments = one_argument_per_input(inputs);
  const auto start = std::chrono::steady_clock::now();
  PyRef callable = evaluate_call(call_expr);
  // The Python function whose frame is traced, and how many of its leading parameters are not
  // the spec's arguments (a module's or a bound method's self, a partial's arguments).
  bool module = false;
  size_t leading = 0;
  PyRef fn;
  PyRef partial_type = getattr(import("functools").get(), "partial");
  for (PyRef c = callable;;) {
    if (is_module(c.get())) {
      check(PyObject_CallMethod(c.get(), "eval", nullptr), "eval()");
      // nn.Module.__call__ itself is traced when it does more than call the class's forward
      // (forward hooks, an instance `forward`), so that they are part of the graph.
      fn = getattr(reinterpret_cast<PyObject*>(Py_TYPE(c.get())), runs_more_than_forward(c.get()) ? "_call_impl" : "forward");
      module = leading == 0;  // its self is the frame's first parameter
      ++leading;
    } else if (PyFunction_Check(c.get())) {
      fn = c;
    } else if (PyMethod_Check(c.get())) {
      fn = PyRef::borrow(PyMethod_GET_FUNCTION(c.get()));
      ++leading;
    } else if (PyObject_IsInstance(c.get(), partial_type.get()) == 1) {
      // functools.partial(f, a, ...): f runs with a, ... first (keywords bind by name).
      leading += static_cast<size_t>(PyTuple_Size(getattr(c.get(), "args").get()));
      c = getattr(c.get(), "func");
      continue;
    } else if (PyRef call = attribute_or_null(reinterpret_cast<PyObject*>(Py_TYPE(c.get())), "__call__");
               call && PyFunction_Check(call.get())) {
      fn = call;  // an object with a Python __call__: traced with the object as self
      ++leading;
    } else {
      user_error("`call: " + call_expr + "` is " + type_name(c.get()) +
                     "; it must be an nn.Module, a Python function, a functools.partial or an object "
                     "with a Python __call__",
                 {}, "point `call:` at the model object or the function to trace");
    }
    break;
  }
  if (!PyFunction_Check(fn.get()))
    user_error("the forward of `" + call_expr + "` is not Python code and cannot be traced");

  // Example inputs: random values of the profile's shapes, from a fixed seed so that a capture
  // is deterministic (they steer the Python run past graph breaks at compile time).
  PyRef torch = torch_module();
  PyRef generator = check(PyObject_CallMethod(torch.get(), "Generator", nullptr), "torch.Generator");
  check(PyObject_CallMethod(generator.get(), "manual_seed", "(i)", 0), "manual_seed");
  std::vector<PyRef> leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].scalar) {
      leaves.push_back(python_scalar(inputs[i].value, inputs[i].dtype));
      continue;
    }
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
    leaves.push_back(PyRef::steal(t));
  }
  PyRef args = build_arguments(arguments, leaves);
  PyRef leaf_tuple = tuple_of(leaves);

  Capture out;
  out.arguments = arguments;
  for (size_t i = 0; i < inputs.size(); ++i)  // as passed, before the call could change them
    out.example.inputs.push_back(inputs[i].scalar ? scalar_host(inputs[i].value, inputs[i].dtype)
                                                  : host_from_tensor(leaves[i].get()));
  Translator translator(out);
  FrameHookRequest request;
  request.code = getattr(fn.get(), "__code__").release();
  PyRef code_ref = PyRef::steal(request.code);
  request.on_entry = [&](const std::vector<PyObject*>& frame_args) {
    PyRef code = getattr(fn.get(), "__code__");
    PyRef varnames = getattr(code.get(), "co_varnames");
    std::vector<VarRef> vars;
    int next_input = 0;
    // An argument as variables: its inputs in order (each a graph input), in their containers.
    std::function<VarRef(const CaptureArg&, const Source&, PyObject*)> argument =
        [&](const CaptureArg& a, const Source& source, PyObject* obj) -> VarRef {
      switch (a.kind) {
        case CaptureArg::Kind::Tensor:
        case CaptureArg::Kind::Scalar: {
          if (a.input != next_input++) internal_error("entry parameters do not follow the YAML input order");
          const CaptureInput& in = inputs[static_cast<size_t>(a.input)];
          return a.kind == CaptureArg::Kind::Tensor ? translator.add_input(in, a.input, source, obj)
                                                    : translator.add_scalar_input(in, a.input, source, obj);
        }
        case CaptureArg::Kind::Tuple:
        case CaptureArg::Kind::List: {
          std::vector<VarRef> items;
          for (size_t j = 0; j < a.items.size(); ++j)
            items.push_back(argument(a.items[j], source.item(static_cast<int64_t>(j)),
                                     PySequence_Fast_GET_ITEM(obj, static_cast<Py_ssize_t>(j))));
          return std::make_shared<SequenceVar>(
              a.kind == CaptureArg::Kind::Tuple ? SequenceVar::Kind::Tuple : SequenceVar::Kind::List,
              std::move(items), source);
        }
        case CaptureArg::Kind::Dict: {
          auto d = std::make_shared<DictVar>(source);
          for (const CaptureArg& item : a.items)
            d->set(PyRef::steal(PyUnicode_FromString(item.key.c_str())),
                   argument(item, source.item(item.key), PyDict_GetItemString(obj, item.key.c_str())));
          return d;
        }
      }
      internal_error("capture: bad argument kind");
    };
    // The frame's parameters as the call passed them: positional ones, then the items of
    // *args (a decorator's wrapper, such as @torch.no_grad()'s, takes the arguments this way),
    // keyword-only ones and the items of **kwargs by name.
    PyCodeObject* co = reinterpret_cast<PyCodeObject*>(code.get());
    const size_t argcount = static_cast<size_t>(co->co_argcount);
    const size_t kwonly = static_cast<size_t>(co->co_kwonlyargcount);
    const bool has_varargs = co->co_flags & CO_VARARGS;
    size_t position = 0;  // of the call's positional arguments
    auto variable = [&](PyObject* obj, const Source& source, bool positional) -> VarRef {
      const size_t p = positional ? position++ : SIZE_MAX;
      if (module && p == 0) {
        translator.set_root_module(obj);
        translator.add_assumption(source.str() + ".training == False");
        return std::make_shared<ModuleVar>(PyRef::borrow(obj), source);
      }
      // The argument this parameter received: a tensor or container by identity; a Python
      // scalar by position (small ints and bools are shared objects).
      int k = -1;
      if (p != SIZE_MAX && p >= leading && p - leading < arguments.size() &&
          arguments[p - leading].kind == CaptureArg::Kind::Scalar)
        k = static_cast<int>(p - leading);
      for (size_t j = 0; k < 0 && j < arguments.size(); ++j)
        if (arguments[j].kind != CaptureArg::Kind::Scalar &&
            PyTuple_GetItem(args.get(), static_cast<Py_ssize_t>(j)) == obj)
          k = static_cast<int>(j);
      if (k >= 0) return argument(arguments[static_cast<size_t>(k)], source, obj);
      return translator.wrap(obj, source);
    };
    std::vector<std::pair<std::string, VarRef>> kwargs;
    auto name_at = [&](size_t i) { return py_str(PyTuple_GetItem(varnames.get(), static_cast<Py_ssize_t>(i))); };
    for (size_t i = 0; i < argcount && i < frame_args.size(); ++i)
      vars.push_back(variable(frame_args[i], Source::local(name_at(i)), true));
    for (size_t i = argcount; i < argcount + kwonly && i < frame_args.size(); ++i)
      kwargs.emplace_back(name_at(i), variable(frame_args[i], Source::local(name_at(i)), false));
    size_t slot = argcount + kwonly;
    if (has_varargs && slot < frame_args.size()) {
      PyObject* rest = frame_args[slot];
      const Source source = Source::local(name_at(slot));
      for (Py_ssize_t j = 0; j < PyTuple_Size(rest); ++j)
        vars.push_back(variable(PyTuple_GetItem(rest, j), source.item(j), true));
      ++slot;
    }
    if ((co->co_flags & CO_VARKEYWORDS) && slot < frame_args.size()) {
      const Source source = Source::local(name_at(slot));
      PyObject *key, *value;
      for (Py_ssize_t pos = 0; PyDict_Next(frame_args[slot], &pos, &key, &value);)
        kwargs.emplace_back(py_str(key), variable(value, source.item(py_str(key)), false));
    }
    translator.translate_entry(fn.get(), std::move(vars), std::move(kwargs));
  };
  PyRef result;
  try {
    OneTorchThread one_thread;
    ScopedFrameHook hook(request);
    bool first = true;
    auto make_args = [&] {  // a second call (widened) gets new inputs: the first may have changed its own
      if (!std::exchange(first, false)) {
        for (size_t i = 0; i < inputs.size(); ++i)
          leaves[i] = inputs[i].scalar ? python_scalar(inputs[i].value, inputs[i].dtype)
                                       : tensor_from_host(out.example.inputs[i]);
        leaf_tuple = tuple_of(leaves);
        args = build_arguments(arguments, leaves);
      }
      return args;
    };
    result = call_no_grad(callable.get(), make_args, &out.example.widened);
  } catch (const UserError&) {
    // The Translator's diagnosis (e.g. a shape mismatch at the user's line) comes first.
    if (request.error) std::rethrow_exception(request.error);
    throw;
  }
  if (request.error) std::rethrow_exception(request.error);
  if (!request.seen)
    internal_error("the entry's frame was never evaluated while calling `" + call_expr + "`");
  if (out.breaks.empty()) record_outputs(result.get(), leaf_tuple.get(), out.graph, out.example);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

namespace {

// Calls `call_expr` (a module in eval mode, or a function) for real on `inputs`, built into
// arguments by `arguments` (empty: one tensor per input); `leaves` gets the inputs passed, as
// the call left them.
PyRef call_entry(const std::string& call_expr, const std::vector<ir::HostTensor>& inputs,
                 std::vector<CaptureArg> arguments, PyRef& leaves, std::vector<std::string>* widened = nullptr) {
  PyRef callable = evaluate_call(call_expr);
  if (is_module(callable.get())) check(PyObject_CallMethod(callable.get(), "eval", nullptr), "eval()");
  if (arguments.empty())
    for (size_t i = 0; i < inputs.size(); ++i) arguments.push_back({CaptureArg::Kind::Tensor, "", static_cast<int>(i), {}});
  std::vector<bool> scalar(inputs.size(), false);
  for (const CaptureArg& a : arguments) mark_scalars(a, scalar);
  auto make_args = [&] {  // each call new tensors: a failed one may have changed its own
    std::vector<PyRef> values;
    for (size_t i = 0; i < inputs.size(); ++i)
      values.push_back(scalar[i] ? python_scalar(inputs[i].get(0), inputs[i].dtype) : tensor_from_host(inputs[i]));
    leaves = tuple_of(values);
    return build_arguments(arguments, values);
  };
  return call_no_grad(callable.get(), make_args, widened);
}

// Small integers in [0, 4) (booleans: 0 or 1) from a fixed seed, in place of zeros.
void fill_small_integers(ir::HostTensor& t) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  const int range = t.dtype == ir::DType::b8 ? 2 : 4;
  for (int64_t i = 0; i < t.numel(); ++i) {  // splitmix64
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    t.set(i, static_cast<double>((z ^ (z >> 31)) % static_cast<uint64_t>(range)));
  }
}

// A key-padding mask that a PaddingMask guard accepts and that pads: row 0 full, row r of B
// unpadded up to T * (B - r) / B (1 = padded).
void fill_padding_mask(ir::HostTensor& t) {
  if (t.shape.size() != 2) return;
  const int64_t rows = t.shape[0], cols = t.shape[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t.set(r * cols + c, c >= cols * (rows - r) / rows ? 1.0 : 0.0);
}

}  // namespace

EagerCall Interpreter::golden_call(const std::string& call_expr, const Capture& capture) {
  const EagerCall& example = capture.example;
  if (!capture.breaks.empty() || !example.has_outputs) return example;
  EagerCall call;
  call.inputs = example.inputs;
  std::vector<bool> scalar(call.inputs.size(), false);
  for (const CaptureArg& a : capture.arguments) mark_scalars(a, scalar);
  // A key-padding mask the graph guards (nn.TransformerEncoder's nested-tensor path) gets values
  // the guard accepts, the other integer inputs small integers.
  std::vector<bool> mask(call.inputs.size(), false);
  for (const ir::Guard& g : capture.guards)
    if (g.kind == ir::Guard::Kind::PaddingMask && static_cast<size_t>(g.input) < mask.size())
      mask[static_cast<size_t>(g.input)] = true;
  bool changed = false;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (mask[i]) {
      fill_padding_mask(call.inputs[i]);
      changed = true;
    } else if (!ir::is_floating(call.inputs[i].dtype) && !scalar[i]) {  // a scalar keeps its value
      fill_small_integers(call.inputs[i]);
      changed = true;
    }
  }
  if (!changed) return example;  // the capture's own call already ran on these inputs
  try {
    OneTorchThread one_thread;
    PyRef leaves;
    PyRef out = call_entry(call_expr, call.inputs, capture.arguments, leaves, &call.widened);
    record_outputs(out.get(), leaves.get(), capture.graph, call);
  } catch (const UserError&) {
    return example;  // e.g. an index out of range: the zeros are valid
  }
  return call.has_outputs ? call : example;
}

void Interpreter::send_prints_to_stderr() { PySys_SetObject("stdout", PySys_GetObject("stderr")); }

std::vector<ir::HostTensor> Interpreter::run_eager(const std::string& call_expr,
                                                   const std::vector<ir::HostTensor>& inputs,
                                                   const std::vector<ir::InputUpdate>& updates,
                                                   const std::vector<CaptureArg>& arguments) {
  PyRef args;
  PyRef out = call_entry(call_expr, inputs, arguments, args);
  std::vector<ir::HostTensor> result;
  flatten_eager(out.get(), result);
  for (const ir::InputUpdate& u : updates) result.push_back(host_from_tensor(PyTuple_GetItem(args.get(), u.input)));
  return result;
}

}  // namespace aotrace::embed
