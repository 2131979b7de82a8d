// Private to embed/: the PEP 523 frame-evaluation hook (DESIGN §2). While installed, the first
// frame that runs `code` is reported to `on_entry` with its arguments, then evaluated normally;
// every other frame goes to _PyEval_EvalFrameDefault untouched.
#pragma once

#include <exception>
#include <functional>
#include <vector>

#include "embed/py.h"

namespace aotrace::embed {

struct FrameHookRequest {
  PyObject* code = nullptr;  // the code object to intercept
  // Called once with the frame's arguments (positional and keyword-only parameters, then the
  // *args tuple if any), borrowed. Exceptions are captured and rethrown by ScopedFrameHook.
  std::function<void(const std::vector<PyObject*>& args)> on_entry;
  bool seen = false;
  std::exception_ptr error;
};

class ScopedFrameHook {
 public:
  explicit ScopedFrameHook(FrameHookRequest& request);
  ~ScopedFrameHook();
  ScopedFrameHook(const ScopedFrameHook&) = delete;
  ScopedFrameHook& operator=(const ScopedFrameHook&) = delete;
};

}  // namespace aotrace::embed
