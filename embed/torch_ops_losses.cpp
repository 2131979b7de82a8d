// Builders of the torch op table for losses, each a composition of graph ops: nll_loss and
// cross_entropy (class weights, label smoothing, class-probability targets), and the losses
// behind F.mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits),
// kl_div, margin_ranking_loss and cosine_embedding_loss. Those F.* wrappers are torch's own
// Python, inlined (legacy size_average/reduce, broadcasting, 'batchmean'); the table maps the
// torch functions they call, bound through torch's schemas, whose reduction is torch's enum
// (0 'none', 1 'mean', 2 'sum'); a string is accepted too.
#include <optional>

#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

enum class Reduction : uint8_t { None, Mean, Sum };

Reduction reduction_of(Translator& t, const VarRef& v, const char* what) {
  if (!v || is_none(v)) return Reduction::Mean;
  PyRef o = t.to_python(v);
  if (o && PyUnicode_Check(o.get())) {
    const std::string s = py_str(o.get());
    if (s == "none") return Reduction::None;
    if (s == "mean") return Reduction::Mean;
    if (s == "sum") return Reduction::Sum;
    user_error(std::string(what) + ": reduction must be 'none', 'mean' or 'sum', got '" + s + "'", t.loc());
  }
  switch (int_arg(t, v, what)) {
    case 0: return Reduction::None;
    case 1: return Reduction::Mean;
    case 2: return Reduction::Sum;
    default: user_error(std::string(what) + ": reduction enum must be 0, 1 or 2", t.loc());
  }
}

// The per-element loss reduced over all its elements.
VarRef reduce_loss(Translator& t, ValueId loss, Reduction r) {
  if (r == Reduction::None) return wrap_value(loss);
  std::vector<int64_t> axes = dims_arg(t, nullptr, type_of(t, loss).rank(), "loss");
  return add(t, r == Reduction::Sum ? OpKind::ReduceSum : OpKind::Mean, {loss}, axes_attrs(axes, false));
}

ValueId c(Translator& t, double v, ValueId like) { return constant(t, v, type_of(t, like).dtype); }
ValueId bin(Translator& t, OpKind k, ValueId a, ValueId b) { return node(t, k, {a, b}); }

// The schema-bound (self, target) pair of a loss, in one floating dtype.
std::pair<ValueId, ValueId> operands(Translator& t, const CallArgs& a, const char* what) {
  ValueId x = tensor(t, a.kw("self"), what), y = tensor(t, a.kw("target"), what);
  ValueId d = to_floating(t, node(t, OpKind::Sub, {x, y}));  // the promoted dtype
  const DType dt = type_of(t, d).dtype;
  return {cast(t, x, dt), cast(t, y, dt)};
}

}  // namespace

// torch._C._nn.mse_loss / l1_loss(self, target, reduction).
VarRef mse_loss(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::mse_loss", call);
  auto [x, y] = operands(t, a, "mse_loss");
  ValueId d = bin(t, OpKind::Sub, x, y);
  return reduce_loss(t, bin(t, OpKind::Mul, d, d), reduction_of(t, a.kw("reduction"), "mse_loss"));
}

VarRef l1_loss(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::l1_loss", call);
  auto [x, y] = operands(t, a, "l1_loss");
  return reduce_loss(t, node(t, OpKind::Abs, {bin(t, OpKind::Sub, x, y)}), reduction_of(t, a.kw("reduction"), "l1_loss"));
}

// smooth_l1_loss(beta): |d| < beta ? 0.5 d² / beta : |d| - beta / 2 (beta 0: |d|);
// huber_loss(delta): |d| < delta ? 0.5 d² : delta (|d| - delta / 2).
VarRef smooth_l1_loss(Translator& t, const CallArgs& call, bool huber) {
  const char* what = huber ? "huber_loss" : "smooth_l1_loss";
  CallArgs a = bind_schema(t, huber ? "aten::huber_loss" : "aten::smooth_l1_loss", call);
  auto [x, y] = operands(t, a, what);
  const double b = is_none(a.kw(huber ? "delta" : "beta")) ? 1.0 : float_arg(t, a.kw(huber ? "delta" : "beta"), what);
  ValueId z = node(t, OpKind::Abs, {bin(t, OpKind::Sub, x, y)});
  const Reduction r = reduction_of(t, a.kw("reduction"), what);
  if (!huber && b == 0.0) return reduce_loss(t, z, r);
  ValueId square = bin(t, OpKind::Mul, c(t, 0.5, z), bin(t, OpKind::Mul, z, z));
  ValueId near = huber ? square : bin(t, OpKind::Div, square, c(t, b, z));
  ValueId far = bin(t, OpKind::Sub, z, c(t, 0.5 * b, z));
  if (huber) far = bin(t, OpKind::Mul, c(t, b, z), far);
  return reduce_loss(t, node(t, OpKind::Where, {bin(t, OpKind::Lt, z, c(t, b, z)), near, far}), r);
}

// binary_cross_entropy(self, target, weight, reduction), torch's CPU kernel:
// (target - 1) · max(log(1 - x), -100) - target · max(log(x), -100), times weight.
VarRef binary_cross_entropy(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::binary_cross_entropy", call);
  auto [x, y] = operands(t, a, "binary_cross_entropy");
  auto clamped_log = [&](ValueId v) { return bin(t, OpKind::Maximum, node(t, OpKind::Log, {v}), c(t, -100, v)); };
  ValueId loss = bin(t, OpKind::Sub, bin(t, OpKind::Mul, bin(t, OpKind::Sub, y, c(t, 1, y)), clamped_log(bin(t, OpKind::Sub, c(t, 1, x), x))),
                     bin(t, OpKind::Mul, y, clamped_log(x)));
  if (VarRef w = a.kw("weight"); w && !is_none(w)) loss = bin(t, OpKind::Mul, loss, cast(t, tensor(t, w, "binary_cross_entropy"), type_of(t, loss).dtype));
  return reduce_loss(t, loss, reduction_of(t, a.kw("reduction"), "binary_cross_entropy"));
}

// binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction), as torch:
// m = max(-x, 0); (1 - y) x + lw (log(exp(-m) + exp(-x - m)) + m), lw = (pos_weight - 1) y + 1.
VarRef binary_cross_entropy_with_logits(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::binary_cross_entropy_with_logits", call);
  auto [x, y] = operands(t, a, "binary_cross_entropy_with_logits");
  const DType dt = type_of(t, x).dtype;
  ValueId m = bin(t, OpKind::Maximum, node(t, OpKind::Neg, {x}), c(t, 0, x));
  ValueId soft = bin(t, OpKind::Add, node(t, OpKind::Log, {bin(t, OpKind::Add, node(t, OpKind::Exp, {node(t, OpKind::Neg, {m})}),
                                                                node(t, OpKind::Exp, {bin(t, OpKind::Sub, node(t, OpKind::Neg, {x}), m)}))}),
                     m);
  if (VarRef pw = a.kw("pos_weight"); pw && !is_none(pw)) {
    ValueId p = cast(t, tensor(t, pw, "binary_cross_entropy_with_logits"), dt);
    soft = bin(t, OpKind::Mul, bin(t, OpKind::Add, bin(t, OpKind::Mul, bin(t, OpKind::Sub, p, c(t, 1, p)), y), c(t, 1, y)), soft);
  }
  ValueId loss = bin(t, OpKind::Add, bin(t, OpKind::Mul, bin(t, OpKind::Sub, c(t, 1, y), y), x), soft);
  if (VarRef w = a.kw("weight"); w && !is_none(w)) loss = bin(t, OpKind::Mul, loss, cast(t, tensor(t, w, "binary_cross_entropy_with_logits"), dt));
  return reduce_loss(t, loss, reduction_of(t, a.kw("reduction"), "binary_cross_entropy_with_logits"));
}

// kl_div(self, target, reduction, *, log_target): exp(y) (y - x), or xlogy(y, y) - y x.
VarRef kl_div(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::kl_div", call);
  auto [x, y] = operands(t, a, "kl_div");
  ValueId loss;
  if (bool_arg(t, a.kw("log_target"), false)) {
    loss = bin(t, OpKind::Mul, node(t, OpKind::Exp, {y}), bin(t, OpKind::Sub, y, x));
  } else {
    ValueId ylogy = node(t, OpKind::Where, {bin(t, OpKind::Eq, y, c(t, 0, y)), c(t, 0, y), bin(t, OpKind::Mul, y, node(t, OpKind::Log, {y}))});
    loss = bin(t, OpKind::Sub, ylogy, bin(t, OpKind::Mul, y, x));
  }
  return reduce_loss(t, loss, reduction_of(t, a.kw("reduction"), "kl_div"));
}

// margin_ranking_loss(input1, input2, target, margin, reduction): max(-y (x1 - x2) + margin, 0).
VarRef margin_ranking_loss(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::margin_ranking_loss", call);
  VarRef d = binary(t, OpKind::Mul, add(t, OpKind::Neg, {tensor(t, a.kw("target"), "margin_ranking_loss")}),
                    binary(t, OpKind::Sub, a.kw("input1"), a.kw("input2")));
  ValueId v = tensor(t, d, "margin_ranking_loss");
  const double margin = is_none(a.kw("margin")) ? 0.0 : float_arg(t, a.kw("margin"), "margin_ranking_loss");
  ValueId loss = bin(t, OpKind::Maximum, bin(t, OpKind::Add, v, c(t, margin, v)), c(t, 0, v));
  return reduce_loss(t, loss, reduction_of(t, a.kw("reduction"), "margin_ranking_loss"));
}

// cosine_embedding_loss(input1, input2, target, margin, reduction), as torch: cos over the last
// dim with 1e-12 added to each squared magnitude; y == 1: 1 - cos, y == -1: max(cos - margin, 0).
VarRef cosine_embedding_loss(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::cosine_embedding_loss", call);
  const char* what = "cosine_embedding_loss";
  ValueId x1 = to_floating(t, tensor(t, a.kw("input1"), what)), x2 = to_floating(t, tensor(t, a.kw("input2"), what));
  ValueId y = tensor(t, a.kw("target"), what);
  const int ty = type_of(t, y).rank();
  if (ty > 1) user_error(std::string(what) + ": target must be 0-D or 1-D (torch raises here too)", t.loc());
  auto sum = [&](ValueId u, ValueId v) { return node(t, OpKind::ReduceSum, {bin(t, OpKind::Mul, u, v)}, axes_attrs({ty}, false)); };
  ValueId m1 = bin(t, OpKind::Add, sum(x1, x1), c(t, 1e-12, x1)), m2 = bin(t, OpKind::Add, sum(x2, x2), c(t, 1e-12, x2));
  ValueId cos = bin(t, OpKind::Div, sum(x1, x2), node(t, OpKind::Sqrt, {bin(t, OpKind::Mul, m1, m2)}));
  const double margin = is_none(a.kw("margin")) ? 0.0 : float_arg(t, a.kw("margin"), what);
  ValueId pos = bin(t, OpKind::Sub, c(t, 1, cos), cos);
  ValueId neg = bin(t, OpKind::Maximum, bin(t, OpKind::Sub, cos, c(t, margin, cos)), c(t, 0, cos));
  const DType yt = type_of(t, y).dtype;
  ValueId zero = c(t, 0, cos);
  ValueId loss = bin(t, OpKind::Add, node(t, OpKind::Where, {bin(t, OpKind::Eq, y, constant(t, 1, yt)), pos, zero}),
                     node(t, OpKind::Where, {bin(t, OpKind::Eq, y, constant(t, -1, yt)), neg, zero}));
  return reduce_loss(t, loss, reduction_of(t, a.kw("reduction"), what));
}

// ---------------------------------------------------------------------------------------------
// nll_loss and cross_entropy over (N, C, d1, ...) scores, or (C,) unbatched.

namespace {

struct NllParts {
  ValueId loss;    // per item, flattened: -log_probs[i, target[i]] · w[target[i]] (0 if ignored)
  ValueId weight;  // per item: w[target[i]] (1 without class weights), 0 where ignored
  ValueId valid;   // per item: target != ignore_index
  ValueId log_probs, target;  // flattened: [items, C], [items]
  ir::Shape per_item;         // the target's shape, for a 'none' reduction
};

// Scores moved to [items, C] (the class dim last, every other dim one batch dim).
NllParts nll_parts(Translator& t, ValueId log_probs, ValueId target, std::optional<ValueId> weight,
                   int64_t ignore_index, const char* what) {
  const DType dt = type_of(t, log_probs).dtype, it = type_of(t, target).dtype;
  const int rank = type_of(t, log_probs).rank();
  if (rank < 1 || type_of(t, target).rank() != std::max(rank - 1, 0) || ir::is_floating(it))
    unsupported(t, std::string(what) + " other than (N, C, ...) scores with (N, ...) class indices");
  NllParts p;
  p.per_item = type_of(t, target).shape;
  if (rank == 1) {
    log_probs = unsqueeze_at(t, log_probs, 0);
    target = unsqueeze_at(t, target, 0);
  } else if (rank > 2) {
    std::vector<int64_t> perm{0};
    for (int d = 2; d < rank; ++d) perm.push_back(d);
    perm.push_back(1);
    ir::SymExpr items = type_of(t, target).numel();
    log_probs = reshape_to(t, permute_to(t, log_probs, perm), {items, type_of(t, log_probs).shape[1]});
    target = reshape_to(t, target, {items});
  }
  p.valid = node(t, OpKind::Ne, {target, constant(t, static_cast<double>(ignore_index), it)});
  ValueId safe = node(t, OpKind::Where, {p.valid, target, constant(t, 0, it)});
  ValueId picked = node(t, OpKind::Gather, {log_probs, unsqueeze_at(t, safe, 1)}, ir::Attrs().set("axis", int64_t{1}));
  picked = reshape_to(t, picked, {type_of(t, target).shape[0]});
  p.weight = cast(t, p.valid, dt);
  if (weight) {
    ValueId w = node(t, OpKind::Gather, {cast(t, *weight, dt), safe}, ir::Attrs().set("axis", int64_t{0}));
    p.weight = node(t, OpKind::Mul, {w, p.weight});
  }
  p.loss = node(t, OpKind::Mul, {node(t, OpKind::Neg, {picked}), p.weight});
  p.log_probs = log_probs;
  p.target = target;
  return p;
}

// Reduces per-item losses; 'mean' divides by the summed item weights (nll_loss's rule).
VarRef reduce_items(Translator& t, ValueId loss, const NllParts& p, Reduction r) {
  if (r == Reduction::None) return wrap_value(reshape_to(t, loss, p.per_item));
  ValueId total = node(t, OpKind::ReduceSum, {loss}, axes_attrs({0}, false));
  if (r == Reduction::Sum) return wrap_value(total);
  return add(t, OpKind::Div, {total, node(t, OpKind::ReduceSum, {p.weight}, axes_attrs({0}, false))});
}

// The options F.nll_loss and F.cross_entropy share (their Python signatures); the legacy
// size_average/reduce are a graph break rather than a silently different loss.
struct LossOptions {
  std::optional<ValueId> weight;
  int64_t ignore_index;
  Reduction reduction;
};

LossOptions loss_options(Translator& t, const CallArgs& a, const char* what) {
  for (auto [position, name] : {std::pair<size_t, const char*>{3, "size_average"}, {5, "reduce"}})
    if (!is_none(a.get(position, name)))
      unsupported(t, std::string(what) + " with " + name + "=", "use reduction='none' | 'mean' | 'sum'");
  LossOptions o{std::nullopt, int_or(t, a, 4, "ignore_index", -100), reduction_of(t, a.get(6, "reduction"), what)};
  if (VarRef w = a.get(2, "weight"); !is_none(w)) {
    o.weight = tensor(t, w, what);
    if (type_of(t, *o.weight).rank() != 1) user_error(std::string(what) + ": weight must be 1-D, one per class", t.loc());
  }
  return o;
}

}  // namespace

VarRef nll_loss(Translator& t, const CallArgs& a) {
  LossOptions o = loss_options(t, a, "nll_loss");
  NllParts p = nll_parts(t, tensor(t, a.get(0, "input"), "nll_loss"), tensor(t, a.get(1, "target"), "nll_loss"), o.weight,
                         o.ignore_index, "nll_loss");
  return reduce_items(t, p.loss, p, o.reduction);
}

// F.cross_entropy: log_softmax over the class dim, then nll_loss; label_smoothing ls mixes in
// the uniform target: (1 - ls) · nll + ls / C · Σ_c -w_c log p_c (0 where ignored), reduced
// by nll's rule. Class-probability targets (float, the input's shape): -Σ_c w_c y_c log p_c,
// with y smoothed to y (1 - ls) + ls / C; 'mean' divides by the item count.
VarRef cross_entropy(Translator& t, const CallArgs& a) {
  LossOptions o = loss_options(t, a, "cross_entropy");
  const double ls = float_or(t, a, 7, "label_smoothing", 0.0);
  ValueId x = tensor(t, a.get(0, "input"), "cross_entropy");
  const int class_dim = type_of(t, x).rank() == 1 ? 0 : 1;
  ValueId log_probs = tensor(t, log_softmax(t, CallArgs{{wrap_value(x), int_var(t, class_dim)}, {}}), "cross_entropy");
  const DType dt = type_of(t, log_probs).dtype;
  const ir::SymExpr classes = type_of(t, log_probs).shape[static_cast<size_t>(class_dim)];
  auto n_classes = classes.as_constant();
  if (ls != 0.0 && !n_classes) unsupported(t, "cross_entropy(label_smoothing=) over a dynamic class dim");
  ValueId target = tensor(t, a.get(1, "target"), "cross_entropy");
  // Class weights broadcast along the class dim of the scores.
  auto weighted = [&](ValueId v) {
    if (!o.weight) return v;
    ir::Shape s(static_cast<size_t>(type_of(t, v).rank() - class_dim), ir::SymExpr(1));
    s[0] = classes;
    return node(t, OpKind::Mul, {v, reshape_to(t, cast(t, *o.weight, dt), s)});
  };
  if (ir::is_floating(type_of(t, target).dtype)) {
    if (type_of(t, target).shape != type_of(t, log_probs).shape)
      user_error("cross_entropy: class-probability targets must have the input's shape", t.loc());
    ValueId y = cast(t, target, dt);
    if (ls != 0.0)
      y = node(t, OpKind::Add, {node(t, OpKind::Mul, {y, constant(t, 1 - ls, dt)}),
                                constant(t, ls / static_cast<double>(*n_classes), dt)});
    ValueId loss = node(t, OpKind::Neg, {node(t, OpKind::ReduceSum, {weighted(node(t, OpKind::Mul, {log_probs, y}))},
                                              axes_attrs({class_dim}, false))});
    return reduce_loss(t, loss, o.reduction);
  }
  NllParts p = nll_parts(t, log_probs, target, o.weight, o.ignore_index, "cross_entropy");
  if (ls == 0.0) return reduce_items(t, p.loss, p, o.reduction);
  ValueId per_class = o.weight ? node(t, OpKind::Mul, {p.log_probs, cast(t, *o.weight, dt)}) : p.log_probs;
  ValueId smooth = node(t, OpKind::Neg, {node(t, OpKind::ReduceSum, {per_class}, axes_attrs({1}, false))});
  smooth = node(t, OpKind::Mul, {smooth, cast(t, p.valid, dt)});
  ValueId loss = node(t, OpKind::Add, {node(t, OpKind::Mul, {p.loss, constant(t, 1 - ls, dt)}),
                                       node(t, OpKind::Mul, {smooth, constant(t, ls / static_cast<double>(*n_classes), dt)})});
  return reduce_items(t, loss, p, o.reduction);
}

}  // namespace aotrace::embed::ops
