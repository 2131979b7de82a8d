// The op registry: every op of ir/ops.def with its shape/type rule, reference implementation
// and (composites) decomposition, listed once, in the order of ops.def. The rules live in
// op_rules.cpp, the loops in op_reference.cpp, the decompositions in op_decompose.cpp.
#include <cmath>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

// Scalar functions of the elementwise ops, in double.
double neg(double x) { return -x; }
double exp_(double x) { return std::exp(x); }
double log_(double x) { return std::log(x); }
double tanh_(double x) { return std::tanh(x); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double relu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
double sqrt_(double x) { return std::sqrt(x); }
double abs_(double x) { return std::fabs(x); }
double erf_(double x) { return std::erf(x); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
double floor_(double x) { return std::floor(x); }
double ceil_(double x) { return std::ceil(x); }
double sin_(double x) { return std::sin(x); }
double cos_(double x) { return std::cos(x); }
double add(double a, double b) { return a + b; }
double sub(double a, double b) { return a - b; }
double mul(double a, double b) { return a * b; }
double div(double a, double b) { return a / b; }
// torch.maximum/minimum propagate NaN.
double maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
double pow_(double a, double b) { return std::pow(a, b); }
// torch.remainder (and Python's %): fmod corrected to the sign of the divisor.
double remainder(double a, double b) {
  if (b == 0) return std::fmod(a, b);  // NaN, as torch for floats
  double m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}
// torch's div_floor_floating: floor of the quotient computed from fmod, exact for integers.
double floor_div(double a, double b) {
  if (b == 0) return a / b;
  double m = std::fmod(a, b);
  double d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1.0;
  if (d == 0) return std::copysign(0.0, a / b);
  double f = std::floor(d);
  if (d - f > 0.5) f += 1.0;
  return f;
}
double and_(double a, double b) {
  return static_cast<double>(static_cast<int64_t>(a) & static_cast<int64_t>(b));
}
double or_(double a, double b) {
  return static_cast<double>(static_cast<int64_t>(a) | static_cast<int64_t>(b));
}
double eq(double a, double b) { return a == b; }
double ne(double a, double b) { return a != b; }
double lt(double a, double b) { return a < b; }
double le(double a, double b) { return a <= b; }
double gt(double a, double b) { return a > b; }
double ge(double a, double b) { return a >= b; }

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> table = {
#define AOT_OP(name, text, category, arity) \
  {OpKind::name, text, OpCategory::category, arity, nullptr, nullptr, nullptr},
#include "ir/ops.def"
#undef AOT_OP
  };
  auto def = [&](OpKind kind, InferFn infer, ReferenceFn reference, DecomposeFn decompose) {
    OpInfo& info = table.at(static_cast<size_t>(kind));
    info.infer = std::move(infer);
    info.reference = std::move(reference);
    info.decompose = std::move(decompose);
  };
  auto unary = [&](OpKind k, std::string_view name, double (*fn)(double)) {
    def(k, infer_unary(name), reference_unary(infer_unary(name), fn), nullptr);
  };
  auto unary_floating = [&](OpKind k, std::string_view name, double (*fn)(double)) {
    def(k, infer_unary_floating(name), reference_unary(infer_unary_floating(name), fn), nullptr);
  };
  auto binary = [&](OpKind k, std::string_view name, double (*fn)(double, double)) {
    bool integral_only = k == OpKind::And || k == OpKind::Or;
    InferFn infer = infer_binary(name, k == OpKind::Div, integral_only);
    def(k, infer, reference_binary(infer, fn), nullptr);
  };
  auto compare = [&](OpKind k, std::string_view name, double (*fn)(double, double)) {
    def(k, infer_compare(name), reference_binary(infer_compare(name), fn), nullptr);
  };
  auto reduce = [&](OpKind k, std::string_view name, ReduceKind kind) {
    InferFn infer = infer_reduce(name, kind == ReduceKind::sum, false);
    def(k, infer, reference_reduce(infer, kind), nullptr);
  };
  auto arg_reduce = [&](OpKind k, std::string_view name, bool is_max) {
    InferFn infer = infer_arg_reduce(name);
    def(k, infer, reference_arg_reduce(infer, is_max), nullptr);
  };
  auto composite = [&](OpKind k, InferFn infer, DecomposeFn decompose) {
    def(k, std::move(infer), nullptr, std::move(decompose));
  };
  auto primitive = [&](OpKind k, InferFn infer, ReferenceFn (*reference)(InferFn)) {
    def(k, infer, reference(infer), nullptr);
  };

  primitive(OpKind::Full, infer_full(), reference_full);
  primitive(OpKind::Arange, infer_arange(), reference_arange);
  primitive(OpKind::Random, infer_random(), reference_random);
  unary(OpKind::Neg, "neg", neg);
  unary(OpKind::Exp, "exp", exp_);
  unary(OpKind::Log, "log", log_);
  unary(OpKind::Tanh, "tanh", tanh_);
  unary(OpKind::Sigmoid, "sigmoid", sigmoid);
  unary(OpKind::Relu, "relu", relu);
  unary(OpKind::Sqrt, "sqrt", sqrt_);
  unary(OpKind::Abs, "abs", abs_);
  unary_floating(OpKind::Erf, "erf", erf_);
  unary_floating(OpKind::Rsqrt, "rsqrt", rsqrt);
  unary(OpKind::Floor, "floor", floor_);
  unary(OpKind::Ceil, "ceil", ceil_);
  unary_floating(OpKind::Sin, "sin", sin_);
  unary_floating(OpKind::Cos, "cos", cos_);
  primitive(OpKind::Not, infer_unary_integral("not"), reference_not);
  binary(OpKind::Add, "add", add);
  binary(OpKind::Sub, "sub", sub);
  binary(OpKind::Mul, "mul", mul);
  binary(OpKind::Div, "div", div);
  binary(OpKind::Maximum, "maximum", maximum);
  binary(OpKind::Minimum, "minimum", minimum);
  binary(OpKind::Pow, "pow", pow_);
  binary(OpKind::Remainder, "remainder", remainder);
  binary(OpKind::FloorDiv, "floor_div", floor_div);
  binary(OpKind::And, "and", and_);
  binary(OpKind::Or, "or", or_);
  compare(OpKind::Eq, "eq", eq);
  compare(OpKind::Ne, "ne", ne);
  compare(OpKind::Lt, "lt", lt);
  compare(OpKind::Le, "le", le);
  compare(OpKind::Gt, "gt", gt);
  compare(OpKind::Ge, "ge", ge);
  primitive(OpKind::Where, infer_where(), reference_where);
  primitive(OpKind::Cast, infer_cast(), reference_cast);
  reduce(OpKind::ReduceSum, "reduce_sum", ReduceKind::sum);
  reduce(OpKind::ReduceMax, "reduce_max", ReduceKind::max);
  reduce(OpKind::ReduceMin, "reduce_min", ReduceKind::min);
  arg_reduce(OpKind::ArgMax, "argmax", true);
  arg_reduce(OpKind::ArgMin, "argmin", false);
  primitive(OpKind::CumSum, infer_cumsum(), reference_cumsum);
  primitive(OpKind::Scatter, infer_scatter(), reference_scatter);
  primitive(OpKind::Matmul, infer_matmul(), reference_matmul);
  primitive(OpKind::Reshape, infer_reshape(), reference_reshape);
  primitive(OpKind::Permute, infer_permute(), reference_permute);
  primitive(OpKind::Expand, infer_expand(), reference_expand);
  primitive(OpKind::Slice, infer_slice(), reference_slice);
  primitive(OpKind::Flip, infer_flip(), reference_flip);
  primitive(OpKind::Pad, infer_pad(), reference_pad);
  primitive(OpKind::Concat, infer_concat(), reference_concat);
  primitive(OpKind::Gather, infer_gather(), reference_gather);
  primitive(OpKind::IndexSelect, infer_index_select(), reference_index_select);
  primitive(OpKind::SearchSorted, infer_search_sorted(), reference_search_sorted);
  primitive(OpKind::Conv, infer_conv(), reference_conv);
  primitive(OpKind::Pool, infer_pool(), reference_pool);
  primitive(OpKind::TopK, infer_topk(), reference_topk);
  primitive(OpKind::WinogradInput, infer_winograd_input(), reference_winograd_input);
  primitive(OpKind::WinogradOutput, infer_winograd_output(), reference_winograd_output);
  // Composites: no reference; evaluate() runs their decomposition.
  def(OpKind::Linear, infer_linear(), nullptr, decompose_linear());
  def(OpKind::Mean, infer_reduce("mean", false, true), nullptr, decompose_mean());
  def(OpKind::Softmax, infer_softmax("softmax"), nullptr, decompose_softmax());
  def(OpKind::LogSoftmax, infer_softmax("log_softmax"), nullptr, decompose_log_softmax());
  composite(OpKind::ConvTranspose, infer_conv_transpose(), decompose_conv_transpose());
  composite(OpKind::Gelu, infer_unary_floating("gelu"), decompose_gelu());
  composite(OpKind::Silu, infer_unary_floating("silu"), decompose_silu());
  composite(OpKind::Hardswish, infer_unary_floating("hardswish"), decompose_hardswish());
  composite(OpKind::Hardsigmoid, infer_unary_floating("hardsigmoid"), decompose_hardsigmoid());
  composite(OpKind::LeakyRelu, infer_unary_floating("leaky_relu"), decompose_leaky_relu());
  composite(OpKind::Elu, infer_unary_floating("elu"), decompose_elu());
  composite(OpKind::Softplus, infer_unary_floating("softplus"), decompose_softplus());
  composite(OpKind::Clamp, infer_clamp(), decompose_clamp());
  composite(OpKind::Var, infer_var(), decompose_var());
  composite(OpKind::LayerNorm, infer_layer_norm(), decompose_layer_norm());
  composite(OpKind::GroupNorm, infer_group_norm(), decompose_group_norm());
  composite(OpKind::BatchNorm, infer_batch_norm(), decompose_batch_norm());
  composite(OpKind::Tril, infer_tri("tril"), decompose_tril());
  composite(OpKind::Triu, infer_tri("triu"), decompose_triu());
  composite(OpKind::Resize, infer_resize(), decompose_resize());
  composite(OpKind::AdaptiveAvgPool, infer_adaptive_avg_pool(), decompose_adaptive_avg_pool());

  for (const auto& info : table) {
    AOT_CHECK(info.infer, std::string(info.name) + " has no shape rule");
    bool composite = info.category == OpCategory::Composite;
    AOT_CHECK(composite ? bool(info.decompose) : bool(info.reference),
              std::string(info.name) + " has no reference or decomposition");
  }
  return table;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = build_table();
  return t;
}

}  // namespace

const OpInfo& op_info(OpKind kind) {
  auto i = static_cast<size_t>(kind);
  AOT_CHECK(i < table().size(), "bad op kind " + std::to_string(i));
  return table()[i];
}

std::optional<OpKind> op_by_name(std::string_view name) {
  for (const auto& info : table())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

bool is_elementwise(OpCategory c) {
  return c == OpCategory::Unary || c == OpCategory::Binary || c == OpCategory::Compare ||
         c == OpCategory::Ternary || c == OpCategory::Cast;
}

}  // namespace aotrace::ir
