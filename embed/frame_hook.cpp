// The PEP 523 hook. The only file that needs CPython's internal frame layout.
#define Py_BUILD_CORE 1
#include "embed/frame_hook.h"

#include <internal/pycore_frame.h>

namespace aotrace::embed {

namespace {

FrameHookRequest* active_request = nullptr;

PyObject* eval_frame(PyThreadState* tstate, _PyInterpreterFrame* frame, int throwflag) {
  FrameHookRequest* req = active_request;
  if (req && !req->seen && reinterpret_cast<PyObject*>(frame->f_code) == req->code) {
    req->seen = true;
    PyCodeObject* code = frame->f_code;
    int n = code->co_argcount + code->co_kwonlyargcount;
    if (code->co_flags & CO_VARARGS) ++n;
    if (code->co_flags & CO_VARKEYWORDS) ++n;
    std::vector<PyObject*> args(frame->localsplus, frame->localsplus + n);
    // C++ exceptions must not unwind through the interpreter: keep them for the caller.
    try {
      req->on_entry(args);
    } catch (...) {
      req->error = std::current_exception();
    }
  }
  return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

}  // namespace

ScopedFrameHook::ScopedFrameHook(FrameHookRequest& request) {
  AOT_CHECK(active_request == nullptr, "frame hook installed twice");
  active_request = &request;
  _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), eval_frame);
}

ScopedFrameHook::~ScopedFrameHook() {
  _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), _PyEval_EvalFrameDefault);
  active_request = nullptr;
}

}  // namespace aotrace::embed
