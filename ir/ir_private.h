// Private to ir/: helpers shared by the .cpp files of this folder. Not part of the ir.h contract.
#pragma once

#include <functional>
#include <string>

#include "ir/ir.h"

namespace aotrace::ir {

// Printing (graph.cpp).
std::string format_double(double v);  // shortest round-trip text, always "1.0"-like
std::string attr_value_str(const AttrValue& value);
std::string output_tree_str(const OutputTree& tree, const std::function<std::string(int)>& leaf);

}  // namespace aotrace::ir

namespace aotrace::ir {

using InferFn = std::function<std::vector<TensorType>(std::span<const TensorType>, const Attrs&)>;
using ReferenceFn =
    std::function<std::vector<HostTensor>(std::span<const HostTensor>, const Attrs&)>;
using DecomposeFn = std::function<std::vector<int32_t>(Graph&, std::span<const int32_t>,
                                                       const Attrs&, const SourceLoc&)>;

// Shape/type rules (op_rules*.cpp). `op` is the op's text name, used in messages.
std::string prefix(std::string_view op);  // "op: "
void check_same_device(std::string_view op, std::span<const TensorType> types);
void check_floating(std::string_view op, const TensorType& t);
void check_integral(std::string_view op, const TensorType& t);
void check_axes(std::string_view op, const TensorType& t, const std::vector<int64_t>& axes);
bool flag(const Attrs& attrs, const std::string& key);  // an int attr read as 0/1, default 0
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim);
// An int attr or a one-element Shape attr (symbolic slice ends).
SymExpr sym_attr(const Attrs& attrs, const std::string& key);
// Broadcast of two shapes with numpy rules; user_error naming `op` and both types on mismatch.
Shape broadcast_shapes(std::string_view op, const TensorType& a, const TensorType& b);
// A Shape attribute, also accepted as a list of ints.
Shape shape_attr(const Attrs& attrs, const std::string& key);
InferFn infer_full();
InferFn infer_unary(std::string_view op);
InferFn infer_unary_floating(std::string_view op);
InferFn infer_unary_integral(std::string_view op);
InferFn infer_binary(std::string_view op, bool true_division, bool integral_only = false);
InferFn infer_compare(std::string_view op);
InferFn infer_where();
InferFn infer_cast();
InferFn infer_reduce(std::string_view op, bool sum_widens_integers, bool needs_floating);
InferFn infer_matmul();
InferFn infer_reshape();
InferFn infer_permute();
InferFn infer_expand();
InferFn infer_linear();
InferFn infer_softmax(std::string_view op);
// op_rules_index.cpp: sources, arg-reductions, scans, slicing, indexing, sorting.
InferFn infer_arange();
InferFn infer_arg_reduce(std::string_view op);
InferFn infer_cumsum();
InferFn infer_scatter();
InferFn infer_slice();
InferFn infer_flip();
InferFn infer_pad();
InferFn infer_concat();
InferFn infer_gather();
InferFn infer_index_select();
InferFn infer_search_sorted();
InferFn infer_topk();
InferFn infer_tri(std::string_view op);
// op_rules_nn.cpp: convolution, pooling, normalisation, resizing.
InferFn infer_conv();
InferFn infer_conv_transpose();
InferFn infer_pool();
InferFn infer_winograd_input();
InferFn infer_winograd_output();
InferFn infer_clamp();
InferFn infer_var();
InferFn infer_layer_norm();
InferFn infer_group_norm();
InferFn infer_batch_norm();
InferFn infer_resize();
InferFn infer_adaptive_avg_pool();

// Reference implementations (op_reference*.cpp): plain loops computing in double. Each one's
// results are allocated with the types `infer` gives for the (concrete) operands.
using ReferenceLoop = std::function<void(std::span<const HostTensor>, const Attrs&,
                                         std::vector<HostTensor>&)>;
ReferenceFn with_results(InferFn infer, ReferenceLoop loop);
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
enum class ReduceKind : uint8_t { sum, max, min };
ReferenceFn reference_full(InferFn infer);
ReferenceFn reference_unary(InferFn infer, double (*fn)(double));
ReferenceFn reference_binary(InferFn infer, double (*fn)(double, double));
ReferenceFn reference_where(InferFn infer);
ReferenceFn reference_cast(InferFn infer);
ReferenceFn reference_reduce(InferFn infer, ReduceKind kind);
ReferenceFn reference_matmul(InferFn infer);
ReferenceFn reference_reshape(InferFn infer);
ReferenceFn reference_permute(InferFn infer);
ReferenceFn reference_expand(InferFn infer);
ReferenceFn reference_not(InferFn infer);
// op_reference_index.cpp
ReferenceFn reference_arange(InferFn infer);
// op_random.cpp
InferFn infer_random();
ReferenceFn reference_random(InferFn infer);
ReferenceFn reference_arg_reduce(InferFn infer, bool is_max);
ReferenceFn reference_cumsum(InferFn infer);
ReferenceFn reference_scatter(InferFn infer);
ReferenceFn reference_slice(InferFn infer);
ReferenceFn reference_flip(InferFn infer);
ReferenceFn reference_pad(InferFn infer);
ReferenceFn reference_concat(InferFn infer);
ReferenceFn reference_gather(InferFn infer);
ReferenceFn reference_index_select(InferFn infer);
ReferenceFn reference_search_sorted(InferFn infer);
ReferenceFn reference_topk(InferFn infer);
// op_reference_nn.cpp
ReferenceFn reference_conv(InferFn infer);
ReferenceFn reference_pool(InferFn infer);
ReferenceFn reference_winograd_input(InferFn infer);
ReferenceFn reference_winograd_output(InferFn infer);

// Decompositions of the composites into primitives (op_decompose.cpp).
DecomposeFn decompose_linear();
DecomposeFn decompose_mean();
DecomposeFn decompose_softmax();
DecomposeFn decompose_log_softmax();
// op_decompose_nn.cpp
DecomposeFn decompose_conv_transpose();
DecomposeFn decompose_gelu();
DecomposeFn decompose_silu();
DecomposeFn decompose_hardswish();
DecomposeFn decompose_hardsigmoid();
DecomposeFn decompose_leaky_relu();
DecomposeFn decompose_elu();
DecomposeFn decompose_softplus();
DecomposeFn decompose_clamp();
DecomposeFn decompose_var();
DecomposeFn decompose_layer_norm();
DecomposeFn decompose_group_norm();
DecomposeFn decompose_batch_norm();
DecomposeFn decompose_tril();
DecomposeFn decompose_triu();
// op_decompose_resize.cpp
DecomposeFn decompose_resize();
DecomposeFn decompose_adaptive_avg_pool();

// A small builder over a graph at one location, used by the decompositions so that their
// formulas read like the math.
struct Emit {
  Graph& g;
  const SourceLoc& loc;

  ValueId op(OpKind k, std::vector<ValueId> operands, Attrs attrs = {}) {
    return g.add(k, std::move(operands), std::move(attrs), loc);
  }
  DType dtype(ValueId v) const { return g.type(v).dtype; }
  ValueId c(double v, DType dtype) { return g.constant(v, dtype, loc); }
  ValueId c(double v, ValueId like) { return c(v, dtype(like)); }
  ValueId add(ValueId a, ValueId b) { return op(OpKind::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(OpKind::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(OpKind::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(OpKind::Div, {a, b}); }
  ValueId cast(ValueId v, DType dtype) { return op(OpKind::Cast, {v}, Attrs().set("dtype", dtype)); }
  ValueId mean(ValueId x, std::vector<int64_t> axes) {
    return op(OpKind::Mean, {x}, Attrs().set("axes", std::move(axes)).set("keepdim", int64_t{1}));
  }
  ValueId reshape(ValueId x, Shape shape) {
    return op(OpKind::Reshape, {x}, Attrs().set("shape", std::move(shape)));
  }
  ValueId arange(int64_t n, DType dtype) {
    Attrs a;
    a.set("shape", Shape{n}).set("start", 0.0).set("step", 1.0).set("dtype", dtype);
    return op(OpKind::Arange, {}, a);
  }
  ValueId select(ValueId x, ValueId index, int64_t axis) {
    return op(OpKind::IndexSelect, {x, index}, Attrs().set("axis", axis));
  }
};

// The concrete type of a host tensor (cpu, static shape).
TensorType host_type(const HostTensor& t);

}  // namespace aotrace::ir
