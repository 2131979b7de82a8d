// Builders for the fused fast paths of torch 1.13's nn.MultiheadAttention and
// nn.TransformerEncoderLayer in eval mode under no_grad (torch._native_multi_head_attention,
// torch._transformer_encoder_layer_fwd), decomposed into linear, matmul, softmax, layer_norm
// and activations; plus torch.overrides.has_torch_function (always False for traced values).
#include "embed/torch_ops_builders.h"

#include <cmath>

namespace aotrace::embed::ops {

namespace {

ValueId linear_of(Translator& t, ValueId x, ValueId w, std::optional<ValueId> b) {
  std::vector<ValueId> ops{x, w};
  if (b) ops.push_back(*b);
  return node(t, OpKind::Linear, ops);
}

ValueId rows(Translator& t, ValueId w, int64_t start, int64_t end) {
  return node(t, OpKind::Slice, {w}, ir::Attrs().set("axis", int64_t{0}).set("start", start).set("end", end).set("step", int64_t{1}));
}

std::optional<ValueId> optional_tensor(Translator& t, const VarRef& v, const char* what) {
  if (is_none(v)) return std::nullopt;
  return tensor(t, v, what);
}

struct Attention {
  ValueId out;      // [B, L, E]
  ValueId weights;  // [B, H, L, S] (softmax probabilities)
};

// Multi-head attention of batch-first query [B, L, E] and key/value [B, S, E] with packed
// in-projection weight [3E, E] / bias [3E]. mask: bool/float, mask_type 1 = key padding [B, S],
// 0 = attention mask [L, S] (or broadcastable); True (or -inf) masks out.
Attention attention(Translator& t, ValueId q_in, ValueId k_in, ValueId v_in, int64_t E, int64_t H,
                    ValueId qkv_w, std::optional<ValueId> qkv_b, ValueId proj_w,
                    std::optional<ValueId> proj_b, std::optional<ValueId> mask, int64_t mask_type) {
  const ir::TensorType qt = type_of(t, q_in), kt = type_of(t, k_in);
  if (qt.rank() != 3) unsupported(t, "multi-head attention fast path with an unbatched input");
  if (E % H != 0) user_error("multi-head attention: embed_dim is not divisible by num_heads", t.loc());
  const int64_t D = E / H;
  auto proj = [&](ValueId x, int64_t part) {
    ValueId w = rows(t, qkv_w, part * E, (part + 1) * E);
    std::optional<ValueId> b;
    if (qkv_b) b = rows(t, *qkv_b, part * E, (part + 1) * E);
    return linear_of(t, x, w, b);
  };
  auto heads = [&](ValueId x, const ir::SymExpr& len) {  // [B, N, E] -> [B, H, N, D]
    ValueId r = reshape_to(t, x, {qt.shape[0], len, H, D});
    return permute_to(t, r, {0, 2, 1, 3});
  };
  DType dt = qt.dtype;
  ValueId q = heads(proj(q_in, 0), qt.shape[1]);
  ValueId k = heads(proj(k_in, 1), kt.shape[1]);
  ValueId v = heads(proj(v_in, 2), kt.shape[1]);
  q = node(t, OpKind::Mul, {q, constant(t, 1.0 / std::sqrt(static_cast<double>(D)), dt)});
  ValueId scores = node(t, OpKind::Matmul, {q, permute_to(t, k, {0, 1, 3, 2})});  // [B, H, L, S]
  if (mask) {
    ValueId m = *mask;
    const ir::TensorType mt = type_of(t, m);
    if (mask_type == 1 || (mt.rank() == 2 && mt.shape[0] == qt.shape[0] && !(mt.shape[0] == qt.shape[1])))
      m = reshape_to(t, m, {mt.shape[0], 1, 1, mt.shape[1]});  // key padding [B, S]
    if (mt.dtype == DType::b8)
      scores = node(t, OpKind::Where, {m, constant(t, -INFINITY, dt), scores});
    else
      scores = node(t, OpKind::Add, {scores, cast(t, m, dt)});
  }
  ValueId probs = node(t, OpKind::Softmax, {scores}, ir::Attrs().set("axis", int64_t{3}));
  ValueId ctx = node(t, OpKind::Matmul, {probs, v});  // [B, H, L, D]
  ctx = reshape_to(t, permute_to(t, ctx, {0, 2, 1, 3}), {qt.shape[0], qt.shape[1], E});
  return {linear_of(t, ctx, proj_w, proj_b), probs};
}


}  // namespace

// torch._native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight,
//   qkv_bias, proj_weight, proj_bias, mask=None, need_weights=True, average_attn_weights=True,
//   mask_type=None) -> (output, weights or None)
VarRef native_multi_head_attention(Translator& t, const CallArgs& a) {
  const char* what = "_native_multi_head_attention";
  ValueId q = tensor(t, a.get(0, "query"), what), k = tensor(t, a.get(1, "key"), what),
          v = tensor(t, a.get(2, "value"), what);
  int64_t E = int_arg(t, a.get(3, "embed_dim"), what), H = int_arg(t, a.get(4, "num_head"), what);
  int64_t mask_type = int_or(t, a, 12, "mask_type", 0);
  Attention r = attention(t, q, k, v, E, H, tensor(t, a.get(5, "qkv_weight"), what),
                          optional_tensor(t, a.get(6, "qkv_bias"), what), tensor(t, a.get(7, "proj_weight"), what),
                          optional_tensor(t, a.get(8, "proj_bias"), what), optional_tensor(t, a.get(9, "mask"), what),
                          mask_type);
  VarRef weights = t.constant(Py_None);
  if (bool_arg(t, a.get(10, "need_weights"), true)) {
    ValueId w = r.weights;
    if (bool_arg(t, a.get(11, "average_attn_weights"), true))
      w = node(t, OpKind::Mean, {w}, axes_attrs({1}, false));
    weights = wrap_value(w);
  }
  return sequence({wrap_value(r.out), weights});
}

// torch._transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias,
//   proj_weight, proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1,
//   norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None,
//   mask_type=None)
VarRef transformer_encoder_layer_fwd(Translator& t, const CallArgs& a) {
  const char* what = "_transformer_encoder_layer_fwd";
  ValueId src = tensor(t, a.get(0, "src"), what);
  int64_t E = int_arg(t, a.get(1, "embed_dim"), what), H = int_arg(t, a.get(2, "num_heads"), what);
  auto T = [&](size_t pos, const char* name) { return tensor(t, a.get(pos, name), what); };
  bool use_gelu = bool_arg(t, a.get(7, "use_gelu"), false), norm_first = bool_arg(t, a.get(8, "norm_first"), false);
  double eps = float_arg(t, a.get(9, "eps"), what);
  std::optional<ValueId> mask = optional_tensor(t, a.get(18, "mask"), what);
  int64_t mask_type = int_or(t, a, 19, "mask_type", 0);
  auto norm = [&](ValueId x, int which) {  // norm_weight_1/norm_bias_1 or norm_weight_2/norm_bias_2
    const bool first = which == 1;
    return node(t, OpKind::LayerNorm,
                {x, T(first ? 10 : 12, first ? "norm_weight_1" : "norm_weight_2"),
                 T(first ? 11 : 13, first ? "norm_bias_1" : "norm_bias_2")},
                ir::Attrs().set("normalized_ndim", int64_t{1}).set("eps", eps));
  };
  auto self_attention = [&](ValueId x) {
    return attention(t, x, x, x, E, H, T(3, "qkv_weight"), optional_tensor(t, a.get(4, "qkv_bias"), what),
                     T(5, "proj_weight"), optional_tensor(t, a.get(6, "proj_bias"), what), mask, mask_type).out;
  };
  auto feed_forward = [&](ValueId x) {
    ValueId h = linear_of(t, x, T(14, "ffn_weight_1"), T(15, "ffn_bias_1"));
    h = use_gelu ? node(t, OpKind::Gelu, {h}, ir::Attrs().set("approximate", std::string("none")))
                 : node(t, OpKind::Relu, {h});
    return linear_of(t, h, T(16, "ffn_weight_2"), T(17, "ffn_bias_2"));
  };
  ValueId x = src;
  if (norm_first) {
    x = node(t, OpKind::Add, {x, self_attention(norm(x, 1))});
    x = node(t, OpKind::Add, {x, feed_forward(norm(x, 2))});
  } else {
    x = norm(node(t, OpKind::Add, {x, self_attention(x)}), 1);
    x = norm(node(t, OpKind::Add, {x, feed_forward(x)}), 2);
  }
  return wrap_value(x);
}

VarRef has_torch_function(Translator& t, const CallArgs&) { return t.constant(Py_False); }

}  // namespace aotrace::embed::ops
