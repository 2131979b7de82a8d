// Private to embed/: the argument helpers shared by the builders of the torch op table
// (torch_ops*.cpp): reading call arguments, normalising dims, adding nodes, torch's scalar
// promotion. Builders are declared in torch_ops_builders.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "embed/torch_ops.h"
#include "embed/translator.h"

namespace aotrace::embed::ops {

using ir::DType;
using ir::OpKind;
using ir::ValueId;

bool is_none(const VarRef& v);
ValueId tensor(Translator& t, const VarRef& v, const char* what);
bool is_tensor(const VarRef& v);
int64_t int_arg(Translator& t, const VarRef& v, const char* what);
double float_arg(Translator& t, const VarRef& v, const char* what);
bool bool_arg(Translator& t, const VarRef& v, bool fallback);
std::string str_arg(Translator& t, const VarRef& v, const char* what, std::string fallback);
// The value at `position` / `name` as an int, or `fallback` when absent or None.
int64_t int_or(Translator& t, const CallArgs& a, size_t position, const char* name, int64_t fallback);
double float_or(Translator& t, const CallArgs& a, size_t position, const char* name, double fallback);
// A torch.dtype argument; nullopt when absent or None.
std::optional<DType> dtype_arg(Translator& t, const VarRef& v);
// The items of a sequence variable or constant tuple/list; nullopt when `v` is not one.
std::optional<std::vector<VarRef>> sequence_items(Translator& t, const VarRef& v);
// Ints given as one sequence argument or as varargs starting at `first`.
std::vector<int64_t> ints_arg(Translator& t, const CallArgs& a, size_t first, const char* name,
                              const char* what);
// An int or a sequence of ints; a single int is repeated `n` times.
std::vector<int64_t> int_tuple(Translator& t, const VarRef& v, size_t n, const char* what);
// A shape given as ints or shape values (x.size(0)), as SymExprs; -1 kept as -1.
ir::Shape shape_arg(Translator& t, const std::vector<VarRef>& items, const char* what);
std::vector<VarRef> shape_items(Translator& t, const CallArgs& a, size_t first, const char* name);

// The call bound to the first overload of torch's schema `aten_name` ("aten::var") that accepts
// it, as torch's Python argument parser binds it: every argument given, by its schema name
// (kw("self"), kw("dim"), ...); absent ones take their defaults. torch_schema.cpp.
CallArgs bind_schema(Translator& t, const std::string& aten_name, const CallArgs& a);
// torch's signatures of the callable `name` of the op table (a Python path, or a Tensor method
// name), read from torch: aten schemas, or the Python signature. Null for the few callables
// torch parses by hand (Tensor.to, indexing), whose builders parse them the same way.
const OpSignatures* signature_for(const std::string& name, PyObject* callable);
// `a` bound to `op`'s signatures (see CallArgs). A call no overload accepts is the user's error,
// with torch's own message when torch rejects it too.
CallArgs bind_call(Translator& t, const TorchOp& op, const CallArgs& a);
// Calls `fn` for real with the arguments of `a`, each made a Python value by `convert`. Null
// when `convert` gives null for one (no Python error then) or when the call raises (its error
// pending).
PyRef call_for_real(PyObject* fn, const CallArgs& a, const std::function<PyRef(const VarRef&)>& convert);
// The exception torch raises for `callable`(a) (as written), asked on meta tensors of the
// arguments' dtypes and shapes; null when torch accepts the call or cannot be asked.
PyRef torch_exception(Translator& t, PyObject* callable, const CallArgs& a);

int normalise_dim(Translator& t, int64_t dim, int rank, const char* what);
std::vector<int64_t> dims_arg(Translator& t, const VarRef& v, int rank, const char* what);

// A tuple of the results (split, chunk, attention's (output, weights)).
VarRef sequence(std::vector<VarRef> items);
// torch.return_types: a tuple whose items are also attributes (max(dim).values, .indices).
VarRef named_tuple(std::vector<VarRef> items, std::vector<std::string> fields);

const ir::TensorType& type_of(Translator& t, ValueId v);
VarRef int_var(Translator& t, int64_t v);  // a Python int as a constant variable
// A static dim of `x`, or a graph break naming `what`.
int64_t static_dim(Translator& t, ValueId x, int axis, const char* what);
VarRef wrap_value(ValueId v);
ValueId node(Translator& t, OpKind op, std::vector<ValueId> operands, ir::Attrs attrs = {});
VarRef add(Translator& t, OpKind op, std::vector<ValueId> operands, ir::Attrs attrs = {});
ValueId cast(Translator& t, ValueId v, DType dtype);  // no node when already `dtype`
ValueId constant(Translator& t, double value, DType dtype);
// A Python number as a rank-0 constant with torch's scalar promotion against `like`.
ValueId scalar(Translator& t, const VarRef& v, DType like);
// A tensor or a Python number: numbers promote against `like`.
ValueId tensor_or_scalar(Translator& t, const VarRef& v, DType like, const char* what);
VarRef binary(Translator& t, OpKind op, const VarRef& a, const VarRef& b);
ValueId reshape_to(Translator& t, ValueId x, ir::Shape shape);
ValueId permute_to(Translator& t, ValueId x, std::vector<int64_t> perm);
ValueId unsqueeze_at(Translator& t, ValueId x, int dim);
// x cast to the floating dtype torch computes in for exp/log/... (integers: f32).
ValueId to_floating(Translator& t, ValueId x);
ir::Attrs axes_attrs(std::vector<int64_t> axes, bool keepdim);

// In-place variants (relu_, add_, inplace=True): an intermediate tensor's variable is updated
// to the result cast to its dtype (a result of another shape or a narrowing dtype is an error,
// as in torch), so its aliases see it; a tensor from outside the traced function (an input or
// a weight) is a graph break.
VarRef inplace(Translator& t, const VarRef& target, const VarRef& result, const char* what);
// The value an in-place update would write into `target` (`result` in its dtype, shape checked),
// as a new variable, leaving `target` alone.
VarRef inplace_value(Translator& t, const VarRef& target, const VarRef& result, const char* what);
// Records that `view` shares `base`'s memory (a torch view, or the same tensor returned);
// `of` takes the same view of another tensor of base's shape (null: not replayable).
void share_memory(const VarRef& base, const VarRef& view,
                  std::function<VarRef(Translator&, const VarRef&)> of = {},
                  std::function<PyRef(Translator&, PyObject*)> of_real = {});
// The graph break for an in-place `what` on an input or weight, or on a tensor that shares its
// memory with another live variable (before building anything);
// `out_of_place` shows the fix ("x = x.add(…)").
void refuse_inplace_on_outside(Translator& t, const VarRef& target, const std::string& what,
                               const std::string& out_of_place);

[[noreturn]] void value_read(Translator& t, const char* what);
[[noreturn]] void unsupported(Translator& t, const std::string& what, const std::string& hint = {});

}  // namespace aotrace::embed::ops
