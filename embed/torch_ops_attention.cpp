// Builders for the fused fast paths of torch 1.13's nn.MultiheadAttention and
// nn.TransformerEncoderLayer in eval mode under no_grad (torch._native_multi_head_attention,
// torch._transformer_encoder_layer_fwd), decomposed into linear, matmul, softmax, layer_norm
// and activations; nn.TransformerEncoder.forward, whose nested-tensor fast path is decided at
// compile time; plus torch.overrides.has_torch_function (always False for traced values).
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

namespace {

// The compile-time value of a module attribute (or other constant) that decides the path, as an
// assumption on its source (L['self'].layers[0].norm_first == False).
PyRef decided_by(Translator& t, const VarRef& v) {
  t.note_constant_use(v);
  return t.to_python(v);
}

bool decided_truth(Translator& t, const VarRef& v) {
  PyRef o = decided_by(t, v);
  const int r = o ? PyObject_IsTrue(o.get()) : 1;
  if (r < 0) t.raise_pending("truth value");
  return r == 1;
}

// Why torch 1.13's TransformerEncoder.forward keeps src a padded tensor (its own words), or ""
// when it converts it to a nested tensor. Its conditions are read in its order, so that the
// assumptions are those eager's reads make. `needs_left_aligned` is set when the conversion also
// needs src_key_padding_mask to be left-aligned (mask_check), which only its values can tell.
std::string why_not_nested(Translator& t, const VarRef& self, const VarRef& first, ValueId src,
                           const VarRef& mask, const VarRef& pad, bool& needs_left_aligned) {
  auto attr = [&](const VarRef& v, const char* name) { return t.attribute(v, name); };
  needs_left_aligned = false;
  auto* layer = as<ModuleVar>(first);
  if (!layer || !is_instance_of(layer->module.get(), "torch.nn", "TransformerEncoderLayer"))
    return "self.layers[0] was not TransformerEncoderLayer";
  if (decided_truth(t, attr(first, "norm_first"))) return "self.layers[0].norm_first was True";
  if (decided_truth(t, attr(first, "training"))) return "self.layers[0] was in training mode";
  const VarRef self_attn = attr(first, "self_attn");
  if (!decided_truth(t, attr(self_attn, "batch_first"))) return "self.layers[0].self_attn.batch_first was not True";
  if (!decided_truth(t, attr(self_attn, "_qkv_same_embed_dim")))
    return "self.layers[0].self_attn._qkv_same_embed_dim was not True";
  if (!decided_truth(t, attr(first, "activation_relu_or_gelu")))
    return "self.layers[0].activation_relu_or_gelu was not True";
  PyRef eps1 = decided_by(t, attr(attr(first, "norm1"), "eps"));
  PyRef eps2 = decided_by(t, attr(attr(first, "norm2"), "eps"));
  if (!eps1 || !eps2 || PyObject_RichCompareBool(eps1.get(), eps2.get(), Py_EQ) != 1)
    return "self.layers[0].norm1.eps was not equal to self.layers[0].norm2.eps";
  if (type_of(t, src).rank() != 3) return "input not batched";
  if (!decided_truth(t, attr(self, "enable_nested_tensor"))) return "enable_nested_tensor was not True";
  if (is_none(pad)) return "src_key_padding_mask was None";
  PyObject* module = as<ModuleVar>(self)->module.get();
  needs_left_aligned = !PyObject_HasAttrString(module, "mask_check") || decided_truth(t, attr(self, "mask_check"));
  // Traced tensors are never nested.
  if (!is_none(mask)) return "src_key_padding_mask and mask were both supplied";
  PyRef heads = decided_by(t, attr(self_attn, "num_heads"));
  if (!heads || !PyLong_Check(heads.get()) || PyLong_AsLongLong(heads.get()) % 2 == 1) return "num_head is odd";
  PyRef is_autocast_enabled = getattr(import("torch").get(), "is_autocast_enabled");
  PyRef autocast = PyRef::steal(PyObject_CallNoArgs(is_autocast_enabled.get()));
  if (!autocast) PyErr_Clear();
  if (!autocast || PyObject_IsTrue(autocast.get()) != 0) return "autocast is enabled";
  // Traced tensors have no torch function, are on a CPU or CUDA device and need no gradient.
  return "";
}

}  // namespace

namespace {

// The graph input index whose value is `v`, or -1 when an op computed it.
int input_index_of(Translator& t, ValueId v) {
  const std::vector<ir::Graph::Input>& inputs = t.graph().inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].value == v) return static_cast<int>(i);
  return -1;
}

}  // namespace

// nn.TransformerEncoder.forward(self, src, mask=None, src_key_padding_mask=None) as torch 1.13
// runs it: the layers in turn, then self.norm. Its nested-tensor fast path (eval mode, batch
// first, a key-padding mask and no mask, ...) is decided here at compile time: where it keeps
// src padded, the layers are inlined as written. Where it converts src to a nested tensor, the
// nested tensor is the padded one with its mask: the layers run on src with the key-padding
// mask, and the padded positions become 0 as to_padded_tensor(0.) makes them. What eager also
// does there depends on the mask's values: it takes the path only for a left-aligned mask, and
// it cuts the output to the longest unpadded row. A PaddingMask guard checks on every call that
// the mask is left-aligned with a full row, where both paths give src's length; so the mask
// must be an input of the entry (a mask computed in the graph is a graph break, with the fix).
VarRef transformer_encoder(Translator& t, const CallArgs& a) {
  const char* what = "nn.TransformerEncoder";
  auto or_none = [&](VarRef v) { return v ? v : t.constant(Py_None); };
  const VarRef self = a.get(0, "self"), src = a.get(1, "src"), mask = or_none(a.get(2, "mask"));
  VarRef pad = or_none(a.get(3, "src_key_padding_mask"));
  AOT_CHECK(as<ModuleVar>(self), "transformer_encoder: not called on a module");
  if (!is_none(pad)) {
    const DType dt = type_of(t, tensor(t, pad, "src_key_padding_mask of nn.TransformerEncoder")).dtype;
    if (dt != DType::b8 && !ir::is_floating(dt))
      user_error("nn.TransformerEncoder: only bool and floating types of key_padding_mask are supported (torch "
                 "raises this AssertionError too)",
                 t.loc());
  }
  const VarRef items = t.iterate(t.attribute(self, "layers"));
  auto* iterator = as<IteratorVar>(items);
  if (!iterator) unsupported(t, "nn.TransformerEncoder whose layers are not a module list", "keep self.layers an nn.ModuleList");
  const std::vector<VarRef> layers = iterator->items;
  if (layers.empty()) user_error("nn.TransformerEncoder without layers: self.layers[0] raises IndexError", t.loc());
  bool needs_left_aligned = false;
  const bool nested = why_not_nested(t, self, layers[0], tensor(t, src, what), mask, pad, needs_left_aligned).empty();
  std::optional<ValueId> padded;  // the nested path's mask, as bool (nonzero = padded)
  if (nested) {
    const ValueId pad_value = tensor(t, pad, what);
    const int input = t.resumed() ? -1 : input_index_of(t, pad_value);
    const ir::TensorType pt = type_of(t, pad_value);
    if (input < 0 || pt.rank() != 2)
      t.graph_break(
          "data-dependent shape",
          std::string("nn.TransformerEncoder takes torch 1.13's nested-tensor fast path here") +
              (needs_left_aligned ? " when src_key_padding_mask is left-aligned (each row's padding at its end)" : "") +
              ": its output is then cut to the longest unpadded sequence, a length known only from the mask's "
              "values. aotrace checks that length on every call when the mask is an input of the entry; this one " +
              (pt.rank() != 2 ? "is not a [batch, seq] mask" : "is computed in the graph"),
          "pass src_key_padding_mask as an input of the entry, or build the encoder with enable_nested_tensor=False "
          "(or set it to False before compiling): the output then keeps src's sequence length, with eager's values "
          "at unpadded positions; out.masked_fill(src_key_padding_mask.unsqueeze(-1), 0.0) gives eager's zeros at "
          "the padded ones");
    ir::Guard g;
    g.kind = ir::Guard::Kind::PaddingMask;
    g.input = input;
    g.dtype = pt.dtype;
    g.source = t.graph().inputs[static_cast<size_t>(input)].source;
    g.origin = t.loc();
    t.capture().guards.push_back(g);
    padded = cast(t, pad_value, DType::b8);
    pad = wrap_value(*padded);
  }
  VarRef output = src;
  for (const VarRef& layer : layers)
    output = t.call(layer, {output}, {{"src_mask", mask}, {"src_key_padding_mask", pad}});
  if (padded) {  // output.to_padded_tensor(0.): zeros where the mask pads
    const ValueId out = tensor(t, output, what);
    const ir::TensorType ot = type_of(t, out), mt = type_of(t, *padded);
    const ValueId m = reshape_to(t, *padded, {mt.shape[0], mt.shape[1], ir::SymExpr(1)});
    output = wrap_value(node(t, OpKind::Where, {m, constant(t, 0.0, ot.dtype), out}));
  }
  const VarRef norm = t.attribute(self, "norm");
  if (!is_none(norm)) output = t.call(norm, {output}, {});
  return output;
}

VarRef has_torch_function(Translator& t, const CallArgs&) { return t.constant(Py_False); }

}  // namespace aotrace::embed::ops
