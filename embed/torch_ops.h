// Private to embed/: the one table that maps torch callables onto IR op builders (DESIGN §3:
// "Torch functions map to ops in one table in embed/, never scattered").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "embed/variables.h"

namespace aotrace::embed {

class Translator;

// The arguments of a call as written: positional, then keyword.
struct CallArgs {
  std::vector<VarRef> args;
  std::vector<std::pair<std::string, VarRef>> kwargs;
  // The argument at `position` or named `name`; null when absent.
  VarRef get(size_t position, const char* name) const;
  VarRef kw(const char* name) const;  // keyword-only
};

using OpBuilder = VarRef (*)(Translator&, const CallArgs&);

// How an op's tensor results share memory with its first argument, as torch's views do: an
// in-place update through one is seen by the others (see ops::share_memory).
enum class Aliasing : uint8_t {
  None,         // new tensors
  View,         // views: x.view, x[1:3], x.T, x.split(…)
  IfUnchanged,  // the input variable itself when nothing changes: x.to(x.dtype), x.float()
};

struct TorchOp {
  std::string name;     // "torch.nn.functional.linear", shown in messages
  OpBuilder build;
  Aliasing aliasing = Aliasing::None;
  // Builds the op and records which results alias the first argument.
  VarRef call(Translator&, const CallArgs&) const;
};

// Resolves the table's Python paths after torch is imported (idempotent).
void init_torch_ops();
// The op for a torch callable (torch.relu, F.linear, torch.Tensor.view, …), by identity.
const TorchOp* torch_function(PyObject* callable);
// The op for a Tensor method name ("view", "sum", …); null when unmapped.
const TorchOp* tensor_method(const std::string& name);
// x.shape, x.dtype, x.T, …; null when the attribute is unknown.
VarRef tensor_attribute(Translator&, const VarRef& tensor, const std::string& name);
// Python operators with a tensor operand: "+", "-", "*", "/", "@", "**", "neg", comparisons.
VarRef tensor_operator(Translator&, const std::string& op, const VarRef& a, const VarRef& b);

}  // namespace aotrace::embed
