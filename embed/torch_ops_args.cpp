// Argument helpers of the torch op table (see torch_ops_args.h).
#include "embed/torch_ops_args.h"
#include "embed/torch_ops_builders.h"

#include <algorithm>
#include <functional>
#include <map>

namespace aotrace::embed::ops {

bool is_none(const VarRef& v) {
  auto* c = as<ConstVar>(v);
  return !v || (c && c->obj.get() == Py_None);
}

bool is_tensor(const VarRef& v) { return as<TensorVar>(v) != nullptr; }

ValueId tensor(Translator& t, const VarRef& v, const char* what) {
  if (auto* tv = as<TensorVar>(v)) return tv->value;
  user_error(std::string(what) + " expects a tensor, got " + (v ? v->describe() : "nothing"), t.loc());
}

int64_t int_arg(Translator& t, const VarRef& v, const char* what) {
  PyRef o = v ? t.to_python(v) : PyRef();
  if (!o || !PyLong_Check(o.get()))
    user_error(std::string(what) + " expects an int, got " + (v ? v->describe() : "nothing"), t.loc());
  return PyLong_AsLongLong(o.get());
}

double float_arg(Translator& t, const VarRef& v, const char* what) {
  if (v) t.note_float_use(v);
  PyRef o = v ? t.to_python(v) : PyRef();
  if (!o || !(PyLong_Check(o.get()) || PyFloat_Check(o.get())))
    user_error(std::string(what) + " expects a number, got " + (v ? v->describe() : "nothing"), t.loc());
  return PyFloat_AsDouble(o.get());
}

bool bool_arg(Translator& t, const VarRef& v, bool fallback) {
  if (is_none(v)) return fallback;
  return t.truth(v);
}

std::string str_arg(Translator& t, const VarRef& v, const char* what, std::string fallback) {
  if (is_none(v)) return fallback;
  PyRef o = t.to_python(v);
  if (!o || !PyUnicode_Check(o.get()))
    user_error(std::string(what) + " expects a string, got " + v->describe(), t.loc());
  return py_str(o.get());
}

int64_t int_or(Translator& t, const CallArgs& a, size_t position, const char* name, int64_t fallback) {
  VarRef v = a.get(position, name);
  return is_none(v) ? fallback : int_arg(t, v, name);
}

double float_or(Translator& t, const CallArgs& a, size_t position, const char* name, double fallback) {
  VarRef v = a.get(position, name);
  return is_none(v) ? fallback : float_arg(t, v, name);
}

std::optional<DType> dtype_arg(Translator& t, const VarRef& v) {
  if (is_none(v)) return std::nullopt;
  PyRef o = t.to_python(v);
  if (o) {
    if (auto d = ir::parse_dtype(py_str(o.get()))) return d;
    // Python types: float -> f32 (torch's default), int -> i64, bool -> bool.
    if (o.get() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return DType::f32;
    if (o.get() == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::i64;
    if (o.get() == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::b8;
  }
  user_error("unsupported dtype " + v->describe(), t.loc(),
             "use one of float32, float16, bfloat16, float64, int64, int32, bool");
}

std::optional<std::vector<VarRef>> sequence_items(Translator& t, const VarRef& v) {
  if (auto* seq = as<SequenceVar>(v)) return seq->items;
  if (auto* c = as<ConstVar>(v); c && (PyTuple_Check(c->obj.get()) || PyList_Check(c->obj.get()))) {
    std::vector<VarRef> items;
    PyRef fast = check(PySequence_Fast(c->obj.get(), "sequence"), "sequence");
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast.get()); ++i)
      items.push_back(t.constant(PySequence_Fast_GET_ITEM(fast.get(), i)));
    return items;
  }
  return std::nullopt;
}

std::vector<VarRef> shape_items(Translator& t, const CallArgs& a, size_t first, const char* name) {
  VarRef v = a.get(first, name);
  if (auto seq = v ? sequence_items(t, v) : std::nullopt) return *seq;
  if (first < a.args.size()) return {a.args.begin() + static_cast<long>(first), a.args.end()};
  if (v) return {v};
  return {};
}

std::vector<int64_t> ints_arg(Translator& t, const CallArgs& a, size_t first, const char* name,
                              const char* what) {
  std::vector<int64_t> out;
  for (auto& item : shape_items(t, a, first, name)) out.push_back(int_arg(t, item, what));
  return out;
}

std::vector<int64_t> int_tuple(Translator& t, const VarRef& v, size_t n, const char* what) {
  if (auto items = sequence_items(t, v)) {
    std::vector<int64_t> out;
    for (auto& item : *items) out.push_back(int_arg(t, item, what));
    if (out.size() == 1 && n > 1) out.assign(n, out[0]);
    if (out.size() != n)
      user_error(std::string(what) + " expects " + std::to_string(n) + " values, got " +
                     std::to_string(out.size()),
                 t.loc());
    return out;
  }
  return std::vector<int64_t>(n, int_arg(t, v, what));
}

ir::Shape shape_arg(Translator& t, const std::vector<VarRef>& items, const char* what) {
  ir::Shape out;
  for (const auto& item : items) {
    if (auto* s = as<SymIntVar>(item)) out.push_back(s->expr);
    else out.push_back(int_arg(t, item, what));
  }
  return out;
}

int normalise_dim(Translator& t, int64_t dim, int rank, const char* what) {
  const int64_t r = std::max(rank, 1);
  if (dim < -r || dim >= r)
    user_error(std::string(what) + ": dim " + std::to_string(dim) +
                   " is out of range for a tensor of rank " + std::to_string(rank),
               t.loc(), "dims must lie in [-rank, rank)");
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

std::vector<int64_t> dims_arg(Translator& t, const VarRef& v, int rank, const char* what) {
  std::vector<int64_t> axes;
  if (is_none(v)) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  } else if (auto items = sequence_items(t, v)) {
    for (auto& item : *items) axes.push_back(normalise_dim(t, int_arg(t, item, what), rank, what));
    if (items->empty())
      for (int i = 0; i < rank; ++i) axes.push_back(i);  // dim=() reduces everything (torch 1.13)
  } else {
    axes.push_back(normalise_dim(t, int_arg(t, v, what), rank, what));
  }
  if (rank == 0) axes.clear();
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

VarRef int_var(Translator& t, int64_t v) {
  PyRef o = PyRef::steal(PyLong_FromLongLong(v));
  return t.constant(o.get());
}

int64_t static_dim(Translator& t, ValueId x, int axis, const char* what) {
  auto v = type_of(t, x).shape[static_cast<size_t>(axis)].as_constant();
  if (!v) unsupported(t, std::string(what) + " on a dynamic dim", "declare the dim static");
  return *v;
}

const ir::TensorType& type_of(Translator& t, ValueId v) { return t.graph().type(v); }

VarRef wrap_value(ValueId v) { return std::make_shared<TensorVar>(v); }

ValueId node(Translator& t, OpKind op, std::vector<ValueId> operands, ir::Attrs attrs) {
  return t.graph().add(op, std::move(operands), std::move(attrs), t.loc());
}

VarRef add(Translator& t, OpKind op, std::vector<ValueId> operands, ir::Attrs attrs) {
  return wrap_value(node(t, op, std::move(operands), std::move(attrs)));
}

ValueId cast(Translator& t, ValueId v, DType dtype) { return t.graph().cast(v, dtype, t.loc()); }

ValueId constant(Translator& t, double value, DType dtype) {
  return t.graph().constant(value, dtype, t.loc());
}

ValueId scalar(Translator& t, const VarRef& v, DType like) {
  t.note_float_use(v);
  PyRef o = t.to_python(v);
  if (!o || !(PyLong_Check(o.get()) || PyFloat_Check(o.get())))
    user_error("expected a tensor or a Python number, got " + v->describe(), t.loc());
  DType dtype = like;
  if (PyFloat_Check(o.get()) && !ir::is_floating(like)) dtype = DType::f32;
  if (PyLong_Check(o.get()) && !PyBool_Check(o.get()) && like == DType::b8) dtype = DType::i64;
  return constant(t, PyFloat_AsDouble(o.get()), dtype);
}

ValueId tensor_or_scalar(Translator& t, const VarRef& v, DType like, const char* what) {
  if (auto* tv = as<TensorVar>(v)) return tv->value;
  if (!v) user_error(std::string(what) + " is missing an operand", t.loc());
  return scalar(t, v, like);
}

VarRef binary(Translator& t, OpKind op, const VarRef& a, const VarRef& b) {
  auto* ta = as<TensorVar>(a);
  auto* tb = as<TensorVar>(b);
  AOT_CHECK(ta || tb, "binary tensor op without a tensor");
  ValueId x = ta ? ta->value : scalar(t, a, type_of(t, tb->value).dtype);
  ValueId y = tb ? tb->value : scalar(t, b, type_of(t, ta->value).dtype);
  return add(t, op, {x, y});
}

ValueId reshape_to(Translator& t, ValueId x, ir::Shape shape) {
  if (type_of(t, x).shape == shape) return x;
  return node(t, OpKind::Reshape, {x}, ir::Attrs().set("shape", std::move(shape)));
}

ValueId permute_to(Translator& t, ValueId x, std::vector<int64_t> perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  return node(t, OpKind::Permute, {x}, ir::Attrs().set("perm", std::move(perm)));
}

ValueId unsqueeze_at(Translator& t, ValueId x, int dim) {
  ir::Shape s = type_of(t, x).shape;
  s.insert(s.begin() + dim, ir::SymExpr(1));
  return node(t, OpKind::Reshape, {x}, ir::Attrs().set("shape", s));
}

ValueId to_floating(Translator& t, ValueId x) {
  return ir::is_floating(type_of(t, x).dtype) ? x : cast(t, x, DType::f32);
}

ir::Attrs axes_attrs(std::vector<int64_t> axes, bool keepdim) {
  return ir::Attrs().set("axes", std::move(axes)).set("keepdim", int64_t{keepdim});
}

VarRef sequence(std::vector<VarRef> items) {
  return std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::move(items));
}

VarRef named_tuple(std::vector<VarRef> items, std::vector<std::string> fields) {
  auto t = std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, std::move(items));
  t->fields = std::move(fields);
  return t;
}

void share_memory(const VarRef& base, const VarRef& view, std::function<VarRef(Translator&, const VarRef&)> of,
                  std::function<PyRef(Translator&, PyObject*)> of_real) {
  auto* b = as<TensorVar>(base);
  auto* v = as<TensorVar>(view);
  AOT_CHECK(b && v, "share_memory of a non-tensor");
  if (of && of_real && !v->view) {
    VarRef root = base;
    if (VarRef inner = b->view ? b->view->base.lock() : nullptr) {  // a view of a view: of the root
      root = inner;
      auto first = b->view;
      of = [first, then = std::move(of)](Translator& t, const VarRef& r) { return then(t, first->of(t, r)); };
      of_real = [first, then = std::move(of_real)](Translator& t, PyObject* r) -> PyRef {
        PyRef mid = first->of_real(t, r);
        return mid ? then(t, mid.get()) : PyRef();
      };
    }
    v->view = std::make_shared<TensorVar::View>(TensorVar::View{root, std::move(of), std::move(of_real)});
  }
  if (v->aliases == b->aliases && v->aliases) return;
  if (!b->aliases) {
    b->aliases = std::make_shared<AliasSet>();
    b->aliases->members.push_back(base);
  }
  v->aliases = b->aliases;
  v->aliases->members.push_back(view);
}

namespace {

// The live variables other than `target` that share its memory.
std::vector<VarRef> live_aliases(const VarRef& target) {
  std::vector<VarRef> out;
  auto* tv = as<TensorVar>(target);
  if (!tv || !tv->aliases) return out;
  for (const auto& m : tv->aliases->members)
    if (VarRef other = m.lock(); other && other != target) out.push_back(other);
  return out;
}

VarRef view_base(const VarRef& v) {
  auto* tv = as<TensorVar>(v);
  return tv && tv->view ? tv->view->base.lock() : nullptr;
}

// The tensor `v` is a view of, through views all the way (v itself when it is no view).
VarRef view_root(const VarRef& v) {
  VarRef r = v;
  while (VarRef b = view_base(r)) r = b;
  return r;
}

// Whether an in-place update of `target` can be carried to every live tensor sharing its
// memory: all are views, taken by replayable view ops, of one root.
bool updates_reach_aliases(const VarRef& target) {
  const VarRef root = view_root(target);
  for (const VarRef& o : live_aliases(target))
    if (view_root(o) != root) return false;
  return true;
}

void refuse_outside(Translator& t, const VarRef& target, const std::string& what, const std::string& out_of_place) {
  auto* tv = as<TensorVar>(target);
  // An input of the entry may change: the runtime writes its new value back to the caller.
  const bool carried = tv && t.resumed() &&
                       std::any_of(t.graph().inputs.begin(), t.graph().inputs.end(),
                                   [&](const auto& in) { return in.value == tv->value; });
  if (tv && !tv->source.empty() && !t.is_entry_input(target) && carried)
    t.graph_break("in-place mutation",
                  "in-place " + what + " on " + tv->source.str() +
                      ", a tensor carried over from before a graph break (explain resumes after "
                      "breaks; its update would not reach the code before the break)",
                  "fix the earlier graph break first");
  if (tv && !tv->source.empty() && !t.is_entry_input(target))
    t.graph_break("in-place mutation",
                  "in-place " + what + " on " + tv->source.str() +
                      ", a tensor from outside the traced function (a parameter, buffer or global): a "
                      "bundle's weights are constant",
                  "use the out-of-place form (" +
                      (out_of_place.empty() ? "x = x.relu() for x.relu_()" : out_of_place) +
                      ") and return the new value instead of keeping it in the model");
}

// `base` with the elements its view `v` shows replaced by `updated` (the view's new value). The
// view taken for real of base's element positions says which element of the view each base
// element is, if any: a gather from the view, O(size of base), with that map as a constant.
ValueId write_through(Translator& t, const VarRef& base, const TensorVar::View& v, ValueId updated) {
  const ir::TensorType type = type_of(t, as<TensorVar>(base)->value);
  const auto n = type.numel().as_constant(), m = type_of(t, updated).numel().as_constant();
  if (!n || !m)
    t.graph_break("in-place mutation", "an in-place update through a view of a tensor with dynamic dims",
                  "clone the view before changing it (v = x[1:3].clone())");
  if (*m == 0) return as<TensorVar>(base)->value;
  PyRef torch = import("torch");
  PyRef shape = PyRef::steal(PyTuple_New(type.rank()));
  for (int d = 0; d < type.rank(); ++d)
    PyTuple_SetItem(shape.get(), d, PyLong_FromLongLong(type.shape[static_cast<size_t>(d)].constant()));
  PyRef positions = check(PyObject_CallFunction(getattr(torch.get(), "arange").get(), "L", static_cast<long long>(*n)),
                          "torch.arange");
  positions = check(PyObject_CallMethod(positions.get(), "reshape", "O", shape.get()), "reshape");
  PyRef seen = v.of_real(t, positions.get());
  if (!seen)
    t.graph_break("in-place mutation", "an in-place update through a view capture cannot take of the base's positions",
                  "clone the view before changing it (v = x[1:3].clone())");
  // inverse[p] = the view element that shows base element p; m where none does.
  static PyObject* const mapping = check(  // made once, kept for the process
      PyRun_String("lambda seen, n, m: __import__('torch').full((n,), m, dtype=__import__('torch').int64)"
                   ".index_put_((seen.reshape(-1),), __import__('torch').arange(m))",
                   Py_eval_input, PyEval_GetBuiltins(), nullptr),
      "inverse map").release();
  PyRef inverse = check(PyObject_CallFunction(mapping, "OLL", seen.get(), static_cast<long long>(*n),
                                              static_cast<long long>(*m)),
                        "inverse map");
  PyRef covered = check(PyObject_CallMethod(inverse.get(), "lt", "L", static_cast<long long>(*m)), "lt");
  PyRef index = check(PyObject_CallMethod(inverse.get(), "clamp", "OL", Py_None, static_cast<long long>(*m - 1)), "clamp");
  ValueId flat = reshape_to(t, as<TensorVar>(base)->value, ir::Shape{*n});
  ValueId gathered = node(t, OpKind::IndexSelect,
                          {reshape_to(t, updated, ir::Shape{*m}), as<TensorVar>(t.wrap(index.get(), Source()))->value},
                          ir::Attrs().set("axis", int64_t{0}));
  flat = node(t, OpKind::Where, {as<TensorVar>(t.wrap(covered.get(), Source()))->value, gathered, flat});
  return reshape_to(t, flat, type.shape);
}

// The update of `target` to `updated`, carried to the tensors that share its memory: written
// through each view into its base up to the root, then every other live alias taken again of
// the root's new value.
void update_in_place(Translator& t, const VarRef& target, ValueId updated) {
  const std::vector<VarRef> others = live_aliases(target);
  std::map<Var*, ValueId> now;  // the new value of each alias computed so far
  VarRef v = target;
  now[v.get()] = updated;
  if (!others.empty()) {
    while (VarRef base = view_base(v)) {
      updated = write_through(t, base, *as<TensorVar>(v)->view, updated);
      v = base;
      now[v.get()] = updated;
    }
  }
  std::function<ValueId(const VarRef&)> value_of = [&](const VarRef& a) -> ValueId {
    if (auto it = now.find(a.get()); it != now.end()) return it->second;
    VarRef base = view_base(a);
    AOT_CHECK(base, "an alias outside the view tree of an in-place update");
    const ValueId b = value_of(base);
    VarRef again = as<TensorVar>(a)->view->of(t, wrap_value(b));
    return now[a.get()] = as<TensorVar>(again)->value;
  };
  for (const VarRef& a : others) value_of(a);
  for (const VarRef& a : others) as<TensorVar>(a)->value = now.at(a.get());
  as<TensorVar>(target)->value = now.at(target.get());
}

}  // namespace

void refuse_inplace_on_outside(Translator& t, const VarRef& target, const std::string& what,
                               const std::string& out_of_place) {
  refuse_outside(t, target, what, out_of_place);
  // A view and its base share memory: the update must reach every one of them. Views taken by
  // view ops that always give views are replayed (update_in_place); the others are refused
  // rather than let an alias go stale.
  if (!updates_reach_aliases(target))
    t.graph_break("in-place mutation",
                  "in-place " + what + " on a tensor that shares memory with another live tensor that capture "
                  "cannot update with it (a reshape or flatten that may have copied, or an expand)",
                  "clone the view before changing it (v = x.reshape(-1).clone()), or assign into the base "
                  "(x[1:3] = v) instead of updating a view of it");
  const VarRef root = view_root(target);
  if (root != target && !live_aliases(target).empty()) refuse_outside(t, root, what + " through a view", out_of_place);
}

VarRef inplace(Translator& t, const VarRef& target, const VarRef& result, const char* what) {
  auto* tv = as<TensorVar>(target);
  auto* rv = as<TensorVar>(result);
  if (!tv || !rv) return result;
  refuse_inplace_on_outside(t, target, what, "");
  update_in_place(t, target, as<TensorVar>(inplace_value(t, target, result, what))->value);
  return target;
}

VarRef inplace_value(Translator& t, const VarRef& target, const VarRef& result, const char* what) {
  auto* tv = as<TensorVar>(target);
  auto* rv = as<TensorVar>(result);
  AOT_CHECK(tv && rv, "inplace_value of a non-tensor");
  // torch writes the result into the target: it keeps the target's dtype and shape. A float
  // result cannot go into an integer or bool tensor, nor a non-bool one into a bool tensor.
  const ir::TensorType& to = type_of(t, tv->value);
  const ir::TensorType& from = type_of(t, rv->value);
  if (from.shape != to.shape)
    user_error(std::string("in-place ") + what + ": the result's shape " + ir::shape_str(from.shape) +
                   " does not match the target's " + ir::shape_str(to.shape) + " (torch raises here too)",
               t.loc(), "use the out-of-place form, whose result may broadcast");
  const bool narrowing = (ir::is_floating(from.dtype) && !ir::is_floating(to.dtype)) ||
                         (to.dtype == DType::b8 && from.dtype != DType::b8);
  if (narrowing)
    user_error(std::string("in-place ") + what + ": result type " + std::string(ir::dtype_torch_name(from.dtype)) +
                   " can't be cast to the target's dtype " + std::string(ir::dtype_torch_name(to.dtype)) +
                   " (torch raises here too)",
               t.loc(), "cast the target first, or use the out-of-place form");
  return wrap_value(cast(t, rv->value, to.dtype));
}

void value_read(Translator& t, const char* what) {
  t.graph_break("tensor value read",
                std::string(what) + " reads a tensor's value, which is unknown at compile time",
                "keep the computation in tensors (e.g. torch.where instead of branching on "
                "x.item()), or move it out of the traced function");
}

void unsupported(Translator& t, const std::string& what, const std::string& hint) {
  t.graph_break("torch callable with no op mapping", what + " is not supported yet", hint);
}

}  // namespace aotrace::embed::ops
