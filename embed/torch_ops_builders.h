// Private to embed/: the builders of the torch op table, one function per torch op family,
// grouped by file (torch_ops_elementwise.cpp, torch_ops_shape.cpp, torch_ops_reduce.cpp,
// torch_ops_nn.cpp, torch_ops_attention.cpp). The table itself is in torch_ops.cpp.
#pragma once

#include "embed/torch_ops_args.h"

namespace aotrace::embed::ops {

// torch_ops_elementwise.cpp
VarRef unary_op(Translator&, const CallArgs&, OpKind);
VarRef logical_not(Translator&, const CallArgs&);
VarRef bitwise_not(Translator&, const CallArgs&);
VarRef binary_op(Translator&, const CallArgs&, OpKind);
VarRef divide(Translator&, const CallArgs&);
VarRef rsub(Translator&, const CallArgs&);
VarRef logical_binary(Translator&, const CallArgs&, OpKind);
VarRef where(Translator&, const CallArgs&);
VarRef clamp_with(Translator&, const VarRef& input, const VarRef& lo, const VarRef& hi);
VarRef clamp(Translator&, const CallArgs&);
VarRef clamp_min(Translator&, const CallArgs&);
VarRef clamp_max(Translator&, const CallArgs&);
VarRef relu(Translator&, const CallArgs&);
VarRef gelu(Translator&, const CallArgs&);
VarRef silu(Translator&, const CallArgs&);
VarRef hardswish(Translator&, const CallArgs&);
VarRef hardsigmoid(Translator&, const CallArgs&);
VarRef leaky_relu(Translator&, const CallArgs&);
VarRef elu(Translator&, const CallArgs&);
VarRef softplus(Translator&, const CallArgs&);
VarRef hardtanh(Translator&, const CallArgs&);
VarRef relu6(Translator&, const CallArgs&);
VarRef to(Translator&, const CallArgs&);
VarRef type_as(Translator&, const CallArgs&);
VarRef tensor_type(Translator&, const CallArgs&);
VarRef cast_to(Translator&, const CallArgs&, DType);
VarRef full_factory(Translator&, const CallArgs&, double value);  // zeros, ones, empty
VarRef full(Translator&, const CallArgs&);
VarRef like_factory(Translator&, const CallArgs&, double value);  // zeros_like, ...
VarRef full_like(Translator&, const CallArgs&);
VarRef new_factory(Translator&, const CallArgs&, double value);   // new_zeros, ...
VarRef new_full(Translator&, const CallArgs&);
VarRef arange(Translator&, const CallArgs&);
VarRef tensor_literal(Translator&, const CallArgs&);
VarRef new_tensor(Translator&, const CallArgs&);

// torch_ops_shape.cpp
VarRef reshape(Translator&, const CallArgs&);
VarRef view_as(Translator&, const CallArgs&);
VarRef flatten(Translator&, const CallArgs&);
VarRef unflatten(Translator&, const CallArgs&);
VarRef permute(Translator&, const CallArgs&);
VarRef transpose(Translator&, const CallArgs&);
VarRef transpose_2d(Translator&, const CallArgs&);
VarRef squeeze(Translator&, const CallArgs&);
VarRef unsqueeze(Translator&, const CallArgs&);
VarRef expand(Translator&, const CallArgs&);
VarRef expand_as(Translator&, const CallArgs&);
VarRef repeat(Translator&, const CallArgs&);
VarRef cat(Translator&, const CallArgs&);
VarRef stack(Translator&, const CallArgs&);
VarRef split(Translator&, const CallArgs&);
VarRef chunk(Translator&, const CallArgs&);
VarRef unbind(Translator&, const CallArgs&);
VarRef narrow(Translator&, const CallArgs&);
VarRef select(Translator&, const CallArgs&);
VarRef getitem(Translator&, const CallArgs&);
VarRef setitem(Translator&, const CallArgs&);  // x[index] = value
VarRef clone(Translator&, const CallArgs&);
// torch_ops_index.cpp: indexing by integer tensors over several dims, and assignment through them.
struct AdvancedIndex {
  ValueId flat = -1;      // x with the indexed dims first, flattened into one: [N, rest...]
  ValueId linear = -1;    // i64 [numel(B)]: the linear index into the N positions
  ir::Shape batch, rest;  // B, the broadcast shape of the index tensors; the other dims of x
  ir::SymExpr positions;  // N
  std::vector<int> dims;  // the indexed dims of x, in order
  bool adjacent = true;   // consecutive: B replaces them in place (else B goes first)
};
AdvancedIndex advanced_index(Translator&, ValueId x, const std::vector<std::pair<int, ValueId>>& indices);
ValueId advanced_result(Translator&, const AdvancedIndex& ix, ValueId gathered);
ValueId advanced_getitem(Translator&, ValueId x, const std::vector<std::pair<int, ValueId>>& indices);
// x with x[indices] = value (accumulate: x[indices] += value, duplicates summed, as index_put_).
ValueId advanced_setitem(Translator&, ValueId x, const std::vector<std::pair<int, ValueId>>& indices, ValueId value,
                         bool accumulate = false);
VarRef index_put(Translator&, const CallArgs&);  // torch.index_put / Tensor.index_put(_)
VarRef gather(Translator&, const CallArgs&);
VarRef index_select(Translator&, const CallArgs&);
VarRef flip(Translator&, const CallArgs&);
VarRef pad(Translator&, const CallArgs&);
VarRef tril(Translator&, const CallArgs&);
VarRef triu(Translator&, const CallArgs&);
VarRef masked_fill(Translator&, const CallArgs&);
VarRef embedding(Translator&, const CallArgs&);
VarRef identity(Translator&, const CallArgs&);

// torch_ops_reduce.cpp
VarRef sum(Translator&, const CallArgs&);
VarRef mean(Translator&, const CallArgs&);
VarRef amax(Translator&, const CallArgs&);
VarRef amin(Translator&, const CallArgs&);
VarRef max(Translator&, const CallArgs&);
VarRef min(Translator&, const CallArgs&);
VarRef argmax(Translator&, const CallArgs&);
VarRef argmin(Translator&, const CallArgs&);
VarRef var(Translator&, const CallArgs&);
VarRef std_(Translator&, const CallArgs&);
VarRef all(Translator&, const CallArgs&);
VarRef any(Translator&, const CallArgs&);
VarRef cumsum(Translator&, const CallArgs&);
VarRef topk(Translator&, const CallArgs&);
VarRef softmax(Translator&, const CallArgs&);
VarRef log_softmax(Translator&, const CallArgs&);

// torch_ops_nn.cpp
VarRef matmul(Translator&, const CallArgs&);
VarRef linear(Translator&, const CallArgs&);
VarRef einsum(Translator&, const CallArgs&);
VarRef conv(Translator&, const CallArgs&, int spatial);
VarRef conv_transpose(Translator&, const CallArgs&, int spatial);
VarRef max_pool(Translator&, const CallArgs&, int spatial, bool with_indices);
VarRef adaptive_max_pool(Translator&, const CallArgs&, int spatial);
VarRef avg_pool(Translator&, const CallArgs&, int spatial);
VarRef adaptive_avg_pool(Translator&, const CallArgs&, int spatial);
VarRef batch_norm(Translator&, const CallArgs&);
VarRef layer_norm(Translator&, const CallArgs&);
VarRef group_norm(Translator&, const CallArgs&);
VarRef instance_norm(Translator&, const CallArgs&);
VarRef interpolate(Translator&, const CallArgs&);
VarRef dropout(Translator&, const CallArgs&);

// torch_ops_attention.cpp
VarRef native_multi_head_attention(Translator&, const CallArgs&);
VarRef transformer_encoder_layer_fwd(Translator&, const CallArgs&);
VarRef transformer_encoder(Translator&, const CallArgs&);  // nn.TransformerEncoder.forward
VarRef has_torch_function(Translator&, const CallArgs&);

// torch_ops_composite.cpp
enum class FloatClass : uint8_t { NaN, Inf, Finite };
VarRef float_class(Translator&, const CallArgs&, FloatClass);  // isnan, isinf, isfinite
VarRef log2(Translator&, const CallArgs&);
VarRef trunc(Translator&, const CallArgs&);
VarRef round(Translator&, const CallArgs&);
VarRef fmod(Translator&, const CallArgs&);
VarRef embedding_bag(Translator&, const CallArgs&);
VarRef recurrent(Translator&, const CallArgs&);  // nn.LSTM / nn.GRU / nn.RNN forward
// torch.lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell; mode "LSTM", "GRU", "RNN_TANH", "RNN_RELU"
VarRef recurrent_cell(Translator&, const CallArgs&, const char* mode);
// torch_ops_math.cpp
VarRef sign(Translator&, const CallArgs&);
VarRef log1p(Translator&, const CallArgs&);
VarRef expm1(Translator&, const CallArgs&);
VarRef reciprocal(Translator&, const CallArgs&);
VarRef square(Translator&, const CallArgs&);
VarRef tan(Translator&, const CallArgs&);
VarRef hyperbolic(Translator&, const CallArgs&, bool cosine);
VarRef exp2(Translator&, const CallArgs&);
VarRef erfc(Translator&, const CallArgs&);
VarRef softsign(Translator&, const CallArgs&);
VarRef mish(Translator&, const CallArgs&);
VarRef logsigmoid(Translator&, const CallArgs&);
VarRef norm(Translator&, const CallArgs&);
VarRef cosine_similarity(Translator&, const CallArgs&);
VarRef one_hot(Translator&, const CallArgs&);
VarRef sort(Translator&, const CallArgs&, bool indices_only);
VarRef roll(Translator&, const CallArgs&);
VarRef diff(Translator&, const CallArgs&);
VarRef repeat_interleave(Translator&, const CallArgs&);
VarRef logical_xor(Translator&, const CallArgs&);
VarRef logsumexp(Translator&, const CallArgs&);
VarRef celu(Translator&, const CallArgs&);
VarRef threshold(Translator&, const CallArgs&);
VarRef addc(Translator&, const CallArgs&, bool divide);  // addcmul, addcdiv
VarRef lerp(Translator&, const CallArgs&);
VarRef zero_inplace(Translator&, const CallArgs&);
VarRef element_size(Translator&, const CallArgs&);
VarRef weight_norm(Translator&, const CallArgs&);
VarRef log10(Translator&, const CallArgs&);
VarRef shift(Translator&, const CallArgs&, bool left);  // << and >>
VarRef meshgrid(Translator&, const CallArgs&);
VarRef index_fill(Translator&, const CallArgs&);
VarRef index_fill_inplace(Translator&, const CallArgs&);
VarRef aten_slice(Translator&, const CallArgs&);
VarRef tensor_unfold(Translator&, const CallArgs&);  // Tensor.unfold (sliding windows)
VarRef native_layer_norm(Translator&, const CallArgs&);
VarRef nansum(Translator&, const CallArgs&);
VarRef count_nonzero(Translator&, const CallArgs&);
VarRef msort(Translator&, const CallArgs&);
VarRef tensordot(Translator&, const CallArgs&);
// torch_ops_random.cpp
VarRef random_factory(Translator&, const CallArgs&, bool normal);
VarRef random_like(Translator&, const CallArgs&, bool normal);
VarRef randint(Translator&, const CallArgs&);
VarRef bernoulli(Translator&, const CallArgs&);
VarRef multinomial(Translator&, const CallArgs&);
VarRef bitwise_xor(Translator&, const CallArgs&);
VarRef add_matmul(Translator&, const CallArgs&, bool batched);  // addmm, baddbmm
VarRef glu(Translator&, const CallArgs&);
VarRef pixel_shuffle(Translator&, const CallArgs&, bool unshuffle);
VarRef fill_inplace(Translator&, const CallArgs&);
VarRef copy_inplace(Translator&, const CallArgs&);
VarRef requires_grad_(Translator&, const CallArgs&);
VarRef upsample(Translator&, const CallArgs&, bool bilinear);  // F.upsample_nearest/_bilinear
VarRef slice_scatter(Translator&, const CallArgs&);

// torch_ops_losses.cpp
VarRef nll_loss(Translator&, const CallArgs&);
VarRef cross_entropy(Translator&, const CallArgs&);
VarRef mse_loss(Translator&, const CallArgs&);
VarRef l1_loss(Translator&, const CallArgs&);
VarRef smooth_l1_loss(Translator&, const CallArgs&, bool huber);  // smooth_l1_loss, huber_loss
VarRef binary_cross_entropy(Translator&, const CallArgs&);
VarRef binary_cross_entropy_with_logits(Translator&, const CallArgs&);
VarRef kl_div(Translator&, const CallArgs&);
VarRef margin_ranking_loss(Translator&, const CallArgs&);
VarRef cosine_embedding_loss(Translator&, const CallArgs&);
// torch_ops_linalg.cpp
VarRef broadcast_tensors(Translator&, const CallArgs&);
VarRef outer(Translator&, const CallArgs&);
VarRef mv(Translator&, const CallArgs&);
VarRef dot(Translator&, const CallArgs&);  // dot, vdot (real dtypes)
VarRef trace(Translator&, const CallArgs&);
// The diagonal of dims dim1, dim2 of x (normalised), appended as its last dim (torch.diagonal).
ValueId diagonal_of(Translator&, ValueId x, int64_t offset, int dim1, int dim2);
VarRef diagonal(Translator&, const CallArgs&);
VarRef diag(Translator&, const CallArgs&);
VarRef diag_embed(Translator&, const CallArgs&);
VarRef rot90(Translator&, const CallArgs&);
VarRef prelu(Translator&, const CallArgs&);
VarRef nan_to_num(Translator&, const CallArgs&);
VarRef frac(Translator&, const CallArgs&);
VarRef cdist(Translator&, const CallArgs&);
VarRef pairwise_distance(Translator&, const CallArgs&);
VarRef bilinear(Translator&, const CallArgs&);
// torch_ops_scatter.cpp
VarRef scatter(Translator&, const CallArgs&, bool add);  // scatter, scatter_add
// self with src (the index's extent of it) written (accumulate: added) at index along dim, in
// order (a scatter op); `what` names the torch call in errors.
ValueId scatter_into(Translator& t, ValueId self, int dim, ValueId index, ValueId src, bool accumulate, const char* what);
VarRef index_add(Translator&, const CallArgs&);
VarRef take_along_dim(Translator&, const CallArgs&);
VarRef searchsorted(Translator&, const CallArgs&, bool bucketize);  // searchsorted, bucketize
VarRef var_mean(Translator&, const CallArgs&, bool take_sqrt);  // var_mean, std_mean
VarRef median(Translator&, const CallArgs&);
VarRef kthvalue(Translator&, const CallArgs&);
VarRef cumulative_extreme(Translator&, const CallArgs&, bool is_max);  // cummax, cummin
VarRef prod(Translator&, const CallArgs&);
VarRef cumprod(Translator&, const CallArgs&);
// torch_ops_spatial.cpp
VarRef conv3d(Translator&, const CallArgs&);
VarRef pool3d(Translator&, const CallArgs&, bool max);  // F.max_pool3d, F.avg_pool3d
VarRef im2col(Translator&, const CallArgs&);  // F.unfold
VarRef col2im(Translator&, const CallArgs&);  // F.fold

}  // namespace aotrace::embed::ops
