// Random numbers (randn, rand, *_like, randint, bernoulli, dropout in training mode): Random ops
// of the graph, drawn by the counter-based generator every backend shares (ir::philox_sample)
// from the state the runtime passes each call (Graph::rng_input). Not torch's generator: the
// values differ from eager's, their distribution does not.
#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

void refuse_generator(Translator& t, const CallArgs& a, const char* what) {
  if (!is_none(a.kw("generator")))
    unsupported(t, std::string(what) + "(generator=...)",
                "seed the bundle's generator through the runtime (Entry::manual_seed) instead");
}

ValueId random_of(Translator& t, ir::Shape shape, DType dtype, const char* distribution) {
  if (!ir::is_floating(dtype))
    user_error(std::string("random numbers of dtype ") + std::string(ir::dtype_torch_name(dtype)) +
                   ": only floating dtypes (torch raises here too)",
               t.loc());
  ir::Attrs attrs;
  attrs.set("shape", std::move(shape)).set("dtype", dtype).set("distribution", std::string(distribution))
      .set("stream", t.next_random_stream());
  return node(t, OpKind::Random, {t.rng_state()}, attrs);
}

}  // namespace

// torch.randn(*size, dtype=...) / torch.rand(*size, dtype=...)
VarRef random_factory(Translator& t, const CallArgs& a, bool normal) {
  const char* what = normal ? "torch.randn" : "torch.rand";
  refuse_generator(t, a, what);
  ir::Shape shape = shape_arg(t, shape_items(t, a, 0, "size"), what);
  return wrap_value(random_of(t, shape, dtype_arg(t, a.kw("dtype")).value_or(DType::f32), normal ? "normal" : "uniform"));
}

// torch.randn_like(x, dtype=...) / torch.rand_like(x, dtype=...)
VarRef random_like(Translator& t, const CallArgs& a, bool normal) {
  const char* what = normal ? "torch.randn_like" : "torch.rand_like";
  refuse_generator(t, a, what);
  const ir::TensorType type = type_of(t, tensor(t, a.get(0, "input"), what));
  return wrap_value(random_of(t, type.shape, dtype_arg(t, a.kw("dtype")).value_or(type.dtype), normal ? "normal" : "uniform"));
}

// torch.randint(low=0, high, size, dtype=torch.int64): floor(u * (high - low)) + low.
VarRef randint(Translator& t, const CallArgs& a) {
  refuse_generator(t, a, "torch.randint");
  int64_t low = 0, high = 0;
  VarRef size;
  if (a.args.size() >= 3) {
    low = int_arg(t, a.args[0], "randint low");
    high = int_arg(t, a.args[1], "randint high");
    size = a.args[2];
  } else if (a.args.size() == 2) {  // randint(high, size)
    high = int_arg(t, a.args[0], "randint high");
    size = a.args[1];
  } else {  // keywords
    low = is_none(a.kw("low")) ? 0 : int_arg(t, a.kw("low"), "randint low");
    high = int_arg(t, a.kw("high"), "randint high");
    size = a.kw("size");
  }
  if (high <= low) user_error("randint: high must exceed low (torch raises here too)", t.loc());
  auto items = sequence_items(t, size);
  if (!items) user_error("randint: size must be a tuple", t.loc());
  ValueId u = random_of(t, shape_arg(t, *items, "randint"), DType::f64, "uniform");
  ValueId v = node(t, OpKind::Floor, {node(t, OpKind::Mul, {u, constant(t, static_cast<double>(high - low), DType::f64)})});
  v = node(t, OpKind::Add, {v, constant(t, static_cast<double>(low), DType::f64)});
  return wrap_value(cast(t, v, dtype_arg(t, a.kw("dtype")).value_or(DType::i64)));
}

// torch.bernoulli(p) / p.bernoulli(): 1 where a uniform draw is below p, in p's dtype.
VarRef bernoulli(Translator& t, const CallArgs& a) {
  refuse_generator(t, a, "torch.bernoulli");
  ValueId p = tensor(t, a.get(0, "input"), "bernoulli");
  const ir::TensorType type = type_of(t, p);
  if (!is_none(a.get(1, "p"))) unsupported(t, "Tensor.bernoulli(p) with a scalar p", "use torch.bernoulli(torch.full_like(x, p))");
  ValueId u = random_of(t, type.shape, ir::is_floating(type.dtype) ? type.dtype : DType::f32, "uniform");
  return wrap_value(cast(t, node(t, OpKind::Lt, {u, cast(t, p, type_of(t, u).dtype)}), type.dtype));
}

// F.dropout(input, p=0.5, training=True, inplace=False) and its 1-3d / alpha forms: in eval mode
// the input; in training mode each element kept with probability 1 - p and scaled by 1 / (1 - p)
// (the feature forms drop whole channels, the alpha forms keep the mean: not in training mode).
VarRef dropout(Translator& t, const CallArgs& a) {
  VarRef input = a.get(0, "input");
  VarRef training = a.get(2, "training");
  if (!is_none(training) && !bool_arg(t, training, true)) return input;
  const double p = float_or(t, a, 1, "p", 0.5);
  if (p < 0 || p > 1) user_error("dropout probability has to be between 0 and 1, but got " + std::to_string(p), t.loc());
  ValueId x = tensor(t, input, "dropout");
  const ir::TensorType type = type_of(t, x);
  if (p == 0) return input;
  if (p == 1) return add(t, OpKind::Mul, {x, constant(t, 0, type.dtype)});
  ValueId keep = node(t, OpKind::Ge, {random_of(t, type.shape, type.dtype, "uniform"), constant(t, p, type.dtype)});
  ValueId scaled = node(t, OpKind::Mul, {x, constant(t, 1.0 / (1.0 - p), type.dtype)});
  VarRef r = add(t, OpKind::Where, {keep, scaled, constant(t, 0, type.dtype)});
  if (bool_arg(t, a.get(3, "inplace"), false)) return inplace(t, input, r, "dropout");
  return r;
}

// torch.multinomial(probs, k, replacement=False) / probs.multinomial(k): per row of probs ([n] or
// [rows, n]), k categories, category i drawn with probability p_i / total (never one of
// probability 0):
//   - one sample, or k with replacement: the first category whose running sum of probs passes
//     a uniform draw times the row's total (searchsorted right of the cumsum), k draws a row;
//   - k without replacement: the k largest keys log(u_i) / p_i, u_i uniform (Efraimidis and
//     Spirakis' weighted sampling: the same distribution as k draws one after the other, each
//     from the categories left, in the order they would be drawn; one topk). In float32 (float64
//     for float64 probs): a float16 u would round to 1. Where fewer than k categories have a
//     probability above 0 (torch raises), the rest are categories of probability 0.
VarRef multinomial(Translator& t, const CallArgs& call) {
  CallArgs a = bind_schema(t, "aten::multinomial", call);
  refuse_generator(t, a, "torch.multinomial");
  ValueId p = tensor(t, a.kw("self"), "multinomial");
  const ir::TensorType type = type_of(t, p);
  if (type.rank() != 1 && type.rank() != 2)
    user_error("multinomial: probabilities must be 1-D or 2-D, got " + type.str() + " (torch raises here too)", t.loc());
  const int64_t samples = int_arg(t, a.kw("num_samples"), "multinomial num_samples");
  const bool replacement = bool_arg(t, a.kw("replacement"), false);
  const int axis = type.rank() - 1;
  const int64_t n = static_dim(t, p, axis, "multinomial");
  if (n == 0) user_error("multinomial: no categories to draw from (torch raises here too)", t.loc());
  if (!ir::is_floating(type.dtype)) user_error("multinomial: probabilities must be floating (torch raises here too)", t.loc());
  if (samples <= 0)
    user_error("multinomial: cannot sample num_samples = " + std::to_string(samples) + " <= 0 samples (torch raises here too)",
               t.loc());
  if (!replacement && samples > n)
    user_error("multinomial: cannot sample " + std::to_string(samples) + " of " + std::to_string(n) +
                   " categories without replacement (torch raises here too)",
               t.loc(), "pass replacement=True, or num_samples <= " + std::to_string(n));
  if (samples == 1 || replacement) {
    ValueId cdf = node(t, OpKind::CumSum, {p}, ir::Attrs().set("axis", int64_t{axis}));
    ValueId total = node(t, OpKind::Slice, {cdf},
                         ir::Attrs().set("axis", int64_t{axis}).set("start", n - 1).set("end", n).set("step", int64_t{1}));
    ir::Shape draws = type_of(t, total).shape;
    draws.back() = ir::SymExpr(samples);
    ValueId u = random_of(t, draws, type.dtype, "uniform");
    ValueId chosen = node(t, OpKind::SearchSorted, {cdf, node(t, OpKind::Mul, {u, total})}, ir::Attrs().set("right", int64_t{1}));
    return wrap_value(node(t, OpKind::Minimum, {chosen, constant(t, static_cast<double>(n - 1), DType::i64)}));
  }
  const DType kt = type.dtype == DType::f64 ? DType::f64 : DType::f32;
  ValueId keys = node(t, OpKind::Div, {node(t, OpKind::Log, {random_of(t, type.shape, kt, "uniform")}), cast(t, p, kt)});
  ir::Attrs attrs;
  attrs.set("k", samples).set("axis", int64_t{axis}).set("largest", int64_t{1}).set("sorted", int64_t{1});
  return wrap_value(t.graph().add_node(OpKind::TopK, {keys}, attrs, t.loc())[1]);
}

}  // namespace aotrace::embed::ops
