// Shape and type rules of the sources, arg-reductions, scans, slicing, indexing and sorting ops
// (the `infer` column of ops.cpp for arange, argmax/argmin, cumsum, slice, flip, pad, concat,
// gather, index_select, topk, tril/triu). Tested by tests/unit/ir/shape_rules_ops_test.cpp.
#include <algorithm>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

using Types = std::span<const TensorType>;

int64_t axis_attr(std::string_view op, const TensorType& t, const Attrs& attrs) {
  int64_t axis = attrs.i("axis");
  if (axis < 0 || axis >= std::max(t.rank(), 1))
    user_error(prefix(op) + "axis " + std::to_string(axis) + " is out of range for " + t.str());
  return axis;
}

void check_index_dtype(std::string_view op, const TensorType& index) {
  if (index.dtype != DType::i64 && index.dtype != DType::i32)
    user_error(prefix(op) + "the index must be int64 or int32, got " + index.str());
}

}  // namespace

SymExpr sym_attr(const Attrs& attrs, const std::string& key) {
  auto it = attrs.items.find(key);
  if (it != attrs.items.end())
    if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  const Shape& s = attrs.shape(key);
  AOT_CHECK(s.size() == 1, "attr " + key + " must hold one dim");
  return s[0];
}

InferFn infer_arange() {
  return [](Types, const Attrs& attrs) {
    Shape shape = shape_attr(attrs, "shape");
    if (shape.size() != 1) internal_error("arange: shape must have one dim");
    if (shape[0].is_constant() && shape[0].constant() < 0)
      user_error("arange: negative length " + shape[0].str());
    attrs.f("start");
    attrs.f("step");
    return std::vector<TensorType>{{attrs.dtype("dtype"), Device{}, shape}};
  };
}

// argmax/argmin over exactly one axis; i64 result.
InferFn infer_arg_reduce(std::string_view op) {
  return [op](Types t, const Attrs& attrs) {
    const auto& axes = attrs.ints("axes");
    if (axes.size() != 1) internal_error(prefix(op) + "needs exactly one axis");
    check_axes(op, t[0], axes);
    if (t[0].dtype == DType::b8) user_error(prefix(op) + "is not defined for bool tensors");
    TensorType r = t[0];
    r.shape = reduced_shape(t[0].shape, axes, flag(attrs, "keepdim"));
    r.dtype = DType::i64;
    return std::vector<TensorType>{r};
  };
}

InferFn infer_cumsum() {
  return [](Types t, const Attrs& attrs) {
    axis_attr("cumsum", t[0], attrs);
    TensorType r = t[0];
    if (is_integral(r.dtype)) r.dtype = DType::i64;
    return std::vector<TensorType>{r};
  };
}

InferFn infer_scatter() {
  return [](Types t, const Attrs& attrs) {
    check_same_device("scatter", t);
    const TensorType &self = t[0], &index = t[1], &src = t[2];
    const int64_t axis = axis_attr("scatter", self, attrs);
    check_index_dtype("scatter", index);
    if (self.rank() == 0) user_error("scatter: self must have at least one dim, got " + self.str());
    if (index.rank() != self.rank() || src.rank() != self.rank())
      user_error("scatter: self " + self.str() + ", index " + index.str() + " and src " + src.str() +
                 " must have the same number of dims");
    if (src.dtype != self.dtype) user_error("scatter: src " + src.str() + " must have the dtype of self " + self.str());
    if (attrs.i("accumulate") != 0 && self.dtype == DType::b8) user_error("scatter: no accumulate for bool tensors");
    for (int d = 0; d < self.rank(); ++d) {
      const auto i = static_cast<size_t>(d);
      auto below_self = (self.shape[i] - index.shape[i]).as_constant();
      auto below_src = (src.shape[i] - index.shape[i]).as_constant();
      if ((d != axis && below_self && *below_self < 0) || (below_src && *below_src < 0))
        user_error("scatter: index " + index.str() + " is larger than " + (below_src && *below_src < 0 ? "src " + src.str() : "self " + self.str()) +
                   " in dim " + std::to_string(d));
    }
    return std::vector<TensorType>{self};
  };
}

InferFn infer_slice() {
  return [](Types t, const Attrs& attrs) {
    int64_t axis = axis_attr("slice", t[0], attrs);
    if (t[0].rank() == 0) user_error("slice: cannot slice a 0-d tensor " + t[0].str());
    int64_t start = attrs.i("start"), step = attrs.i("step");
    SymExpr end = sym_attr(attrs, "end");
    const SymExpr& dim = t[0].shape[static_cast<size_t>(axis)];
    if (step < 1) user_error("slice: step must be positive, got " + std::to_string(step));
    auto known_negative = [](const SymExpr& e) { return e.is_constant() && e.constant() < 0; };
    if (start < 0 || known_negative(end - start) || known_negative(dim - end))
      internal_error("slice: bounds not normalised: start " + std::to_string(start) + ", end " +
                     end.str() + " for " + t[0].str());
    TensorType r = t[0];
    r.shape[static_cast<size_t>(axis)] = floordiv(end - start + (step - 1), step);
    return std::vector<TensorType>{r};
  };
}

InferFn infer_flip() {
  return [](Types t, const Attrs& attrs) {
    check_axes("flip", t[0], attrs.ints("axes"));
    return std::vector<TensorType>{t[0]};
  };
}

InferFn infer_pad() {
  return [](Types t, const Attrs& attrs) {
    const auto &low = attrs.ints("low"), &high = attrs.ints("high");
    if (static_cast<int>(low.size()) != t[0].rank() || static_cast<int>(high.size()) != t[0].rank())
      internal_error("pad: low/high need one entry per dim of " + t[0].str());
    attrs.f("value");
    TensorType r = t[0];
    for (size_t d = 0; d < low.size(); ++d) {
      r.shape[d] = SymExpr(low[d]) + t[0].shape[d] + SymExpr(high[d]);
      if (r.shape[d].is_constant() && r.shape[d].constant() < 0)
        user_error("pad: padding " + std::to_string(low[d]) + ", " + std::to_string(high[d]) +
                   " makes dim " + std::to_string(d) + " of " + t[0].str() + " negative");
    }
    return std::vector<TensorType>{r};
  };
}

InferFn infer_concat() {
  return [](Types t, const Attrs& attrs) {
    if (t.empty()) user_error("concat: needs at least one tensor");
    check_same_device("concat", t);
    int64_t axis = axis_attr("concat", t[0], attrs);
    TensorType r = t[0];
    if (r.rank() == 0) user_error("concat: zero-dimensional tensor " + r.str() + " cannot be concatenated");
    SymExpr total = 0;
    for (const auto& o : t) {
      if (o.rank() != r.rank())
        user_error("concat: tensors have different ranks (" + t[0].str() + " and " + o.str() + ")");
      for (int d = 0; d < r.rank(); ++d)
        if (d != axis && !(o.shape[static_cast<size_t>(d)] == r.shape[static_cast<size_t>(d)]))
          user_error("concat: sizes of " + t[0].str() + " and " + o.str() + " differ in dim " +
                     std::to_string(d) + " (only dim " + std::to_string(axis) + " may differ)");
      total = total + o.shape[static_cast<size_t>(axis)];
      r.dtype = promote(r.dtype, o.dtype);
    }
    r.shape[static_cast<size_t>(axis)] = total;
    return std::vector<TensorType>{r};
  };
}

InferFn infer_gather() {
  return [](Types t, const Attrs& attrs) {
    check_same_device("gather", t);
    const TensorType &x = t[0], &index = t[1];
    int64_t axis = axis_attr("gather", x, attrs);
    check_index_dtype("gather", index);
    if (index.rank() != x.rank())
      user_error("gather: index " + index.str() + " must have the rank of the input " + x.str());
    for (int d = 0; d < x.rank(); ++d) {
      if (d == axis) continue;
      auto diff = (x.shape[static_cast<size_t>(d)] - index.shape[static_cast<size_t>(d)]).as_constant();
      if (diff && *diff < 0)
        user_error("gather: index " + index.str() + " is larger than the input " + x.str() +
                   " in dim " + std::to_string(d));
    }
    return std::vector<TensorType>{{x.dtype, x.device, index.shape}};
  };
}

InferFn infer_search_sorted() {
  return [](Types t, const Attrs&) {
    check_same_device("searchsorted", t);
    const TensorType &sorted = t[0], &values = t[1];
    if (sorted.rank() == 0) user_error("searchsorted: the sorted sequence " + sorted.str() + " must have at least one dim");
    if (sorted.dtype != values.dtype)
      user_error("searchsorted: the sorted sequence " + sorted.str() + " and the values " + values.str() + " must have one dtype");
    if (sorted.rank() > 1) {
      bool same = values.rank() == sorted.rank();
      for (int d = 0; same && d + 1 < sorted.rank(); ++d) {
        auto diff = (sorted.shape[static_cast<size_t>(d)] - values.shape[static_cast<size_t>(d)]).as_constant();
        same = !diff || *diff == 0;
      }
      if (!same)
        user_error("searchsorted: the values " + values.str() + " must have the leading dims of the sorted sequence " +
                   sorted.str() + " (or the sequence be 1-D; torch raises here too)");
    }
    return std::vector<TensorType>{{DType::i64, values.device, values.shape}};
  };
}

InferFn infer_index_select() {
  return [](Types t, const Attrs& attrs) {
    check_same_device("index_select", t);
    const TensorType &x = t[0], &index = t[1];
    int64_t axis = axis_attr("index_select", x, attrs);
    check_index_dtype("index_select", index);
    if (index.rank() != 1)
      user_error("index_select: the index must be 1-D, got " + index.str());
    TensorType r = x;
    if (r.rank() == 0) r.shape = {index.shape[0]};  // a 0-d input reads as [1]
    else r.shape[static_cast<size_t>(axis)] = index.shape[0];
    return std::vector<TensorType>{r};
  };
}

InferFn infer_topk() {
  return [](Types t, const Attrs& attrs) {
    int64_t axis = axis_attr("topk", t[0], attrs);
    int64_t k = attrs.i("k");
    TensorType values = t[0];
    if (values.rank() == 0) values.shape = {1};
    const SymExpr& dim = values.shape[static_cast<size_t>(axis)];
    if (k < 0 || (dim.is_constant() && k > dim.constant()))
      user_error("topk: k = " + std::to_string(k) + " is out of range for dim " +
                 std::to_string(axis) + " of " + t[0].str());
    if (t[0].dtype == DType::b8) user_error("topk: not defined for bool tensors");
    values.shape[static_cast<size_t>(axis)] = k;
    if (t[0].rank() == 0) values.shape.clear();
    TensorType indices = values;
    indices.dtype = DType::i64;
    return std::vector<TensorType>{values, indices};
  };
}

InferFn infer_tri(std::string_view op) {
  return [op](Types t, const Attrs& attrs) {
    if (t[0].rank() < 2) user_error(prefix(op) + "needs a tensor of rank >= 2, got " + t[0].str());
    attrs.i("diagonal");
    return std::vector<TensorType>{t[0]};
  };
}

}  // namespace aotrace::ir
