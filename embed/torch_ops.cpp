// The torch op table: every torch callable, Tensor method and operator that capture maps onto
// the IR, in one list (`table()` below). Builders (torch_ops_*.cpp, declared in
// torch_ops_builders.h) turn call arguments into graph nodes; composites (linear, softmax,
// gelu, layer_norm, ...) are IR ops decomposed by lowering, not here.
#include "embed/torch_ops.h"

#include <map>
#include <optional>
#include <set>

#include "embed/embed.h"
#include "embed/torch_ops_builders.h"
#include "embed/translator.h"

namespace aotrace::embed {

using ir::OpKind;

namespace {

using namespace ops;

VarRef size(Translator& t, const CallArgs& a) {
  VarRef shape = tensor_attribute(t, a.get(0, "input"), "shape");
  VarRef dim = a.get(1, "dim");
  if (is_none(dim)) return shape;
  const int rank = static_cast<int>(as<SequenceVar>(shape)->items.size());
  return as<SequenceVar>(shape)->items[static_cast<size_t>(normalise_dim(t, int_arg(t, dim, "size"), rank, "size"))];
}

VarRef dim(Translator& t, const CallArgs& a) { return tensor_attribute(t, a.get(0, "input"), "ndim"); }

VarRef is_floating_point(Translator& t, const CallArgs& a) {
  bool f = ir::is_floating(type_of(t, tensor(t, a.get(0, "input"), "is_floating_point")).dtype);
  return t.constant(f ? Py_True : Py_False);
}

// torch._shape_as_tensor(x): x's shape as an int64 tensor.
VarRef shape_as_tensor(Translator& t, const CallArgs& a) {
  VarRef shape = tensor_attribute(t, a.get(0, "input"), "shape");
  auto* seq = as<SequenceVar>(shape);
  VarRef as_tuple = std::make_shared<SequenceVar>(SequenceVar::Kind::Tuple, seq->items);
  return tensor_literal(t, CallArgs{{as_tuple}, {{"dtype", t.constant(getattr(import("torch").get(), "int64").get())}}});
}

VarRef item(Translator& t, const CallArgs& a) {
  if (PyRef v = t.weight_item(a.get(0, "self"))) return t.constant(v.get());
  value_read(t, ".item()");
}
VarRef tolist(Translator& t, const CallArgs&) { value_read(t, ".tolist()"); }
VarRef numpy(Translator& t, const CallArgs&) { value_read(t, ".numpy()"); }

// Builders parametrised by an op kind or a constant, as plain function pointers.
#define UNARY(K) [](Translator& t, const CallArgs& a) { return unary_op(t, a, OpKind::K); }
#define BINARY(K) [](Translator& t, const CallArgs& a) { return binary_op(t, a, OpKind::K); }
#define WITH(F, ARG) [](Translator& t, const CallArgs& a) { return F(t, a, ARG); }
// The in-place method form (x.add_(y), x.relu_()) of a builder: see ops::inplace.
#define IN_PLACE(B) [](Translator& t, const CallArgs& a) { \
    auto build = B;                                         \
    return inplace(t, a.get(0, "self"), build(t, a), "method"); }

// ---------------------------------------------------------------------------------------------
// The table: Python paths of functions, and Tensor method names, per builder.
struct Entry {
  std::vector<const char*> functions;  // "torch.relu", "torch.nn.functional.relu"
  std::vector<const char*> methods;    // "relu" (Tensor.relu, also found as torch.Tensor.relu)
  OpBuilder build;
  Aliasing aliasing = Aliasing::None;
};
constexpr Aliasing kView = Aliasing::View;
constexpr Aliasing kMaybeView = Aliasing::MaybeView;
constexpr Aliasing kIfUnchanged = Aliasing::IfUnchanged;

#define F "torch.nn.functional."
const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      // Linear algebra
      {{"torch.matmul", "torch.mm", "torch.bmm", "torch.spmm"}, {"matmul", "mm", "bmm", "__matmul__"}, matmul},
      {{F "linear"}, {}, linear},
      {{"torch.einsum"}, {}, einsum},
      // Arithmetic
      {{"torch.add"}, {"add", "__add__", "__radd__"}, BINARY(Add)},
      {{}, {"add_", "__iadd__"}, IN_PLACE(BINARY(Add))},
      {{"torch.sub", "torch.subtract"}, {"sub", "subtract", "__sub__"}, BINARY(Sub)},
      {{}, {"sub_", "__isub__"}, IN_PLACE(BINARY(Sub))},
      {{"torch.rsub"}, {"__rsub__"}, rsub},
      {{"torch.mul", "torch.multiply"}, {"mul", "multiply", "__mul__", "__rmul__"}, BINARY(Mul)},
      {{}, {"mul_", "__imul__"}, IN_PLACE(BINARY(Mul))},
      {{"torch.div", "torch.divide"}, {"div", "divide"}, divide},
      {{"torch.true_divide"}, {"true_divide", "__truediv__"}, BINARY(Div)},
      {{}, {"div_", "__itruediv__"}, IN_PLACE(divide)},
      {{"torch.floor_divide"}, {"floor_divide", "__floordiv__"}, BINARY(FloorDiv)},
      {{"torch.remainder"}, {"remainder", "__mod__"}, BINARY(Remainder)},
      {{"torch.pow"}, {"pow", "__pow__"}, BINARY(Pow)},
      {{"torch.maximum", "torch.fmax"}, {"maximum"}, BINARY(Maximum)},
      {{"torch.minimum", "torch.fmin"}, {"minimum"}, BINARY(Minimum)},
      {{"torch.eq"}, {"eq", "__eq__"}, BINARY(Eq)},
      {{"torch.ne", "torch.not_equal"}, {"ne", "not_equal", "__ne__"}, BINARY(Ne)},
      {{"torch.lt", "torch.less"}, {"lt", "less", "__lt__"}, BINARY(Lt)},
      {{"torch.le", "torch.less_equal"}, {"le", "less_equal", "__le__"}, BINARY(Le)},
      {{"torch.gt", "torch.greater"}, {"gt", "greater", "__gt__"}, BINARY(Gt)},
      {{"torch.ge", "torch.greater_equal"}, {"ge", "greater_equal", "__ge__"}, BINARY(Ge)},
      {{"torch.logical_and"}, {"logical_and"}, WITH(logical_binary, OpKind::And)},
      {{"torch.logical_or"}, {"logical_or"}, WITH(logical_binary, OpKind::Or)},
      {{"torch.bitwise_and"}, {"bitwise_and", "__and__"}, BINARY(And)},
      {{"torch.bitwise_or"}, {"bitwise_or", "__or__"}, BINARY(Or)},
      {{"torch.logical_not"}, {"logical_not"}, logical_not},
      {{"torch.bitwise_not"}, {"bitwise_not", "__invert__"}, bitwise_not},
      {{"torch.where"}, {"where"}, where},
      {{"torch.clamp", "torch.clip"}, {"clamp", "clip"}, clamp},
      {{}, {"clamp_", "clip_"}, IN_PLACE(clamp)},
      {{"torch.clamp_min"}, {"clamp_min"}, clamp_min},
      {{"torch.clamp_max"}, {"clamp_max"}, clamp_max},
      // Math functions
      {{"torch.exp"}, {"exp"}, UNARY(Exp)},
      {{"torch.log"}, {"log"}, UNARY(Log)},
      {{"torch.tanh", F "tanh"}, {"tanh"}, UNARY(Tanh)},
      {{"torch.sigmoid", F "sigmoid"}, {"sigmoid"}, UNARY(Sigmoid)},
      {{}, {"sigmoid_"}, IN_PLACE(UNARY(Sigmoid))},
      {{"torch.sqrt"}, {"sqrt"}, UNARY(Sqrt)},
      {{"torch.rsqrt"}, {"rsqrt"}, UNARY(Rsqrt)},
      {{"torch.abs"}, {"abs", "__abs__"}, UNARY(Abs)},
      {{"torch.neg", "torch.negative"}, {"neg", "negative", "__neg__"}, UNARY(Neg)},
      {{"torch.erf", "torch.special.erf"}, {"erf"}, UNARY(Erf)},
      {{"torch.floor"}, {"floor"}, UNARY(Floor)},
      {{"torch.ceil"}, {"ceil"}, UNARY(Ceil)},
      {{"torch.sin"}, {"sin"}, UNARY(Sin)},
      {{"torch.cos"}, {"cos"}, UNARY(Cos)},
      // Activations
      {{"torch.relu", F "relu"}, {"relu"}, relu},
      {{"torch.relu_", F "relu_"}, {"relu_"}, IN_PLACE(UNARY(Relu))},
      {{F "relu6"}, {}, relu6},
      {{F "hardtanh"}, {}, hardtanh},
      {{F "gelu"}, {}, gelu},
      {{F "silu"}, {}, silu},
      {{F "hardswish"}, {}, hardswish},
      {{F "hardsigmoid"}, {}, hardsigmoid},
      {{F "leaky_relu"}, {}, leaky_relu},
      {{F "elu"}, {}, elu},
      {{F "softplus"}, {}, softplus},
      {{"torch.softmax", F "softmax"}, {"softmax"}, softmax},
      {{"torch.log_softmax", F "log_softmax"}, {"log_softmax"}, log_softmax},
      // dtype conversions
      {{}, {"to"}, to, kIfUnchanged},
      {{}, {"type_as"}, type_as, kIfUnchanged},
      {{}, {"type"}, tensor_type, kIfUnchanged},
      {{}, {"float"}, WITH(cast_to, ir::DType::f32), kIfUnchanged},
      {{}, {"double"}, WITH(cast_to, ir::DType::f64), kIfUnchanged},
      {{}, {"half"}, WITH(cast_to, ir::DType::f16), kIfUnchanged},
      {{}, {"bfloat16"}, WITH(cast_to, ir::DType::bf16), kIfUnchanged},
      {{}, {"long"}, WITH(cast_to, ir::DType::i64), kIfUnchanged},
      {{}, {"int"}, WITH(cast_to, ir::DType::i32), kIfUnchanged},
      {{}, {"bool"}, WITH(cast_to, ir::DType::b8), kIfUnchanged},
      // Factories
      {{"torch.zeros", "torch.empty"}, {}, WITH(full_factory, 0.0)},
      {{"torch.ones"}, {}, WITH(full_factory, 1.0)},
      {{"torch.full"}, {}, full},
      {{"torch.zeros_like", "torch.empty_like"}, {}, WITH(like_factory, 0.0)},
      {{"torch.ones_like"}, {}, WITH(like_factory, 1.0)},
      {{"torch.full_like"}, {}, full_like},
      {{}, {"new_zeros", "new_empty"}, WITH(new_factory, 0.0)},
      {{}, {"new_ones"}, WITH(new_factory, 1.0)},
      {{}, {"new_full"}, new_full},
      {{"torch.arange"}, {}, arange},
      {{"torch.tensor", "torch.as_tensor"}, {}, tensor_literal},
      {{}, {"new_tensor"}, new_tensor},
      // Shapes and indexing
      {{}, {"view"}, reshape, kView},
      {{"torch.reshape"}, {"reshape"}, reshape, kMaybeView},
      {{}, {"view_as"}, view_as, kView},
      {{}, {"reshape_as"}, view_as, kMaybeView},
      {{"torch.flatten"}, {"flatten"}, flatten, kMaybeView},
      {{"torch.unflatten"}, {"unflatten"}, unflatten, kView},
      {{"torch.permute"}, {"permute"}, permute, kView},
      {{"torch.transpose", "torch.swapaxes"}, {"transpose", "swapaxes"}, transpose, kView},
      {{"torch.t"}, {"t"}, transpose_2d, kView},
      {{"torch.squeeze"}, {"squeeze"}, squeeze, kView},
      {{"torch.unsqueeze"}, {"unsqueeze"}, unsqueeze, kView},
      {{}, {"expand"}, expand, kMaybeView},
      {{}, {"expand_as"}, expand_as, kMaybeView},
      {{}, {"repeat"}, repeat},
      {{"torch.cat", "torch.concat"}, {}, cat},
      {{"torch.stack"}, {}, stack},
      {{"torch.split"}, {"split"}, split, kView},
      {{"torch.chunk"}, {"chunk"}, chunk, kView},
      {{"torch.unbind"}, {"unbind"}, unbind, kView},
      {{"torch.narrow"}, {"narrow"}, narrow, kView},
      {{"torch.select"}, {"select"}, select, kView},
      {{}, {"__getitem__"}, getitem, Aliasing::IndexView},
      {{"torch.index_put"}, {"index_put"}, index_put},
      {{}, {"index_put_"}, IN_PLACE(index_put)},
      {{}, {"__setitem__"}, setitem},
      {{"torch.gather"}, {"gather"}, gather},
      {{"torch.index_select"}, {"index_select"}, index_select},
      {{"torch.flip"}, {"flip"}, flip},
      {{F "pad"}, {}, pad},
      {{"torch.tril"}, {"tril"}, tril},
      {{"torch.triu"}, {"triu"}, triu},
      {{"torch.masked_fill"}, {"masked_fill"}, masked_fill},
      // Compositions of graph ops (torch_ops_composite.cpp)
      {{"torch.isnan"}, {"isnan"}, WITH(float_class, FloatClass::NaN)},
      {{"torch.isinf"}, {"isinf"}, WITH(float_class, FloatClass::Inf)},
      {{"torch.isfinite"}, {"isfinite"}, WITH(float_class, FloatClass::Finite)},
      {{"torch.log2"}, {"log2"}, log2},
      {{"torch.trunc", "torch.fix"}, {"trunc", "fix"}, trunc},
      {{"torch.round"}, {"round", "__round__"}, round},
      {{"torch.fmod"}, {"fmod"}, fmod},
      {{F "embedding_bag"}, {}, embedding_bag},
      {{"torch.nn.LSTM.forward", "torch.nn.GRU.forward", "torch.nn.RNN.forward"}, {}, recurrent},
      // Math compositions (torch_ops_math.cpp)
      {{"torch.sign"}, {"sign"}, sign},
      {{"torch.log1p", "torch.special.log1p"}, {"log1p"}, log1p},
      {{"torch.expm1", "torch.special.expm1"}, {"expm1"}, expm1},
      {{"torch.reciprocal"}, {"reciprocal"}, reciprocal},
      {{"torch.square"}, {"square"}, square},
      {{"torch.tan"}, {"tan"}, tan},
      {{"torch.sinh"}, {"sinh"}, WITH(hyperbolic, false)},
      {{"torch.cosh"}, {"cosh"}, WITH(hyperbolic, true)},
      {{"torch.exp2", "torch.special.exp2"}, {"exp2"}, exp2},
      {{"torch.erfc", "torch.special.erfc"}, {"erfc"}, erfc},
      {{F "softsign"}, {}, softsign},
      {{F "mish"}, {}, mish},
      {{F "logsigmoid"}, {}, logsigmoid},
      {{"torch.logsumexp"}, {"logsumexp"}, logsumexp},
      {{F "celu", "torch.celu"}, {"celu"}, celu},
      {{F "threshold", "torch.threshold"}, {}, threshold},
      {{"torch.addcmul"}, {"addcmul"}, [](Translator& t, const CallArgs& a) { return addc(t, a, false); }},
      {{"torch.addcdiv"}, {"addcdiv"}, [](Translator& t, const CallArgs& a) { return addc(t, a, true); }},
      {{"torch.lerp"}, {"lerp"}, lerp},
      {{}, {"zero_"}, zero_inplace},
      {{}, {"element_size"}, element_size},
      {{"torch._weight_norm"}, {}, weight_norm},
      {{"torch.log10"}, {"log10"}, log10},
      {{"torch.bitwise_left_shift"}, {"bitwise_left_shift", "__lshift__"}, [](Translator& t, const CallArgs& a) { return shift(t, a, true); }},
      {{"torch.bitwise_right_shift"}, {"bitwise_right_shift", "__rshift__"}, [](Translator& t, const CallArgs& a) { return shift(t, a, false); }},
      {{"torch.meshgrid", "torch.functional.meshgrid"}, {}, meshgrid},
      {{"torch.index_fill"}, {"index_fill"}, index_fill},
      {{}, {"index_fill_"}, index_fill_inplace},
      {{"torch.ops.aten.slice"}, {}, aten_slice},
      {{"torch.nansum"}, {"nansum"}, nansum},
      {{"torch.count_nonzero"}, {"count_nonzero"}, count_nonzero},
      {{"torch.msort"}, {"msort"}, msort},
      {{"torch.tensordot", "torch.functional.tensordot"}, {}, tensordot},
      {{}, {"unfold"}, tensor_unfold, kMaybeView},
      {{"torch.ops.aten.native_layer_norm"}, {}, native_layer_norm},
      {{"torch.lstm_cell"}, {}, [](Translator& t, const CallArgs& a) { return recurrent_cell(t, a, "LSTM"); }},
      {{"torch.gru_cell"}, {}, [](Translator& t, const CallArgs& a) { return recurrent_cell(t, a, "GRU"); }},
      {{"torch.rnn_tanh_cell"}, {}, [](Translator& t, const CallArgs& a) { return recurrent_cell(t, a, "RNN_TANH"); }},
      {{"torch.rnn_relu_cell"}, {}, [](Translator& t, const CallArgs& a) { return recurrent_cell(t, a, "RNN_RELU"); }},
      {{"torch.norm", "torch.linalg.vector_norm"}, {"norm"}, norm},
      {{"torch.cosine_similarity", F "cosine_similarity"}, {}, cosine_similarity},
      {{F "one_hot"}, {}, one_hot},
      {{"torch.sort"}, {"sort"}, WITH(sort, false)},
      {{"torch.argsort"}, {"argsort"}, WITH(sort, true)},
      {{"torch.roll"}, {"roll"}, roll},
      {{"torch.diff"}, {"diff"}, diff},
      {{"torch.repeat_interleave"}, {"repeat_interleave"}, repeat_interleave},
      {{"torch.logical_xor"}, {"logical_xor"}, logical_xor},
      // Random numbers (torch_ops_random.cpp)
      {{"torch.randn"}, {}, WITH(random_factory, true)},
      {{"torch.rand"}, {}, WITH(random_factory, false)},
      {{"torch.randn_like"}, {}, WITH(random_like, true)},
      {{"torch.rand_like"}, {}, WITH(random_like, false)},
      {{"torch.randint"}, {}, randint},
      {{"torch.bernoulli"}, {"bernoulli"}, bernoulli},
      {{"torch.multinomial"}, {"multinomial"}, multinomial},
      {{"torch.searchsorted"}, {}, WITH(searchsorted, false)},
      {{"torch.bucketize"}, {}, WITH(searchsorted, true)},
      {{"torch.bitwise_xor"}, {"bitwise_xor", "__xor__"}, bitwise_xor},
      {{"torch.addmm"}, {"addmm"}, WITH(add_matmul, false)},
      {{"torch.baddbmm"}, {"baddbmm"}, WITH(add_matmul, true)},
      {{F "glu"}, {}, glu},
      {{"torch.pixel_shuffle", F "pixel_shuffle"}, {}, WITH(pixel_shuffle, false)},
      {{"torch.pixel_unshuffle", F "pixel_unshuffle"}, {}, WITH(pixel_shuffle, true)},
      {{}, {"fill_"}, fill_inplace},
      {{}, {"copy_"}, copy_inplace},
      {{}, {"requires_grad_"}, requires_grad_},
      {{F "upsample_nearest"}, {}, WITH(upsample, false)},
      {{F "upsample_bilinear"}, {}, WITH(upsample, true)},
      {{"torch.slice_scatter"}, {"slice_scatter"}, slice_scatter},
      {{}, {"masked_fill_"}, IN_PLACE(masked_fill)},
      {{F "embedding"}, {}, embedding},
      {{}, {"contiguous", "detach"}, identity},
      {{"torch.clone"}, {"clone"}, clone},
      // Losses (torch_ops_losses.cpp): the F.* wrappers are inlined down to these
      {{F "nll_loss"}, {}, nll_loss},
      {{F "cross_entropy"}, {}, cross_entropy},
      {{"torch._C._nn.mse_loss"}, {}, mse_loss},
      {{"torch._C._nn.l1_loss"}, {}, l1_loss},
      {{"torch._C._nn.smooth_l1_loss"}, {}, WITH(smooth_l1_loss, false)},
      {{"torch._C._nn.huber_loss"}, {}, WITH(smooth_l1_loss, true)},
      {{"torch._C._nn.binary_cross_entropy"}, {}, binary_cross_entropy},
      {{"torch.binary_cross_entropy_with_logits"}, {}, binary_cross_entropy_with_logits},
      {{"torch.kl_div"}, {}, kl_div},
      {{"torch.margin_ranking_loss"}, {}, margin_ranking_loss},
      {{"torch.cosine_embedding_loss"}, {}, cosine_embedding_loss},
      // Linear algebra and elementwise compositions (torch_ops_linalg.cpp)
      {{"torch.broadcast_tensors"}, {}, broadcast_tensors},
      {{"torch.outer", "torch.ger"}, {"outer", "ger"}, outer},
      {{"torch.mv"}, {"mv"}, mv},
      {{"torch.dot", "torch.vdot"}, {"dot", "vdot"}, dot},
      {{"torch.trace"}, {"trace"}, trace},
      {{"torch.diagonal"}, {"diagonal"}, diagonal, kView},
      {{"torch.diag"}, {"diag"}, diag},
      {{"torch.diag_embed"}, {"diag_embed"}, diag_embed},
      {{"torch.rot90"}, {"rot90"}, rot90},
      {{"torch.prelu", F "prelu"}, {"prelu"}, prelu},
      {{"torch.nan_to_num"}, {"nan_to_num"}, nan_to_num},
      {{}, {"nan_to_num_"}, IN_PLACE(nan_to_num)},
      {{"torch.frac"}, {"frac"}, frac},
      {{"torch.cdist"}, {}, cdist},
      {{"torch.pairwise_distance", F "pairwise_distance"}, {}, pairwise_distance},
      {{"torch.bilinear", F "bilinear"}, {}, bilinear},
      // Scatters and multi-step reductions (torch_ops_scatter.cpp)
      {{"torch.scatter"}, {"scatter"}, WITH(scatter, false)},
      {{}, {"scatter_"}, IN_PLACE(WITH(scatter, false))},
      {{"torch.scatter_add"}, {"scatter_add"}, WITH(scatter, true)},
      {{}, {"scatter_add_"}, IN_PLACE(WITH(scatter, true))},
      {{"torch.index_add"}, {"index_add"}, index_add},
      {{}, {"index_add_"}, IN_PLACE(index_add)},
      {{"torch.take_along_dim"}, {"take_along_dim"}, take_along_dim},
      {{"torch.var_mean"}, {}, WITH(var_mean, false)},
      {{"torch.std_mean"}, {}, WITH(var_mean, true)},
      {{"torch.median"}, {"median"}, median},
      {{"torch.kthvalue"}, {"kthvalue"}, kthvalue},
      {{"torch.cummax"}, {"cummax"}, WITH(cumulative_extreme, true)},
      {{"torch.cummin"}, {"cummin"}, WITH(cumulative_extreme, false)},
      {{"torch.prod"}, {"prod"}, prod},
      {{"torch.cumprod"}, {"cumprod"}, cumprod},
      // 3-D convolution and pooling, unfold/fold (torch_ops_spatial.cpp)
      {{"torch.conv3d", F "conv3d"}, {}, conv3d},
      {{F "max_pool3d", "torch.max_pool3d"}, {}, WITH(pool3d, true)},
      {{F "avg_pool3d"}, {}, WITH(pool3d, false)},
      {{"torch._C._nn.im2col"}, {}, im2col},
      {{"torch._C._nn.col2im"}, {}, col2im},
      // Reductions and scans
      {{"torch.sum"}, {"sum"}, sum},
      {{"torch.mean"}, {"mean"}, mean},
      {{"torch.amax"}, {"amax"}, amax},
      {{"torch.amin"}, {"amin"}, amin},
      {{"torch.max"}, {"max"}, max},
      {{"torch.min"}, {"min"}, min},
      {{"torch.argmax"}, {"argmax"}, argmax},
      {{"torch.argmin"}, {"argmin"}, argmin},
      {{"torch.var"}, {"var"}, var},
      {{"torch.std"}, {"std"}, std_},
      {{"torch.all"}, {"all"}, all},
      {{"torch.any"}, {"any"}, any},
      {{"torch.cumsum"}, {"cumsum"}, cumsum},
      {{"torch.topk"}, {"topk"}, topk},
      // Neural-network functions
      {{"torch.conv1d", F "conv1d"}, {}, WITH(conv, 1)},
      {{"torch.conv2d", F "conv2d"}, {}, WITH(conv, 2)},
      {{"torch.conv_transpose1d", F "conv_transpose1d"}, {}, WITH(conv_transpose, 1)},
      {{"torch.conv_transpose2d", F "conv_transpose2d"}, {}, WITH(conv_transpose, 2)},
      {{F "max_pool1d", "torch.max_pool1d"}, {}, [](Translator& t, const CallArgs& a) { return max_pool(t, a, 1, false); }},
      {{F "max_pool2d", "torch.max_pool2d"}, {}, [](Translator& t, const CallArgs& a) { return max_pool(t, a, 2, false); }},
      {{F "max_pool1d_with_indices", "torch.max_pool1d_with_indices"}, {},
       [](Translator& t, const CallArgs& a) { return max_pool(t, a, 1, true); }},
      {{F "max_pool2d_with_indices", "torch._C._nn.max_pool2d_with_indices"}, {},
       [](Translator& t, const CallArgs& a) { return max_pool(t, a, 2, true); }},
      {{F "adaptive_max_pool1d"}, {}, WITH(adaptive_max_pool, 1)},
      {{F "adaptive_max_pool2d"}, {}, WITH(adaptive_max_pool, 2)},
      {{F "avg_pool1d", "torch.avg_pool1d"}, {}, WITH(avg_pool, 1)},
      {{F "avg_pool2d"}, {}, WITH(avg_pool, 2)},
      {{F "adaptive_avg_pool1d", "torch.adaptive_avg_pool1d"}, {}, WITH(adaptive_avg_pool, 1)},
      {{F "adaptive_avg_pool2d"}, {}, WITH(adaptive_avg_pool, 2)},
      {{F "adaptive_avg_pool3d"}, {}, WITH(adaptive_avg_pool, 3)},
      {{F "batch_norm"}, {}, batch_norm},
      {{F "layer_norm"}, {}, layer_norm},
      {{F "group_norm"}, {}, group_norm},
      {{F "instance_norm"}, {}, instance_norm},
      {{F "interpolate", F "upsample"}, {}, interpolate},
      {{F "dropout", F "dropout1d", F "dropout2d", F "dropout3d", F "alpha_dropout",
        F "feature_alpha_dropout"}, {}, dropout},
      {{"torch._native_multi_head_attention"}, {}, native_multi_head_attention},
      {{"torch._transformer_encoder_layer_fwd"}, {}, transformer_encoder_layer_fwd},
      {{"torch.nn.TransformerEncoder.forward"}, {}, transformer_encoder},
      {{"torch.overrides.has_torch_function", "torch.overrides.has_torch_function_variadic",
        "torch.overrides.has_torch_function_unary"}, {}, has_torch_function},
      // Tensor metadata and value reads
      {{}, {"size"}, size},
      {{}, {"dim", "ndimension"}, dim},
      {{"torch._shape_as_tensor"}, {}, shape_as_tensor},
      {{"torch.is_floating_point"}, {"is_floating_point"}, is_floating_point},
      {{}, {"item"}, item},
      {{}, {"tolist"}, tolist},
      {{}, {"numpy"}, numpy},
  };
  return t;
}
#undef F

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


// torch.ops.aten.NAME (its overload packet and every overload but the out= ones) and
// torch._C._nn.NAME are the same ops as torch.NAME, Tensor.NAME or F.NAME, with the same
// positional arguments: they map to the same builder. `names` are tried in order of preference.
void add_aten_aliases(Resolved& r, const std::vector<std::pair<std::string, const Entry*>>& names) {
  PyRef ops = getattr(getattr(import("torch").get(), "ops").get(), "aten");
  PyRef nn = getattr(import("torch._C").get(), "_nn");
  auto add = [&](PyRef obj, const std::string& name, const Entry* e) {
    if (!obj) return;
    const OpSignatures* signature = signature_for(name, obj.get());
    if (!signature) return;  // an out= overload (div.out_mode): writes into a given tensor, not traced
    if (r.by_object.emplace(obj.get(), TorchOp{name, e->build, e->aliasing, signature, obj.get()}).second)
      r.keep.push_back(obj);
  };
  for (const auto& [name, build] : names) {
    add(attribute_or_null(nn.get(), name.c_str()), "torch._C._nn." + name, build);
    PyRef packet = attribute_or_null(ops.get(), name.c_str());
    if (!packet) continue;
    add(packet, "torch.ops.aten." + name, build);
    PyRef overloads = PyRef::steal(PyObject_CallMethod(packet.get(), "overloads", nullptr));
    if (!overloads) {
      PyErr_Clear();
      continue;
    }
    for (Py_ssize_t i = 0; i < PyList_Size(overloads.get()); ++i) {
      const std::string overload = py_str(PyList_GetItem(overloads.get(), i));
      if (overload == "out" || overload.find("_out") != std::string::npos) continue;
      add(attribute_or_null(packet.get(), overload.c_str()), "torch.ops.aten." + name + "." + overload, build);
    }
  }
}

void init_torch_ops() {
  static const std::string kFunctional = "torch.nn.functional.";
  Resolved& r = resolved();
  if (!r.by_method.empty() || !r.by_object.empty()) return;
  PyRef tensor_type = getattr(import("torch").get(), "Tensor");
  // aten names in order of preference: torch.NAME, then Tensor.NAME, then F.NAME.
  // An entry named torch.ops.aten.NAME (an aten op with no torch.* form) comes first.
  static const std::string kAten = "torch.ops.aten.";
  std::vector<std::pair<std::string, const Entry*>> aten_only, torch_names, method_names, functional_names;
  for (const Entry& e : table()) {
    for (const char* f : e.functions) {
      const std::string path = f;
      if (path.rfind(kAten, 0) == 0 && path.find('.', kAten.size()) == std::string::npos)
        aten_only.emplace_back(path.substr(kAten.size()), &e);
      if (path.rfind("torch.", 0) == 0 && path.find('.', 6) == std::string::npos)
        torch_names.emplace_back(path.substr(6), &e);
      else if (path.rfind(kFunctional, 0) == 0)
        functional_names.emplace_back(path.substr(kFunctional.size()), &e);
      PyRef obj = resolve_path(f);
      if (!obj) continue;  // not in this torch version
      r.by_object.emplace(obj.get(), TorchOp{f, e.build, e.aliasing, signature_for(f, obj.get()), obj.get()});
      r.keep.push_back(obj);
    }
    for (const char* m : e.methods) {
      if (m[0] != '_') method_names.emplace_back(m, &e);
      PyRef obj = attribute_or_null(tensor_type.get(), m);
      const OpSignatures* signature = signature_for(m, obj.get());
      r.by_method.emplace(m, TorchOp{std::string("Tensor.") + m, e.build, e.aliasing, signature, obj.get()});
      if (!obj) continue;
      r.by_object.emplace(obj.get(), TorchOp{std::string("torch.Tensor.") + m, e.build, e.aliasing, signature, obj.get()});
      r.keep.push_back(obj);
    }
  }
  std::vector<std::pair<std::string, const Entry*>> aten_names = aten_only;
  aten_names.insert(aten_names.end(), torch_names.begin(), torch_names.end());
  aten_names.insert(aten_names.end(), method_names.begin(), method_names.end());
  aten_names.insert(aten_names.end(), functional_names.begin(), functional_names.end());
  add_aten_aliases(r, aten_names);
}

std::vector<std::string> Interpreter::torch_callables_parsed_by_hand() {
  init_torch_ops();
  std::set<std::string> names;
  for (const auto& [obj, op] : resolved().by_object)
    if (!op.signature) names.insert(op.name);
  for (const auto& [name, op] : resolved().by_method)
    if (!op.signature) names.insert(op.name);
  return {names.begin(), names.end()};
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
  if (name == "__class__") return t.constant(getattr(import("torch").get(), "Tensor").get());  // as type(x)
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
  // Traced tensors are dense, strided, plain and need no gradient (capture runs under no_grad).
  if (name == "is_nested" || name == "requires_grad" || name == "is_sparse" || name == "is_quantized" ||
      name == "is_meta" || name == "is_xpu" || name == "is_mkldnn" || name == "is_vulkan" || name == "is_mps" ||
      name == "is_ipu" || name == "is_hpu" || name == "is_ort")
    return t.constant(Py_False);
  if (name == "is_leaf") return t.constant(Py_True);
  if (name == "grad" || name == "grad_fn") return t.constant(Py_None);
  if (name == "layout") return t.constant(getattr(import("torch").get(), "strided").get());
  if (name == "data") return v;  // the same values, without autograd (none at inference)
  if (name == "T" || name == "mT") {  // all dims reversed; the last two swapped
    std::vector<int64_t> perm;
    if (name == "T") {
      for (int i = type.rank() - 1; i >= 0; --i) perm.push_back(i);
    } else {
      if (type.rank() < 2) user_error("tensor.mT needs at least 2 dims, got " + type.str() + " (torch raises here too)", t.loc());
      for (int i = 0; i < type.rank(); ++i) perm.push_back(i);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    }
    VarRef r = add(t, OpKind::Permute, {tv->value}, ir::Attrs().set("perm", perm));
    share_memory(
        v, r, [name](Translator& t, const VarRef& base) { return tensor_attribute(t, base, name); },
        [name](Translator&, PyObject* base) { return attribute_or_null(base, name.c_str()); });
    return r;
  }
  return nullptr;
}

namespace {

// Whether x[index] is a view (ints, slices, None, ...), a copy (tensor or list indices) or, for
// bool indices, either.
Aliasing index_aliasing(Translator& t, const VarRef& index) {
  std::vector<VarRef> items{index};
  if (auto* seq = as<SequenceVar>(index); seq && seq->kind == SequenceVar::Kind::Tuple) items = seq->items;
  else if (auto* c = as<ConstVar>(index); c && PyTuple_Check(c->obj.get())) items = *sequence_items(t, index);
  Aliasing kind = Aliasing::View;
  for (const VarRef& i : items) {
    if (as<SliceVar>(i) || as<SymIntVar>(i)) continue;
    auto* c = as<ConstVar>(i);
    PyObject* o = c ? c->obj.get() : nullptr;
    if (o && PyBool_Check(o)) return Aliasing::MaybeView;
    if (o && (PyLong_Check(o) || PySlice_Check(o) || o == Py_None || o == Py_Ellipsis)) continue;
    kind = Aliasing::None;  // advanced indexing copies
  }
  return kind;
}

}  // namespace

namespace {

// The aten name of op `name`: "linear" of torch.nn.functional.linear, torch._C._nn.linear and
// torch.ops.aten.linear[.default], "mm" of Tensor.mm.
std::string aten_name(const std::string& name) {
  static const std::string kAten = "torch.ops.aten.";
  if (name.rfind(kAten, 0) == 0) return name.substr(kAten.size(), name.find('.', kAten.size()) - kAten.size());
  return name.substr(name.rfind('.') + 1);
}

// torch.autocast on the CPU, whose state is torch's own (capture ran the `with` block's
// __enter__ for real): its lower-precision ops take their floating tensor arguments (but
// float64 ones) in the autocast dtype, its float32 ones in float32; the others are left alone.
// torch 1.13's CPU lists (aten/src/ATen/autocast_mode.cpp), as far as capture has the ops;
// composites of listed ops (einsum, tensordot, multi_dot: matmuls) are listed too, as their
// matmuls are cast inside torch); conv_transpose is a float32 one on the CPU. prelu, mv, dot,
// bilinear, pools, norms and the rest are in neither.
// Test: capture case autocast_ops (compared with eager, dtypes included).
CallArgs autocast_args(Translator& t, const std::string& op_name, CallArgs a) {
  static const std::set<std::string> kLower = {"matmul", "__matmul__", "mm", "bmm", "linear", "addmm", "baddbmm",
                                               "addbmm", "conv1d", "conv2d", "conv3d", "einsum", "tensordot",
                                               "multi_dot", "chain_matmul"};
  static const std::set<std::string> kFloat32 = {"nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss",
                                                 "kl_div", "binary_cross_entropy", "prod", "cdist", "grid_sample",
                                                 "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "conv_transpose1d",
                                                 "conv_transpose2d", "conv_transpose3d"};
  const std::string op = aten_name(op_name);
  const bool lower = kLower.count(op) != 0;
  if (!lower && kFloat32.count(op) == 0) return a;
  PyRef torch = import("torch");
  PyRef enabled = PyRef::steal(PyObject_CallNoArgs(getattr(torch.get(), "is_autocast_cpu_enabled").get()));
  if (!enabled) internal_error("torch.is_autocast_cpu_enabled() raised: " + fetch_python_error());
  if (PyObject_IsTrue(enabled.get()) == 0) return a;
  DType to = DType::f32;
  if (lower) {
    PyRef dtype = PyRef::steal(PyObject_CallNoArgs(getattr(torch.get(), "get_autocast_cpu_dtype").get()));
    if (!dtype) internal_error("torch.get_autocast_cpu_dtype() raised: " + fetch_python_error());
    std::optional<DType> d = dtype_arg(t, t.constant(dtype.get()));
    if (!d) internal_error("torch.get_autocast_cpu_dtype() is not a dtype");
    to = *d;
  }
  // A tensor autocast casts (floating, not float64) as `to`; anything else as it is.
  auto cast_tensor = [&](const VarRef& v) -> VarRef {
    auto* tv = as<TensorVar>(v);
    if (tv == nullptr) return v;
    const DType d = type_of(t, tv->value).dtype;
    return ir::is_floating(d) && d != DType::f64 && d != to ? wrap_value(cast(t, tv->value, to)) : v;
  };
  auto cast_arg = [&](VarRef& v) {
    if (auto* seq = as<SequenceVar>(v)) {  // einsum's and multi_dot's operand lists
      std::vector<VarRef> items;
      for (const VarRef& item : seq->items) items.push_back(cast_tensor(item));
      if (items != seq->items) v = std::make_shared<SequenceVar>(seq->kind, std::move(items));
      return;
    }
    v = cast_tensor(v);
  };
  for (VarRef& v : a.args) cast_arg(v);
  for (auto& [name, v] : a.kwargs) cast_arg(v);
  return a;
}

}  // namespace

VarRef TorchOp::call(Translator& t, const CallArgs& call) const {
  const CallArgs a = autocast_args(t, name, bind_call(t, *this, call));
  VarRef result;
  try {
    result = build(t, a);
  } catch (const UserError& e) {
    // An op torch would raise on (x.view(3, -1) of 8 elements, x[5] of 2 rows), inside a try
    // block: torch's own exception, asked of torch on meta tensors, raised in the traced code.
    if (!t.in_try_block()) throw;
    PyRef exc = torch_exception(t, callable, call);
    if (!exc) throw;
    t.raise_python(exc, e.what(), e.hint(), true);
  }
  if (aliasing == Aliasing::None || a.args.empty() || !as<TensorVar>(a.args[0])) return result;
  if (aliasing == Aliasing::IfUnchanged) {  // torch returns `self` itself
    auto* tv = as<TensorVar>(result);
    return tv && tv->value == as<TensorVar>(a.args[0])->value ? a.args[0] : result;
  }
  Aliasing kind = aliasing;
  if (kind == Aliasing::IndexView) kind = index_aliasing(t, a.get(1, "indices"));
  if (kind == Aliasing::None) return result;
  auto link = [&](const VarRef& r, int item) {
    if (!as<TensorVar>(r) || r == a.args[0]) return;
    std::function<VarRef(Translator&, const VarRef&)> of;
    std::function<PyRef(Translator&, PyObject*)> of_real;
    if (kind == Aliasing::View && callable && !call.args.empty() && call.args[0] == a.args[0]) {
      CallArgs written = call;  // as the caller wrote it, for torch's own parser
      written.args[0] = nullptr;
      of_real = [fn = callable, written, item](Translator& t, PyObject* base) -> PyRef {
        PyRef r = call_for_real(fn, written, [&](const VarRef& v) {
          return v ? t.to_python(v) : PyRef::borrow(base);  // the base in written.args[0]
        });
        if (r && item >= 0) r = PyRef::steal(PySequence_GetItem(r.get(), item));
        if (!r) PyErr_Clear();
        return r;
      };
      CallArgs rest = a;
      rest.args[0] = nullptr;  // the base is held by the view record
      of = [op = this, rest, item](Translator& t, const VarRef& base) {
        CallArgs c = rest;
        c.args[0] = base;
        VarRef r = op->build(t, c);
        return item < 0 ? r : as<SequenceVar>(r)->items.at(static_cast<size_t>(item));
      };
    }
    share_memory(a.args[0], r, std::move(of), std::move(of_real));
  };
  if (auto* seq = as<SequenceVar>(result)) {  // split, chunk, unbind
    for (size_t i = 0; i < seq->items.size(); ++i) link(seq->items[i], static_cast<int>(i));
  } else {
    link(result, -1);
  }
  return result;
}

VarRef tensor_operator(Translator& t, const std::string& op, const VarRef& a, const VarRef& b) {
  static const std::map<std::string, OpKind> ops = {
      {"+", OpKind::Add}, {"-", OpKind::Sub},  {"*", OpKind::Mul},  {"/", OpKind::Div},
      {"**", OpKind::Pow}, {"<", OpKind::Lt},  {"<=", OpKind::Le},  {">", OpKind::Gt},
      {">=", OpKind::Ge}, {"==", OpKind::Eq},  {"!=", OpKind::Ne},  {"%", OpKind::Remainder},
      {"//", OpKind::FloorDiv}, {"&", OpKind::And}, {"|", OpKind::Or}};
  if (op == "neg") return add(t, OpKind::Neg, {tensor(t, a, "-")});
  if (op == "invert" || op == "~") return add(t, OpKind::Not, {tensor(t, a, "~")});
  if (op == "^") return bitwise_xor(t, CallArgs{{a, b}, {}});
  if (op == "<<" || op == ">>") return shift(t, CallArgs{{a, b}, {}}, op == "<<");
  if (op == "@") return add(t, OpKind::Matmul, {tensor(t, a, "@"), tensor(t, b, "@")});
  auto it = ops.find(op);
  if (it == ops.end())
    t.graph_break("torch callable with no op mapping", "operator " + op + " on tensors is not supported yet",
                  "use an equivalent torch function");
  return binary(t, it->second, a, b);
}

}  // namespace aotrace::embed
