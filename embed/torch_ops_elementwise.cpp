// Builders of the torch op table for elementwise ops: math functions, arithmetic and
// comparisons with torch's promotion, where/clamp, activations, dtype conversions and the
// tensor factories (zeros, ones, full, arange, *_like, new_*, torch.tensor).
#include "embed/torch_ops_builders.h"

#include <cmath>

namespace aotrace::embed::ops {

namespace {

// Ops whose integer operands compute in float (torch: exp(int tensor) is float32).
bool needs_floating(OpKind k) {
  switch (k) {
    case OpKind::Exp: case OpKind::Log: case OpKind::Tanh: case OpKind::Sigmoid:
    case OpKind::Sqrt: case OpKind::Erf: case OpKind::Rsqrt: case OpKind::Sin: case OpKind::Cos:
      return true;
    default:
      return false;
  }
}

const char* op_text(OpKind k) { return ir::op_name(k).data(); }

}  // namespace

VarRef unary_op(Translator& t, const CallArgs& a, OpKind k) {
  ValueId x = tensor(t, a.get(0, "input"), op_text(k));
  if (needs_floating(k)) x = to_floating(t, x);
  if ((k == OpKind::Floor || k == OpKind::Ceil) && ir::is_integral(type_of(t, x).dtype)) return wrap_value(x);
  VarRef r = add(t, k, {x});
  if (bool_arg(t, a.kw("inplace"), false)) return inplace(t, a.get(0, "input"), r, op_text(k));
  return r;
}

VarRef logical_not(Translator& t, const CallArgs& a) {
  return add(t, OpKind::Not, {cast(t, tensor(t, a.get(0, "input"), "logical_not"), DType::b8)});
}

VarRef bitwise_not(Translator& t, const CallArgs& a) {
  return add(t, OpKind::Not, {tensor(t, a.get(0, "input"), "bitwise_not")});
}

VarRef binary_op(Translator& t, const CallArgs& a, OpKind k) {
  VarRef x = a.get(0, "input"), y = a.get(1, "other|exponent");
  if (!x || !y) user_error(std::string(op_text(k)) + " expects two operands", t.loc());
  if (VarRef alpha = a.kw("alpha"); alpha && !is_none(alpha)) {
    if (!is_tensor(y)) {
      y = t.binary_op("*", y, alpha);
    } else {
      y = binary(t, OpKind::Mul, y, alpha);
    }
  }
  return binary(t, k, x, y);
}

// torch.div with rounding_mode None (true division), 'floor' or 'trunc'.
VarRef divide(Translator& t, const CallArgs& a) {
  VarRef x = a.get(0, "input"), y = a.get(1, "other");
  std::string mode = str_arg(t, a.kw("rounding_mode"), "div", "");
  if (mode.empty()) return binary(t, OpKind::Div, x, y);
  VarRef q = binary(t, OpKind::FloorDiv, x, y);
  if (mode == "floor") return q;
  if (mode != "trunc") user_error("div: unknown rounding_mode '" + mode + "'", t.loc());
  // trunc: floor rounded one up where the quotient is negative and inexact.
  ValueId qv = as<TensorVar>(q)->value;
  ValueId r = as<TensorVar>(binary(t, OpKind::Remainder, x, y))->value;
  DType dt = type_of(t, qv).dtype;
  if (ir::is_floating(dt)) {
    ValueId exact = as<TensorVar>(binary(t, OpKind::Div, x, y))->value;
    ValueId neg = node(t, OpKind::Lt, {exact, constant(t, 0, dt)});
    return add(t, OpKind::Where, {neg, node(t, OpKind::Ceil, {exact}), node(t, OpKind::Floor, {exact})});
  }
  ValueId inexact = node(t, OpKind::Ne, {r, constant(t, 0, dt)});
  ValueId xv = tensor_or_scalar(t, x, dt, "div"), yv = tensor_or_scalar(t, y, dt, "div");
  ValueId signs = node(t, OpKind::Ne, {node(t, OpKind::Lt, {xv, constant(t, 0, dt)}),
                                       node(t, OpKind::Lt, {yv, constant(t, 0, dt)})});
  ValueId bump = cast(t, node(t, OpKind::And, {inexact, signs}), dt);
  return add(t, OpKind::Add, {qv, bump});
}

VarRef rsub(Translator& t, const CallArgs& a) {
  CallArgs swapped{{a.get(1, "other"), a.get(0, "input")}, {}};
  if (VarRef alpha = a.kw("alpha")) {
    swapped.args[1] = is_tensor(swapped.args[1]) ? binary(t, OpKind::Mul, swapped.args[1], alpha)
                                                 : t.binary_op("*", swapped.args[1], alpha);
  }
  return binary(t, OpKind::Sub, swapped.args[0], swapped.args[1]);
}

VarRef logical_binary(Translator& t, const CallArgs& a, OpKind k) {
  ValueId x = cast(t, tensor_or_scalar(t, a.get(0, "input"), DType::b8, "logical op"), DType::b8);
  ValueId y = cast(t, tensor_or_scalar(t, a.get(1, "other"), DType::b8, "logical op"), DType::b8);
  return add(t, k, {x, y});
}

VarRef where(Translator& t, const CallArgs& a) {
  VarRef cond = a.get(0, "condition"), x = a.get(1, "input"), y = a.get(2, "other");
  if (!x || !y) unsupported(t, "torch.where(condition) with one argument (it is data-dependent)");
  ValueId c = cast(t, tensor(t, cond, "where"), DType::b8);
  // Two Python scalars promote as torch.result_type does: bools give bool, ints int64, a
  // float the default float32.
  auto scalar_kind = [&](const VarRef& v) {
    PyRef o = t.to_python(v);
    return !o ? DType::f32 : PyBool_Check(o.get()) ? DType::b8 : PyLong_Check(o.get()) ? DType::i64 : DType::f32;
  };
  DType like = is_tensor(x) ? type_of(t, tensor(t, x, "where")).dtype
               : is_tensor(y) ? type_of(t, tensor(t, y, "where")).dtype
                              : ir::promote(scalar_kind(x), scalar_kind(y));
  return add(t, OpKind::Where, {c, tensor_or_scalar(t, x, like, "where"), tensor_or_scalar(t, y, like, "where")});
}

// clamp(min, max): scalars become a Clamp node; tensor bounds use maximum/minimum.
VarRef clamp_with(Translator& t, const VarRef& input, const VarRef& lo, const VarRef& hi) {
  ValueId x = tensor(t, input, "clamp");
  if (is_tensor(lo) || is_tensor(hi)) {
    VarRef r = wrap_value(x);
    if (!is_none(lo)) r = binary(t, OpKind::Maximum, r, lo);
    if (!is_none(hi)) r = binary(t, OpKind::Minimum, r, hi);
    return r;
  }
  ir::Attrs attrs;
  bool float_bound = false;
  for (auto [v, key] : {std::pair{lo, "min"}, std::pair{hi, "max"}}) {
    if (is_none(v)) continue;
    PyRef o = t.to_python(v);
    float_bound = float_bound || (o && PyFloat_Check(o.get()));
    attrs.set(key, float_arg(t, v, "clamp"));
  }
  if (attrs.items.empty()) user_error("clamp: at least one of min and max must be given", t.loc());
  if (float_bound && !ir::is_floating(type_of(t, x).dtype)) x = cast(t, x, DType::f32);
  return add(t, OpKind::Clamp, {x}, attrs);
}

VarRef clamp(Translator& t, const CallArgs& a) {
  return clamp_with(t, a.get(0, "input"), a.get(1, "min"), a.get(2, "max"));
}
VarRef clamp_min(Translator& t, const CallArgs& a) { return clamp_with(t, a.get(0, "input"), a.get(1, "min"), nullptr); }
VarRef clamp_max(Translator& t, const CallArgs& a) { return clamp_with(t, a.get(0, "input"), nullptr, a.get(1, "max")); }

namespace {

VarRef activation(Translator& t, const CallArgs& a, OpKind k, ir::Attrs attrs, size_t inplace_pos) {
  VarRef in = a.get(0, "input");
  VarRef r = add(t, k, {to_floating(t, tensor(t, in, op_text(k)))}, std::move(attrs));
  if (bool_arg(t, a.get(inplace_pos, "inplace"), false)) return inplace(t, in, r, op_text(k));
  return r;
}

}  // namespace

VarRef gelu(Translator& t, const CallArgs& a) {
  std::string approx = str_arg(t, a.get(1, "approximate"), "gelu", "none");
  if (approx != "none" && approx != "tanh") user_error("gelu: approximate must be 'none' or 'tanh'", t.loc());
  return activation(t, a, OpKind::Gelu, ir::Attrs().set("approximate", approx), 99);
}
VarRef silu(Translator& t, const CallArgs& a) { return activation(t, a, OpKind::Silu, {}, 1); }
VarRef hardswish(Translator& t, const CallArgs& a) { return activation(t, a, OpKind::Hardswish, {}, 1); }
VarRef hardsigmoid(Translator& t, const CallArgs& a) { return activation(t, a, OpKind::Hardsigmoid, {}, 1); }
VarRef leaky_relu(Translator& t, const CallArgs& a) {
  return activation(t, a, OpKind::LeakyRelu,
                    ir::Attrs().set("negative_slope", float_or(t, a, 1, "negative_slope", 0.01)), 2);
}
VarRef elu(Translator& t, const CallArgs& a) {
  return activation(t, a, OpKind::Elu, ir::Attrs().set("alpha", float_or(t, a, 1, "alpha", 1.0)), 2);
}
VarRef softplus(Translator& t, const CallArgs& a) {
  return activation(t, a, OpKind::Softplus,
                    ir::Attrs().set("beta", float_or(t, a, 1, "beta", 1.0))
                        .set("threshold", float_or(t, a, 2, "threshold", 20.0)), 99);
}
VarRef hardtanh(Translator& t, const CallArgs& a) {
  ir::Attrs attrs;
  attrs.set("min", float_or(t, a, 1, "min_val", -1.0)).set("max", float_or(t, a, 2, "max_val", 1.0));
  return activation(t, a, OpKind::Clamp, attrs, 3);
}
VarRef relu6(Translator& t, const CallArgs& a) {
  return activation(t, a, OpKind::Clamp, ir::Attrs().set("min", 0.0).set("max", 6.0), 1);
}
VarRef relu(Translator& t, const CallArgs& a) {
  VarRef in = a.get(0, "input");
  VarRef r = add(t, OpKind::Relu, {tensor(t, in, "relu")});
  if (bool_arg(t, a.get(1, "inplace"), false)) return inplace(t, in, r, "relu");
  return r;
}

// ---------------------------------------------------------------------------------------------
// dtype conversions

// x.to(dtype), x.to(device[, dtype]), x.to(other), x.to(dtype=...): devices other than the
// tensor's own are not supported (capture is single-device).
VarRef to(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "to");
  std::optional<DType> dtype = dtype_arg(t, a.kw("dtype"));
  for (size_t i = 1; i < a.args.size() && i < 3; ++i) {
    const VarRef& v = a.args[i];
    if (is_tensor(v)) { dtype = type_of(t, tensor(t, v, "to")).dtype; continue; }
    PyRef o = t.to_python(v);
    if (!o || o.get() == Py_None || PyBool_Check(o.get())) continue;
    std::string s = py_str(o.get());
    if (auto d = ir::parse_dtype(s)) dtype = d;
    else if (s.rfind("cpu", 0) != 0 && s != type_of(t, x).device.str())
      unsupported(t, "moving a tensor to device '" + s + "' inside the traced function",
                  "compile for that target instead");
  }
  return wrap_value(dtype ? cast(t, x, *dtype) : x);
}

VarRef type_as(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "type_as");
  return wrap_value(cast(t, x, type_of(t, tensor(t, a.get(1, "other"), "type_as")).dtype));
}

VarRef tensor_type(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "type");
  VarRef d = a.get(1, "dtype");
  if (is_none(d)) unsupported(t, "x.type() without a dtype (returns a string)");
  return wrap_value(cast(t, x, *dtype_arg(t, d)));
}

VarRef cast_to(Translator& t, const CallArgs& a, DType d) {
  return wrap_value(cast(t, tensor(t, a.get(0, "self"), "cast"), d));
}

// ---------------------------------------------------------------------------------------------
// Factories

namespace {

VarRef full_of(Translator& t, ir::Shape shape, double value, DType dtype) {
  for (const auto& d : shape)
    if (d.is_constant() && d.constant() < 0)
      user_error("tensor factory: negative size in " + ir::shape_str(shape), t.loc());
  return add(t, OpKind::Full, {}, ir::Attrs().set("shape", shape).set("value", value).set("dtype", dtype));
}

DType dtype_or(Translator& t, const CallArgs& a, DType fallback) {
  return dtype_arg(t, a.kw("dtype")).value_or(fallback);
}

}  // namespace

VarRef full_factory(Translator& t, const CallArgs& a, double value) {
  return full_of(t, shape_arg(t, shape_items(t, a, 0, "size"), "size"), value, dtype_or(t, a, DType::f32));
}

VarRef full(Translator& t, const CallArgs& a) {
  VarRef fill = a.get(1, "fill_value");
  PyRef o = t.to_python(fill);
  DType fallback = o && PyBool_Check(o.get()) ? DType::b8 : o && PyLong_Check(o.get()) ? DType::i64 : DType::f32;
  auto items = sequence_items(t, a.get(0, "size"));
  if (!items) user_error("full: size must be a sequence", t.loc());
  return full_of(t, shape_arg(t, *items, "full"), float_arg(t, fill, "full"), dtype_or(t, a, fallback));
}

VarRef like_factory(Translator& t, const CallArgs& a, double value) {
  ValueId x = tensor(t, a.get(0, "input"), "*_like");
  const ir::TensorType type = type_of(t, x);
  return full_of(t, type.shape, value, dtype_or(t, a, type.dtype));
}

VarRef full_like(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "full_like");
  const ir::TensorType type = type_of(t, x);
  return full_of(t, type.shape, float_arg(t, a.get(1, "fill_value"), "full_like"), dtype_or(t, a, type.dtype));
}

VarRef new_factory(Translator& t, const CallArgs& a, double value) {
  ValueId x = tensor(t, a.get(0, "self"), "new_*");
  return full_of(t, shape_arg(t, shape_items(t, a, 1, "size"), "size"), value, dtype_or(t, a, type_of(t, x).dtype));
}

VarRef new_full(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "new_full");
  auto items = sequence_items(t, a.get(1, "size"));
  if (!items) user_error("new_full: size must be a sequence", t.loc());
  return full_of(t, shape_arg(t, *items, "new_full"), float_arg(t, a.get(2, "fill_value"), "new_full"),
                 dtype_or(t, a, type_of(t, x).dtype));
}

// torch.arange(end), (start, end[, step]); bounds may be shape values (symbolic length).
VarRef arange(Translator& t, const CallArgs& a) {
  const std::vector<VarRef>& pos = a.args;
  VarRef start, end, step;
  if (pos.size() == 1 && !a.kw("end")) {
    end = pos[0];
  } else {
    start = a.get(0, "start"), end = a.get(1, "end"), step = a.get(2, "step");
  }
  if (is_none(end) || pos.size() > 3) user_error("arange: expects 1 to 3 bounds", t.loc());
  if (is_none(step)) step = nullptr;
  if (is_none(start)) start = nullptr;
  bool any_float = false;
  for (const auto& v : {start, end, step}) {
    if (!v || as<SymIntVar>(v)) continue;
    PyRef o = t.to_python(v);
    any_float = any_float || (o && PyFloat_Check(o.get()));
  }
  DType dtype = dtype_or(t, a, any_float ? DType::f32 : DType::i64);
  auto* sym_end = as<SymIntVar>(end);
  if (sym_end && !sym_end->expr.is_constant()) {
    int64_t s = start ? int_arg(t, start, "arange") : 0;
    if (step && int_arg(t, step, "arange") != 1) unsupported(t, "arange with a symbolic end and a step");
    return add(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{sym_end->expr - s})
                                           .set("start", static_cast<double>(s)).set("step", 1.0).set("dtype", dtype));
  }
  double s = start ? float_arg(t, start, "arange") : 0.0, e = float_arg(t, end, "arange");
  double st = step ? float_arg(t, step, "arange") : 1.0;
  if (st == 0) user_error("arange: step must be nonzero", t.loc());
  auto n = static_cast<int64_t>(std::ceil((e - s) / st));
  return add(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{std::max<int64_t>(n, 0)})
                                         .set("start", s).set("step", st).set("dtype", dtype));
}

// torch.tensor(data) / torch.as_tensor on compile-time data: made for real, kept as a weight.
VarRef tensor_literal(Translator& t, const CallArgs& a) {
  VarRef data = a.get(0, "data");
  if (is_tensor(data)) return cast_to(t, CallArgs{{data}, {}}, dtype_or(t, a, type_of(t, tensor(t, data, "tensor")).dtype));
  PyRef o = t.to_python(data);
  if (!o) unsupported(t, "torch.tensor of traced values", "use torch.stack or torch.cat");
  PyRef kwargs = PyRef::steal(PyDict_New());
  if (VarRef d = a.kw("dtype"); d && !is_none(d)) PyDict_SetItemString(kwargs.get(), "dtype", t.to_python(d).get());
  PyRef args = PyRef::steal(PyTuple_Pack(1, o.get()));
  PyObject* r = PyObject_Call(getattr(import("torch").get(), "tensor").get(), args.get(), kwargs.get());
  if (!r) user_error("torch.tensor raised " + fetch_python_error(), t.loc());
  PyRef result = PyRef::steal(r);
  return t.wrap(result.get(), Source());
}

// x.new_tensor(data, dtype=None): torch.tensor(data) with x's dtype unless another is given.
VarRef new_tensor(Translator& t, const CallArgs& a) {
  const DType self = type_of(t, tensor(t, a.get(0, "self"), "new_tensor")).dtype;
  VarRef dtype = a.kw("dtype");
  if (is_none(dtype)) dtype = t.constant(dtype_object(self).get());
  return tensor_literal(t, CallArgs{{a.get(1, "data")}, {{"dtype", dtype}}});
}

}  // namespace aotrace::embed::ops
