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
double add(double a, double b) { return a + b; }
double sub(double a, double b) { return a - b; }
double mul(double a, double b) { return a * b; }
double div(double a, double b) { return a / b; }
// torch.maximum/minimum propagate NaN.
double maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
double pow_(double a, double b) { return std::pow(a, b); }
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
  auto binary = [&](OpKind k, std::string_view name, double (*fn)(double, double)) {
    InferFn infer = infer_binary(name, k == OpKind::Div);
    def(k, infer, reference_binary(infer, fn), nullptr);
  };
  auto compare = [&](OpKind k, std::string_view name, double (*fn)(double, double)) {
    def(k, infer_compare(name), reference_binary(infer_compare(name), fn), nullptr);
  };
  auto reduce = [&](OpKind k, std::string_view name, bool is_max) {
    InferFn infer = infer_reduce(name, !is_max, false);
    def(k, infer, reference_reduce(infer, is_max), nullptr);
  };
  auto primitive = [&](OpKind k, InferFn infer, ReferenceFn (*reference)(InferFn)) {
    def(k, infer, reference(infer), nullptr);
  };

  primitive(OpKind::Full, infer_full(), reference_full);
  unary(OpKind::Neg, "neg", neg);
  unary(OpKind::Exp, "exp", exp_);
  unary(OpKind::Log, "log", log_);
  unary(OpKind::Tanh, "tanh", tanh_);
  unary(OpKind::Sigmoid, "sigmoid", sigmoid);
  unary(OpKind::Relu, "relu", relu);
  unary(OpKind::Sqrt, "sqrt", sqrt_);
  unary(OpKind::Abs, "abs", abs_);
  binary(OpKind::Add, "add", add);
  binary(OpKind::Sub, "sub", sub);
  binary(OpKind::Mul, "mul", mul);
  binary(OpKind::Div, "div", div);
  binary(OpKind::Maximum, "maximum", maximum);
  binary(OpKind::Minimum, "minimum", minimum);
  binary(OpKind::Pow, "pow", pow_);
  compare(OpKind::Eq, "eq", eq);
  compare(OpKind::Ne, "ne", ne);
  compare(OpKind::Lt, "lt", lt);
  compare(OpKind::Le, "le", le);
  compare(OpKind::Gt, "gt", gt);
  compare(OpKind::Ge, "ge", ge);
  primitive(OpKind::Where, infer_where(), reference_where);
  primitive(OpKind::Cast, infer_cast(), reference_cast);
  reduce(OpKind::ReduceSum, "reduce_sum", false);
  reduce(OpKind::ReduceMax, "reduce_max", true);
  primitive(OpKind::Matmul, infer_matmul(), reference_matmul);
  primitive(OpKind::Reshape, infer_reshape(), reference_reshape);
  primitive(OpKind::Permute, infer_permute(), reference_permute);
  primitive(OpKind::Expand, infer_expand(), reference_expand);
  // Composites: no reference; evaluate() runs their decomposition.
  def(OpKind::Linear, infer_linear(), nullptr, decompose_linear());
  def(OpKind::Mean, infer_reduce("mean", false, true), nullptr, decompose_mean());
  def(OpKind::Softmax, infer_softmax("softmax"), nullptr, decompose_softmax());
  def(OpKind::LogSoftmax, infer_softmax("log_softmax"), nullptr, decompose_log_softmax());

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
