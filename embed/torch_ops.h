// Private to embed/: the one table that maps torch callables onto IR op builders (DESIGN §3:
// "Torch functions map to ops in one table in embed/, never scattered").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "embed/variables.h"

namespace aotrace::embed {

class Translator;

// One signature of a torch callable: an overload of its aten schema (`aten::var.dim(Tensor self,
// int[1]? dim, bool unbiased=True, bool keepdim=False)`), or a Python function's signature
// (F.softmax). torch_schema.cpp reads them from torch itself.
struct Signature {
  enum class Kind : uint8_t { Positional, PositionalOrKeyword, VarPositional, KeywordOnly, VarKeyword };
  struct Param {
    std::string name;
    std::string type;  // the schema's type as torch prints it ("Optional[List[int]]"); "" untyped
    Kind kind = Kind::PositionalOrKeyword;
    bool required = false;
  };
  std::string text;  // for messages
  std::vector<Param> params;
  // The index of the parameter `name` (`input` and `self` name the same one; "tensor|self":
  // the first of these alternatives it has); -1 when absent.
  int find(const std::string& name) const;
};

// Every signature of one torch callable, in the order torch tries them.
struct OpSignatures {
  std::string name;  // "aten::var", "torch.nn.functional.softmax"
  bool aten = false;  // typed schemas, bound as torch's Python argument parser binds them
  std::vector<Signature> overloads;
  bool knows(const std::string& name) const;  // whether any overload has this parameter
};

// The arguments of a call. As written by the caller: positional, then keyword. Once bound to
// the callable's signature (TorchOp::call does that), `args` holds the positional parameters in
// signature order, null where not given, and `kwargs` the keyword-only ones; `get` then finds an
// argument by its parameter name in the overload that matched, so a builder cannot take torch's
// `unbiased` for its `keepdim`.
struct CallArgs {
  std::vector<VarRef> args;
  std::vector<std::pair<std::string, VarRef>> kwargs;
  const OpSignatures* op = nullptr;  // set by binding
  const Signature* bound = nullptr;  // the overload that accepted the call
  // The argument named `name` (at `position` when the call is not bound); null when absent.
  VarRef get(size_t position, const char* name) const;
  VarRef kw(const char* name) const;  // by name only
};

using OpBuilder = VarRef (*)(Translator&, const CallArgs&);

// How an op's tensor results share memory with its first argument, as torch's views do: an
// in-place update through one is seen by the others (see ops::share_memory).
enum class Aliasing : uint8_t {
  None,         // new tensors
  View,         // always views: x.view, x.permute, x.split(…), x.select: in-place updates
                // through one reach the others (replayed on the new values)
  MaybeView,    // a view or a copy, by strides capture does not track (reshape, flatten) or
                // overlapping (expand, unfold): in-place updates while both live are refused
  IndexView,    // x[index]: a view for ints, slices, None and ..., a copy for tensor indices
  IfUnchanged,  // the input variable itself when nothing changes: x.to(x.dtype), x.float()
};

struct TorchOp {
  std::string name;     // "torch.nn.functional.linear", shown in messages
  OpBuilder build;
  Aliasing aliasing = Aliasing::None;
  // torch's signatures of this callable; null for the few that parse their arguments by hand
  // in torch too (Tensor.to, indexing), whose builders do the same.
  const OpSignatures* signature = nullptr;
  PyObject* callable = nullptr;  // the Python callable (kept alive by the table)
  // Binds the arguments to the signature, builds the op and records which results alias the
  // first argument.
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
