// Interpreter::files_read: what the script read, from two sources, because neither is enough
// alone. The "open" audit event (PEP 578) sees data files (torch.load, np.load, open()) but not
// a module imported from a valid __pycache__ .pyc, whose source is only stat'ed; sys.modules'
// __file__ sees every imported module but no data file.
//
// A file is the user's unless it belongs to the Python installation or the operating system:
// under the interpreter's standard library or a site-/dist-packages folder, a __pycache__
// folder (derived from a source that is listed itself), /proc, /sys, /dev, /etc, /usr/lib,
// /usr/local/lib or /usr/share. Those change with package upgrades, which the compile cache
// sees through torch's version and aotrace's own identity instead; listing them would put
// thousands of torch files into every depfile.
#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>

#include "embed/embed.h"
#include "embed/files_read.h"
#include "embed/py.h"

namespace aotrace::embed {

namespace fs = std::filesystem;

namespace {

std::mutex opened_mutex;
std::set<std::string>& opened_files() {
  static std::set<std::string> files;
  return files;
}

// Whether an "open" event's mode (a str for open(), None for os.open with its flags) reads only.
bool opens_for_reading(PyObject* mode, PyObject* flags) {
  if (mode && PyUnicode_Check(mode)) {
    const char* m = PyUnicode_AsUTF8(mode);
    if (!m) {
      PyErr_Clear();
      return false;
    }
    return std::string(m).find_first_of("wax+") == std::string::npos;
  }
  if (flags && PyLong_Check(flags)) {
    const long f = PyLong_AsLong(flags);
    if (f == -1 && PyErr_Occurred()) PyErr_Clear();
    return (f & O_ACCMODE) == O_RDONLY;
  }
  return true;
}

// The audit hook: never raises, never fails the event it observes.
int record_open(const char* event, PyObject* args, void*) {
  if (std::string_view(event) != "open" || !PyTuple_Check(args) || PyTuple_Size(args) < 1) return 0;
  PyObject* path = PyTuple_GetItem(args, 0);
  PyObject* mode = PyTuple_Size(args) > 1 ? PyTuple_GetItem(args, 1) : nullptr;
  PyObject* flags = PyTuple_Size(args) > 2 ? PyTuple_GetItem(args, 2) : nullptr;
  // open() audits the argument as given: a str, bytes, an os.PathLike (pathlib) or an fd.
  PyRef fspath = path && !PyLong_Check(path) ? PyRef::steal(PyOS_FSPath(path)) : PyRef();
  std::string p;
  if (fspath && PyUnicode_Check(fspath.get())) {
    const char* s = PyUnicode_AsUTF8(fspath.get());
    if (s) p = s;
  } else if (fspath && PyBytes_Check(fspath.get())) {
    p = PyBytes_AsString(fspath.get());
  }
  if (PyErr_Occurred()) PyErr_Clear();
  if (p.empty() || !opens_for_reading(mode, flags)) return 0;
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);  // now: the script may chdir later
  if (ec) return 0;
  std::lock_guard<std::mutex> lock(opened_mutex);
  opened_files().insert(abs.lexically_normal().string());
  return 0;
}

// Folders whose files are the Python installation's or the system's, each ending in '/'.
std::vector<std::string> environment_folders() {
  std::vector<std::string> out = {"/proc/", "/sys/", "/dev/", "/etc/", "/usr/lib/", "/usr/local/lib/", "/usr/share/"};
  PyRef paths = PyRef::steal(PyObject_CallNoArgs(getattr(import("sysconfig").get(), "get_paths").get()));
  if (paths && PyDict_Check(paths.get())) {
    for (const char* key : {"stdlib", "platstdlib", "purelib", "platlib"})
      if (PyObject* v = PyDict_GetItemString(paths.get(), key)) out.push_back(py_str(v) + "/");
  } else {
    PyErr_Clear();
  }
  return out;
}

bool is_environment_file(const std::string& path, const std::vector<std::string>& folders) {
  for (const char* part : {"/site-packages/", "/dist-packages/", "/__pycache__/"})
    if (path.find(part) != std::string::npos) return true;
  return std::any_of(folders.begin(), folders.end(), [&](const std::string& f) { return path.rfind(f, 0) == 0; });
}

// The environment folders for is_user_file, read once when the rule is installed (not from
// inside an import).
std::vector<std::string>& source_rule_folders() {
  static std::vector<std::string> folders;
  return folders;
}

// is_user_file(path): whether a module's source is the user's (the depfile's rule above).
PyObject* is_user_file(PyObject*, PyObject* arg) {
  const char* path = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : nullptr;
  if (path == nullptr) return nullptr;
  return PyBool_FromLong(!is_environment_file(path, source_rule_folders()));
}

// CPython validates a timestamp .pyc by its source's size and mtime in whole seconds, so an
// edit within the second of the last compile that keeps the size (2.0 -> 3.0) would be captured
// from the stale bytecode, silently; and a build step writes nothing into the user's source
// tree. A path that cache_from_source refuses with NotImplementedError is compiled from source
// and not cached. The installation's modules keep their caches: compiling torch costs seconds.
constexpr const char* kSourceOnlySource = R"PY(
import importlib._bootstrap_external as _external

def install(is_user_file):
    cached = _external.cache_from_source

    def cache_from_source(path, debug_override=None, *, optimization=None):
        if is_user_file(str(path)):
            raise NotImplementedError('aotrace compiles the modules of the script from source')
        return cached(path, debug_override, optimization=optimization)

    _external.cache_from_source = cache_from_source
)PY";

}  // namespace

void install_file_read_hook() {
  if (PySys_AddAuditHook(record_open, nullptr) < 0) PyErr_Clear();
}

void compile_user_modules_from_source() {
  source_rule_folders() = environment_folders();
  static PyMethodDef def = {"is_user_file", is_user_file, METH_O, nullptr};
  PyRef predicate = check(PyCFunction_New(&def, nullptr), "is_user_file");
  PyObject* helper = helper_module("__aotrace_source_only__", kSourceOnlySource);
  check(PyObject_CallOneArg(PyDict_GetItemString(helper, "install"), predicate.get()),
        "installing the source-only import rule");
}

std::vector<fs::path> Interpreter::files_read() {
  std::set<std::string> candidates;
  {
    std::lock_guard<std::mutex> lock(opened_mutex);
    candidates = opened_files();
  }
  PyRef modules = getattr(import("sys").get(), "modules");
  PyRef values = PyRef::steal(PyDict_Values(modules.get()));
  for (Py_ssize_t i = 0; values && i < PyList_Size(values.get()); ++i) {
    // From the module's dict, not getattr: a module's __getattr__ may import or raise.
    PyObject* module = PyList_GetItem(values.get(), i);
    if (!PyModule_Check(module)) continue;
    PyObject* file = PyDict_GetItemString(PyModule_GetDict(module), "__file__");  // borrowed
    if (file && PyUnicode_Check(file)) candidates.insert(fs::path(py_str(file)).lexically_normal().string());
  }
  if (PyErr_Occurred()) PyErr_Clear();
  const std::vector<std::string> folders = environment_folders();
  std::vector<fs::path> out;
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (c.empty() || c[0] != '/' || is_environment_file(c, folders) || !fs::is_regular_file(c, ec)) continue;
    out.emplace_back(c);
  }
  return out;
}

}  // namespace aotrace::embed
