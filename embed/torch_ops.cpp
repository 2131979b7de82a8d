// The torch op table: every torch callable, Tensor method and operator that capture maps onto
// the IR, in one list (`table()` at the bottom). Builders turn call arguments into graph nodes;
// composites (linear, softmax, mean) are IR ops decomposed by lowering, not here.
#include "embed/torch_ops.h"

#include <map>
#include <optional>

#include "embed/translator.h"

namespace aotrace::embed {

using ir::OpKind;

VarRef CallArgs::get(size_t position, const char* name) const {
  if (position < args.size()) return args[position];
  return kw(name);
}

VarRef CallArgs::kw(const char* name) const {
  for (const auto& [k, v] : kwargs)
    if (k == name) return v;
  return nullptr;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Argument helpers

bool is_none(const VarRef& v) {
  auto* c = as<ConstVar>(v);
  return !v || (c && c->obj.get() == Py_None);
}

ir::ValueId tensor(Translator& t, const VarRef& v, const char* what) {
  if (auto* tv = as<TensorVar>(v)) return tv->value;
  user_error(std::string(what) + " expects a tensor, got " + (v ? v->describe() : "nothing"),
             t.loc());
}

int64_t int_arg(Translator& t, const VarRef& v, const char* what) {
  PyRef o = v ? t.to_python(v) : PyRef();
  if (!o || !PyLong_Check(o.get()))
    user_error(std::string(what) + " expects an int, got " + (v ? v->describe() : "nothing"), t.loc());
  return PyLong_AsLongLong(o.get());
}

// The items of a sequence given as a SequenceVar or as a constant tuple/list; null when `v` is
// not a sequence.
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

// Ints given either as one sequence argument or as varargs starting at `first`.
std::vector<int64_t> ints_arg(Translator& t, const CallArgs& a, size_t first, const char* name,
                              const char* what) {
  std::vector<VarRef> items;
  VarRef v = a.get(first, name);
  if (auto seq = v ? sequence_items(t, v) : std::nullopt) items = *seq;
  else if (first < a.args.size()) items.assign(a.args.begin() + static_cast<long>(first), a.args.end());
  else if (v) items = {v};
  std::vector<int64_t> out;
  for (auto& item : items) out.push_back(int_arg(t, item, what));
  return out;
}

int normalise_dim(Translator& t, int64_t dim, int rank, const char* what) {
  const int64_t r = std::max(rank, 1);
  if (dim < -r || dim >= r)
    user_error(std::string(what) + ": dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
                   std::to_string(rank),
               t.loc(), "dims must lie in [-rank, rank)");
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

const ir::TensorType& type_of(Translator& t, ir::ValueId v) { return t.graph().type(v); }

VarRef wrap_value(ir::ValueId v) { return std::make_shared<TensorVar>(v); }

VarRef add(Translator& t, OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs = {}) {
  return wrap_value(t.graph().add(op, std::move(operands), std::move(attrs), t.loc()));
}

// A Python number (or shape value) as a rank-0 constant with torch's scalar promotion against
// a tensor of dtype `like`.
ir::ValueId scalar(Translator& t, const VarRef& v, ir::DType like) {
  PyRef o = t.to_python(v);
  if (!o || !(PyLong_Check(o.get()) || PyFloat_Check(o.get())))
    user_error("expected a tensor or a Python number, got " + v->describe(), t.loc());
  ir::DType dtype = like;
  if (PyFloat_Check(o.get()) && !ir::is_floating(like)) dtype = ir::DType::f32;
  if (PyLong_Check(o.get()) && !PyBool_Check(o.get()) && like == ir::DType::b8) dtype = ir::DType::i64;
  return t.graph().constant(PyFloat_AsDouble(o.get()), dtype, t.loc());
}

VarRef binary(Translator& t, OpKind op, const VarRef& a, const VarRef& b) {
  auto* ta = as<TensorVar>(a);
  auto* tb = as<TensorVar>(b);
  AOT_CHECK(ta || tb, "binary tensor op without a tensor");
  ir::ValueId x = ta ? ta->value : scalar(t, a, type_of(t, tb->value).dtype);
  ir::ValueId y = tb ? tb->value : scalar(t, b, type_of(t, ta->value).dtype);
  return add(t, op, {x, y});
}

[[noreturn]] void value_read(Translator& t, const char* what) {
  t.graph_break("tensor value read", std::string(what) +
                                         " reads a tensor's value, which is unknown at compile time",
                "keep the computation in tensors (e.g. torch.where instead of branching on "
                "x.item()), or move it out of the traced function");
}

// ---------------------------------------------------------------------------------------------
// Builders

template <OpKind K>
VarRef unary_op(Translator& t, const CallArgs& a) {
  return add(t, K, {tensor(t, a.get(0, "input"), std::string(ir::op_name(K)).c_str())});
}

template <OpKind K>
VarRef binary_op(Translator& t, const CallArgs& a) {
  VarRef x = a.get(0, "input"), y = a.get(1, "other");
  if (!x || !y) user_error(std::string(ir::op_name(K)) + " expects two operands", t.loc());
  VarRef r = binary(t, K, x, y);
  if (VarRef alpha = a.kw("alpha"); alpha && !is_none(alpha))
    user_error("the alpha= argument is not supported yet", t.loc(), "write x + alpha * y");
  return r;
}

VarRef matmul(Translator& t, const CallArgs& a) {
  return add(t, OpKind::Matmul, {tensor(t, a.get(0, "input"), "matmul"), tensor(t, a.get(1, "other"), "matmul")});
}

VarRef linear(Translator& t, const CallArgs& a) {
  std::vector<ir::ValueId> ops = {tensor(t, a.get(0, "input"), "linear"),
                                  tensor(t, a.get(1, "weight"), "linear")};
  if (VarRef b = a.get(2, "bias"); !is_none(b)) ops.push_back(tensor(t, b, "linear"));
  return add(t, OpKind::Linear, std::move(ops));
}

VarRef reshape(Translator& t, const CallArgs& a) {
  ir::ValueId x = tensor(t, a.get(0, "input"), "reshape");
  std::vector<int64_t> shape = ints_arg(t, a, 1, "shape", "reshape");
  auto dims = type_of(t, x).static_shape();
  if (!dims) user_error("reshape of a tensor with dynamic dims is not supported yet", t.loc());
  int64_t numel = 1, known = 1, infer = -1;
  for (int64_t d : *dims) numel *= d;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) user_error("reshape: only one dimension can be -1", t.loc());
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      user_error("reshape: invalid size " + std::to_string(shape[i]), t.loc());
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      user_error("reshape: shape " + ir::shape_str(ir::Shape(shape.begin(), shape.end())) +
                     " is invalid for a tensor of " + std::to_string(numel) + " elements",
                 t.loc());
    shape[static_cast<size_t>(infer)] = numel / known;
  }
  ir::Shape s(shape.begin(), shape.end());
  return add(t, OpKind::Reshape, {x}, ir::Attrs().set("shape", s));
}

VarRef flatten(Translator& t, const CallArgs& a) {
  ir::ValueId x = tensor(t, a.get(0, "input"), "flatten");
  const auto& type = type_of(t, x);
  const int rank = type.rank();
  VarRef sv = a.get(1, "start_dim"), ev = a.get(2, "end_dim");
  int start = normalise_dim(t, sv ? int_arg(t, sv, "flatten") : 0, rank, "flatten");
  int end = normalise_dim(t, ev ? int_arg(t, ev, "flatten") : -1, rank, "flatten");
  if (rank == 0) return add(t, OpKind::Reshape, {x}, ir::Attrs().set("shape", ir::Shape{1}));
  ir::Shape s;
  for (int i = 0; i < start; ++i) s.push_back(type.shape[static_cast<size_t>(i)]);
  ir::SymExpr merged(1);
  for (int i = start; i <= end; ++i) merged = merged * type.shape[static_cast<size_t>(i)];
  s.push_back(merged);
  for (int i = end + 1; i < rank; ++i) s.push_back(type.shape[static_cast<size_t>(i)]);
  return add(t, OpKind::Reshape, {x}, ir::Attrs().set("shape", s));
}

VarRef permute(Translator& t, const CallArgs& a) {
  ir::ValueId x = tensor(t, a.get(0, "input"), "permute");
  const int rank = type_of(t, x).rank();
  std::vector<int64_t> perm = ints_arg(t, a, 1, "dims", "permute");
  for (auto& p : perm) p = normalise_dim(t, p, rank, "permute");
  return add(t, OpKind::Permute, {x}, ir::Attrs().set("perm", perm));
}

VarRef transpose(Translator& t, const CallArgs& a) {
  ir::ValueId x = tensor(t, a.get(0, "input"), "transpose");
  const int rank = type_of(t, x).rank();
  int d0 = normalise_dim(t, int_arg(t, a.get(1, "dim0"), "transpose"), rank, "transpose");
  int d1 = normalise_dim(t, int_arg(t, a.get(2, "dim1"), "transpose"), rank, "transpose");
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
  return add(t, OpKind::Permute, {x}, ir::Attrs().set("perm", perm));
}

VarRef transpose_2d(Translator& t, const CallArgs& a) {
  ir::ValueId x = tensor(t, a.get(0, "input"), "t");
  const int rank = type_of(t, x).rank();
  if (rank > 2) user_error("t() expects a tensor of rank <= 2, got rank " + std::to_string(rank), t.loc());
  if (rank < 2) return wrap_value(x);
  return add(t, OpKind::Permute, {x}, ir::Attrs().set("perm", std::vector<int64_t>{1, 0}));
}

// sum/mean: dim may be None (all), an int, or a sequence; keepdim.
template <OpKind K>
VarRef reduce(Translator& t, const CallArgs& a) {
  const char* what = K == OpKind::ReduceSum ? "sum" : "mean";
  ir::ValueId x = tensor(t, a.get(0, "input"), what);
  const int rank = type_of(t, x).rank();
  VarRef dim = a.get(1, "dim");
  if (VarRef d = a.kw("dtype"); d && !is_none(d))
    user_error(std::string(what) + "(dtype=…) is not supported yet", t.loc());
  std::vector<int64_t> axes;
  if (is_none(dim)) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  } else if (auto items = sequence_items(t, dim)) {
    for (auto& item : *items) axes.push_back(normalise_dim(t, int_arg(t, item, what), rank, what));
  } else {
    axes.push_back(normalise_dim(t, int_arg(t, dim, what), rank, what));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  VarRef kd = a.get(2, "keepdim");
  int64_t keepdim = kd ? (t.truth(kd) ? 1 : 0) : 0;
  return add(t, K == OpKind::ReduceSum ? OpKind::ReduceSum : OpKind::Mean, {x},
             ir::Attrs().set("axes", axes).set("keepdim", keepdim));
}

template <OpKind K>
VarRef softmax(Translator& t, const CallArgs& a) {
  const char* what = K == OpKind::Softmax ? "softmax" : "log_softmax";
  ir::ValueId x = tensor(t, a.get(0, "input"), what);
  VarRef dim = a.get(1, "dim");
  if (is_none(dim))
    user_error(std::string(what) + " without dim= is ambiguous", t.loc(), "pass dim= explicitly");
  if (VarRef d = a.kw("dtype"); d && !is_none(d))
    user_error(std::string(what) + "(dtype=…) is not supported yet", t.loc());
  int axis = normalise_dim(t, int_arg(t, dim, what), type_of(t, x).rank(), what);
  return add(t, K, {x}, ir::Attrs().set("axis", static_cast<int64_t>(axis)));
}

VarRef identity(Translator& t, const CallArgs& a) {
  tensor(t, a.get(0, "input"), "this op");
  return a.get(0, "input");
}

VarRef dropout(Translator& t, const CallArgs& a) {
  VarRef training = a.get(2, "training");
  if (training && t.truth(training))
    t.graph_break("unsupported Python", "dropout in training mode",
                  "aotrace traces models in eval mode; call model.eval()");
  return a.get(0, "input");
}

VarRef size(Translator& t, const CallArgs& a) {
  VarRef shape = tensor_attribute(t, a.get(0, "input"), "shape");
  VarRef dim = a.get(1, "dim");
  if (is_none(dim)) return shape;
  const int rank = static_cast<int>(as<SequenceVar>(shape)->items.size());
  return as<SequenceVar>(shape)->items[static_cast<size_t>(normalise_dim(t, int_arg(t, dim, "size"), rank, "size"))];
}

VarRef dim(Translator& t, const CallArgs& a) {
  return tensor_attribute(t, a.get(0, "input"), "ndim");
}

VarRef item(Translator& t, const CallArgs&) { value_read(t, ".item()"); }
VarRef tolist(Translator& t, const CallArgs&) { value_read(t, ".tolist()"); }
VarRef numpy(Translator& t, const CallArgs&) { value_read(t, ".numpy()"); }

// ---------------------------------------------------------------------------------------------
// The table: Python paths of functions, and Tensor method names, per builder.
struct Entry {
  std::vector<const char*> functions;  // "torch.relu", "torch.nn.functional.relu"
  std::vector<const char*> methods;    // "relu" (Tensor.relu, also found as torch.Tensor.relu)
  OpBuilder build;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      {{"torch.matmul", "torch.mm", "torch.bmm"}, {"matmul", "mm", "bmm", "__matmul__"}, matmul},
      {{"torch.nn.functional.linear"}, {}, linear},
      {{"torch.add"}, {"add", "__add__"}, binary_op<OpKind::Add>},
      {{"torch.sub", "torch.subtract"}, {"sub", "__sub__"}, binary_op<OpKind::Sub>},
      {{"torch.mul", "torch.multiply"}, {"mul", "__mul__"}, binary_op<OpKind::Mul>},
      {{"torch.div", "torch.true_divide"}, {"div", "__truediv__"}, binary_op<OpKind::Div>},
      {{"torch.pow"}, {"pow", "__pow__"}, binary_op<OpKind::Pow>},
      {{"torch.maximum"}, {"maximum"}, binary_op<OpKind::Maximum>},
      {{"torch.minimum"}, {"minimum"}, binary_op<OpKind::Minimum>},
      {{"torch.relu", "torch.nn.functional.relu"}, {"relu"}, unary_op<OpKind::Relu>},
      {{"torch.tanh", "torch.nn.functional.tanh"}, {"tanh"}, unary_op<OpKind::Tanh>},
      {{"torch.sigmoid", "torch.nn.functional.sigmoid"}, {"sigmoid"}, unary_op<OpKind::Sigmoid>},
      {{"torch.exp"}, {"exp"}, unary_op<OpKind::Exp>},
      {{"torch.log"}, {"log"}, unary_op<OpKind::Log>},
      {{"torch.neg", "torch.negative"}, {"neg", "negative", "__neg__"}, unary_op<OpKind::Neg>},
      {{"torch.sqrt"}, {"sqrt"}, unary_op<OpKind::Sqrt>},
      {{"torch.abs"}, {"abs"}, unary_op<OpKind::Abs>},
      {{"torch.reshape"}, {"reshape", "view"}, reshape},
      {{"torch.flatten"}, {"flatten"}, flatten},
      {{"torch.permute"}, {"permute"}, permute},
      {{"torch.transpose"}, {"transpose"}, transpose},
      {{"torch.t"}, {"t"}, transpose_2d},
      {{"torch.sum"}, {"sum"}, reduce<OpKind::ReduceSum>},
      {{"torch.mean"}, {"mean"}, reduce<OpKind::Mean>},
      {{"torch.softmax", "torch.nn.functional.softmax"}, {"softmax"}, softmax<OpKind::Softmax>},
      {{"torch.log_softmax", "torch.nn.functional.log_softmax"}, {"log_softmax"}, softmax<OpKind::LogSoftmax>},
      {{"torch.nn.functional.dropout"}, {}, dropout},
      {{}, {"contiguous", "detach"}, identity},
      {{}, {"size"}, size},
      {{}, {"dim"}, dim},
      {{}, {"item"}, item},
      {{}, {"tolist"}, tolist},
      {{}, {"numpy"}, numpy},
  };
  return t;
}

struct Resolved {
  std::map<PyObject*, TorchOp> by_object;
  std::map<std::string, TorchOp> by_method;
  std::vector<PyRef> keep;
};

Resolved& resolved() {
  static Resolved r;
  return r;
}

PyRef resolve_path(const std::string& path) {
  // "torch.nn.functional.relu": import the longest importable prefix, then getattr the rest.
  size_t dot = path.rfind('.');
  while (dot != std::string::npos) {
    PyObject* m = PyImport_ImportModule(path.substr(0, dot).c_str());
    if (m) {
      PyRef obj = PyRef::steal(m);
      size_t start = dot + 1;
      while (obj && start <= path.size()) {
        size_t next = path.find('.', start);
        std::string part = path.substr(start, next == std::string::npos ? std::string::npos : next - start);
        PyObject* a = PyObject_GetAttrString(obj.get(), part.c_str());
        if (!a) {
          PyErr_Clear();
          return {};
        }
        obj = PyRef::steal(a);
        if (next == std::string::npos) break;
        start = next + 1;
      }
      return obj;
    }
    PyErr_Clear();
    dot = path.rfind('.', dot - 1);
  }
  return {};
}

}  // namespace

void init_torch_ops() {
  Resolved& r = resolved();
  if (!r.by_method.empty() || !r.by_object.empty()) return;
  PyRef tensor_type = getattr(import("torch").get(), "Tensor");
  for (const Entry& e : table()) {
    for (const char* f : e.functions) {
      PyRef obj = resolve_path(f);
      if (!obj) continue;  // not in this torch version
      r.by_object.emplace(obj.get(), TorchOp{f, e.build});
      r.keep.push_back(obj);
    }
    for (const char* m : e.methods) {
      r.by_method.emplace(m, TorchOp{std::string("Tensor.") + m, e.build});
      PyObject* obj = PyObject_GetAttrString(tensor_type.get(), m);
      if (!obj) {
        PyErr_Clear();
        continue;
      }
      r.by_object.emplace(obj, TorchOp{std::string("torch.Tensor.") + m, e.build});
      r.keep.push_back(PyRef::steal(obj));
    }
  }
}

const TorchOp* torch_function(PyObject* callable) {
  auto& m = resolved().by_object;
  auto it = m.find(callable);
  return it == m.end() ? nullptr : &it->second;
}

const TorchOp* tensor_method(const std::string& name) {
  auto& m = resolved().by_method;
  auto it = m.find(name);
  return it == m.end() ? nullptr : &it->second;
}

VarRef tensor_attribute(Translator& t, const VarRef& v, const std::string& name) {
  auto* tv = as<TensorVar>(v);
  AOT_CHECK(tv, "tensor_attribute of a non-tensor");
  const ir::TensorType type = t.graph().type(tv->value);
  int input = -1;
  for (size_t i = 0; i < t.graph().inputs.size(); ++i)
    if (t.graph().inputs[i].value == tv->value) input = static_cast<int>(i);
  if (name == "shape") {
    std::vector<VarRef> dims;
    for (int d = 0; d < type.rank(); ++d)
      dims.push_back(std::make_shared<SymIntVar>(type.shape[static_cast<size_t>(d)],
                                                 v->source.size(d), input, d));
    return std::make_shared<SequenceVar>(SequenceVar::Kind::Size, std::move(dims));
  }
  if (name == "ndim") {
    PyRef n = PyRef::steal(PyLong_FromLong(type.rank()));
    return t.constant(n.get());
  }
  if (name == "dtype") {
    PyRef dt = getattr(import("torch").get(), std::string(ir::dtype_torch_name(type.dtype)).c_str());
    return t.constant(dt.get());
  }
  if (name == "device") {
    PyRef dev = check(PyObject_CallFunction(getattr(import("torch").get(), "device").get(), "s",
                                            type.device.str().c_str()),
                      "torch.device");
    return t.constant(dev.get());
  }
  if (name == "is_cuda") return t.constant(type.device.kind == ir::Device::Kind::cuda ? Py_True : Py_False);
  if (name == "T") {
    std::vector<int64_t> perm;
    for (int i = type.rank() - 1; i >= 0; --i) perm.push_back(i);
    return add(t, OpKind::Permute, {tv->value}, ir::Attrs().set("perm", perm));
  }
  return nullptr;
}

VarRef tensor_operator(Translator& t, const std::string& op, const VarRef& a, const VarRef& b) {
  static const std::map<std::string, OpKind> ops = {
      {"+", OpKind::Add}, {"-", OpKind::Sub},  {"*", OpKind::Mul},  {"/", OpKind::Div},
      {"**", OpKind::Pow}, {"<", OpKind::Lt},  {"<=", OpKind::Le},  {">", OpKind::Gt},
      {">=", OpKind::Ge}, {"==", OpKind::Eq},  {"!=", OpKind::Ne}};
  if (op == "neg") return add(t, OpKind::Neg, {tensor(t, a, "-")});
  if (op == "@") return add(t, OpKind::Matmul, {tensor(t, a, "@"), tensor(t, b, "@")});
  auto it = ops.find(op);
  if (it == ops.end())
    t.graph_break("torch callable with no op mapping", "operator " + op + " on tensors is not supported yet",
                  "use an equivalent torch function");
  return binary(t, it->second, a, b);
}

}  // namespace aotrace::embed
