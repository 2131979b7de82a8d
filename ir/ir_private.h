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

// Shape/type rules (op_rules.cpp). `op` is the op's text name, used in messages.
// Broadcast of two shapes with numpy rules; user_error naming `op` and both types on mismatch.
Shape broadcast_shapes(std::string_view op, const TensorType& a, const TensorType& b);
// A Shape attribute, also accepted as a list of ints.
Shape shape_attr(const Attrs& attrs, const std::string& key);
InferFn infer_full();
InferFn infer_unary(std::string_view op);
InferFn infer_binary(std::string_view op, bool true_division);
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

// Reference implementations (op_reference.cpp): plain loops computing in double. Each one's
// results are allocated with the types `infer` gives for the (concrete) operands.
ReferenceFn reference_full(InferFn infer);
ReferenceFn reference_unary(InferFn infer, double (*fn)(double));
ReferenceFn reference_binary(InferFn infer, double (*fn)(double, double));
ReferenceFn reference_where(InferFn infer);
ReferenceFn reference_cast(InferFn infer);
ReferenceFn reference_reduce(InferFn infer, bool is_max);
ReferenceFn reference_matmul(InferFn infer);
ReferenceFn reference_reshape(InferFn infer);
ReferenceFn reference_permute(InferFn infer);
ReferenceFn reference_expand(InferFn infer);

// Decompositions of the composites into primitives (op_decompose.cpp).
DecomposeFn decompose_linear();
DecomposeFn decompose_mean();
DecomposeFn decompose_softmax();
DecomposeFn decompose_log_softmax();

// The concrete type of a host tensor (cpu, static shape).
TensorType host_type(const HostTensor& t);

}  // namespace aotrace::ir
