// Shape and type rules of the ops (the `infer` column of the op table in ops.cpp).
// Dims are SymExprs: two dims agree when they are structurally equal after simplification.
// Broadcasting accepts a constant 1 against anything; unequal symbolic dims are a user_error.
#include <algorithm>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {

std::string prefix(std::string_view op) { return std::string(op) + ": "; }

namespace {

using Types = std::span<const TensorType>;

bool is_one(const SymExpr& d) { return d.is_constant() && d.constant() == 1; }

}  // namespace

void check_same_device(std::string_view op, Types types) {
  for (const auto& t : types)
    if (!(t.device == types[0].device))
      user_error(prefix(op) + "operands are on different devices (" + types[0].device.str() +
                 " and " + t.device.str() + ")");
}

void check_floating(std::string_view op, const TensorType& t) {
  if (!is_floating(t.dtype))
    user_error(prefix(op) + "needs a floating point operand, got " + t.str(), {},
               "cast the tensor with .float() first");
}

void check_integral(std::string_view op, const TensorType& t) {
  if (!is_integral(t.dtype))
    user_error(prefix(op) + "needs an integer or bool operand, got " + t.str());
}

// Axes must be normalised (non-negative, sorted, unique) by the builder.
void check_axes(std::string_view op, const TensorType& t, const std::vector<int64_t>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= t.rank())
      user_error(prefix(op) + "axis " + std::to_string(axes[i]) + " is out of range for " +
                 t.str());
    if (i > 0 && axes[i] <= axes[i - 1])
      internal_error(prefix(op) + "axes are not sorted and unique");
  }
}

// A non-negative integer attribute "keepdim"-style flag, default 0.
bool flag(const Attrs& attrs, const std::string& key) {
  return attrs.has(key) && attrs.i(key) != 0;
}

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) out.push_back(shape[static_cast<size_t>(d)]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

namespace {

// Two dims known to differ: both constant and unequal, or their difference a non-zero constant.
bool provably_different(const SymExpr& a, const SymExpr& b) {
  auto diff = (a - b).as_constant();
  return diff && *diff != 0;
}

}  // namespace

Shape broadcast_shapes(std::string_view op, const TensorType& a, const TensorType& b) {
  size_t rank = std::max(a.shape.size(), b.shape.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {  // i counts from the right
    bool in_a = i < a.shape.size(), in_b = i < b.shape.size();
    const SymExpr* da = in_a ? &a.shape[a.shape.size() - 1 - i] : nullptr;
    const SymExpr* db = in_b ? &b.shape[b.shape.size() - 1 - i] : nullptr;
    SymExpr& o = out[rank - 1 - i];
    if (!da) o = *db;
    else if (!db) o = *da;
    else if (*da == *db || is_one(*db)) o = *da;
    else if (is_one(*da)) o = *db;
    else
      user_error(prefix(op) + "shapes " + a.str() + " and " + b.str() +
                 " cannot broadcast (dim -" + std::to_string(i + 1) + ": " + da->str() + " vs " +
                 db->str() + ")");
  }
  return out;
}

Shape shape_attr(const Attrs& attrs, const std::string& key) {
  auto it = attrs.items.find(key);
  if (it != attrs.items.end())
    if (const auto* ints = std::get_if<std::vector<int64_t>>(&it->second))
      return Shape(ints->begin(), ints->end());
  return attrs.shape(key);
}

InferFn infer_full() {
  return [](Types, const Attrs& attrs) {
    Shape shape = shape_attr(attrs, "shape");
    for (const auto& d : shape)
      if (d.is_constant() && d.constant() < 0)
        user_error("full: negative dimension in shape " + shape_str(shape));
    attrs.f("value");
    return std::vector<TensorType>{{attrs.dtype("dtype"), Device{}, shape}};
  };
}

// Result dtype = operand dtype (the builder casts integers to float before exp, log, …).
InferFn infer_unary(std::string_view op) {
  return [](Types t, const Attrs&) { return std::vector<TensorType>{t[0]}; };
}

InferFn infer_unary_floating(std::string_view op) {
  return [op](Types t, const Attrs&) {
    check_floating(op, t[0]);
    return std::vector<TensorType>{t[0]};
  };
}

InferFn infer_unary_integral(std::string_view op) {
  return [op](Types t, const Attrs&) {
    check_integral(op, t[0]);
    return std::vector<TensorType>{t[0]};
  };
}

namespace {

int category(DType d) { return d == DType::b8 ? 0 : is_floating(d) ? 2 : 1; }

// torch.result_type of two operands: a 0-dim one (a 0-dim tensor, or a Python number the
// builder made one) decides the dtype only when its category (bool < integer < floating) is
// higher than the dimensioned one's: f16[n] + tensor(2.0) is f16, i32[n] + tensor(5) is i32.
DType result_type(const TensorType& a, const TensorType& b) {
  const bool za = a.rank() == 0, zb = b.rank() == 0;
  if (za == zb) return promote(a.dtype, b.dtype);
  const DType dim = za ? b.dtype : a.dtype, zero = za ? a.dtype : b.dtype;
  return category(zero) > category(dim) ? promote(dim, zero) : dim;
}

}  // namespace

InferFn infer_binary(std::string_view op, bool true_division, bool integral_only) {
  return [op, true_division, integral_only](Types t, const Attrs&) {
    check_same_device(op, t);
    DType dtype = result_type(t[0], t[1]);
    if (integral_only) check_integral(op, TensorType{dtype, t[0].device, {}});
    if (true_division && is_integral(dtype)) dtype = DType::f32;
    return std::vector<TensorType>{{dtype, t[0].device, broadcast_shapes(op, t[0], t[1])}};
  };
}

InferFn infer_compare(std::string_view op) {
  return [op](Types t, const Attrs&) {
    check_same_device(op, t);
    return std::vector<TensorType>{{DType::b8, t[0].device, broadcast_shapes(op, t[0], t[1])}};
  };
}

InferFn infer_where() {
  return [](Types t, const Attrs&) {
    check_same_device("where", t);
    if (t[0].dtype != DType::b8)
      user_error("where: the condition must be bool, got " + t[0].str());
    TensorType ab{result_type(t[1], t[2]), t[0].device,
                  broadcast_shapes("where", t[1], t[2])};
    ab.shape = broadcast_shapes("where", t[0], ab);
    return std::vector<TensorType>{ab};
  };
}

InferFn infer_cast() {
  return [](Types t, const Attrs& attrs) {
    TensorType r = t[0];
    r.dtype = attrs.dtype("dtype");
    return std::vector<TensorType>{r};
  };
}

// Sum of integers or bool gives i64 (as torch.sum); max keeps the dtype.
InferFn infer_reduce(std::string_view op, bool sum_widens_integers, bool needs_floating) {
  return [=](Types t, const Attrs& attrs) {
    const auto& axes = attrs.ints("axes");
    check_axes(op, t[0], axes);
    if (needs_floating) check_floating(op, t[0]);
    TensorType r = t[0];
    r.shape = reduced_shape(t[0].shape, axes, flag(attrs, "keepdim"));
    if (sum_widens_integers && is_integral(r.dtype)) r.dtype = DType::i64;
    return std::vector<TensorType>{r};
  };
}

// torch.matmul: 1-D operands are a row (left) or column (right) vector, removed from the
// result; leading dims are batch dims and broadcast.
InferFn infer_matmul() {
  return [](Types t, const Attrs& attrs) {
    const TensorType &a = t[0], &b = t[1];
    check_same_device("matmul", t);
    if (a.rank() < 1 || b.rank() < 1)
      user_error("matmul: both operands need at least one dimension, got " + a.str() + " and " +
                 b.str());
    if (a.dtype != b.dtype)
      user_error("matmul: operands have different dtypes (" + a.str() + " and " + b.str() + ")",
                 {}, "cast one operand so both have the same dtype");
    const SymExpr& ka = a.shape.back();
    const SymExpr& kb = b.rank() == 1 ? b.shape[0] : b.shape[b.shape.size() - 2];
    if (!(ka == kb))
      user_error("matmul: shapes " + a.str() + " and " + b.str() +
                 " do not match (inner dims " + ka.str() + " vs " + kb.str() + ")");
    TensorType batch_a{a.dtype, a.device, Shape(a.shape.begin(), a.shape.end() - std::min(a.rank(), 2))};
    TensorType batch_b{b.dtype, b.device, Shape(b.shape.begin(), b.shape.end() - std::min(b.rank(), 2))};
    TensorType r{a.dtype, a.device, broadcast_shapes("matmul", batch_a, batch_b)};
    if (attrs.has("out_dtype")) {
      // f16/bf16 products summed in f32 and kept so (a half linear's bias is added before the
      // one rounding, as torch's addmm does): set only by decompositions.
      r.dtype = attrs.dtype("out_dtype");
      if ((a.dtype != DType::f16 && a.dtype != DType::bf16) || r.dtype != DType::f32)
        internal_error("matmul: out_dtype " + std::string(dtype_name(r.dtype)) + " of " + a.str() +
                       " operands (only f16/bf16 ones summed in f32)");
    }
    if (a.rank() >= 2) r.shape.push_back(a.shape[a.shape.size() - 2]);
    if (b.rank() >= 2) r.shape.push_back(b.shape.back());
    return std::vector<TensorType>{r};
  };
}

InferFn infer_reshape() {
  return [](Types t, const Attrs& attrs) {
    TensorType r = t[0];
    r.shape = shape_attr(attrs, "shape");
    for (const auto& d : r.shape)
      if (d.is_constant() && d.constant() < 0)
        internal_error("reshape: shape " + shape_str(r.shape) + " has a negative dim");
    // Symbolic sizes that cannot be told apart are accepted (guards bind the symbols).
    if (provably_different(t[0].numel(), r.numel()))
      user_error("reshape: cannot reshape " + t[0].str() + " (" + t[0].numel().str() +
                 " elements) to " + shape_str(r.shape) + " (" + r.numel().str() + " elements)");
    return std::vector<TensorType>{r};
  };
}

InferFn infer_permute() {
  return [](Types t, const Attrs& attrs) {
    const auto& perm = attrs.ints("perm");
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool ok = static_cast<int>(perm.size()) == t[0].rank();
    for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
    if (!ok)
      user_error("permute: " + attr_value_str(perm) + " is not a permutation of the dims of " +
                 t[0].str());
    TensorType r = t[0];
    for (size_t i = 0; i < perm.size(); ++i) r.shape[i] = t[0].shape[static_cast<size_t>(perm[i])];
    return std::vector<TensorType>{r};
  };
}

InferFn infer_expand() {
  return [](Types t, const Attrs& attrs) {
    TensorType r = t[0];
    r.shape = shape_attr(attrs, "shape");
    const Shape& from = t[0].shape;
    auto fail = [&](const std::string& why) {
      user_error("expand: cannot expand " + t[0].str() + " to " + shape_str(r.shape) + " (" +
                 why + ")");
    };
    if (r.shape.size() < from.size()) fail("the target has fewer dims");
    size_t lead = r.shape.size() - from.size();
    for (size_t i = 0; i < r.shape.size(); ++i) {
      if (r.shape[i].is_constant() && r.shape[i].constant() < 0)
        internal_error("expand: negative size in " + shape_str(r.shape) + " (resolve -1 first)");
      if (i < lead) continue;
      const SymExpr& d = from[i - lead];
      if (!(d == r.shape[i]) && !is_one(d))
        fail("dim " + std::to_string(i) + ": " + d.str() + " vs " + r.shape[i].str());
    }
    return std::vector<TensorType>{r};
  };
}

// linear(x[..., in], weight[out, in], bias[out]?) -> [..., out]
InferFn infer_linear() {
  return [](Types t, const Attrs&) {
    if (t.size() != 2 && t.size() != 3)
      internal_error("linear takes 2 or 3 operands, got " + std::to_string(t.size()));
    check_same_device("linear", t);
    const TensorType &x = t[0], &w = t[1];
    std::string all = x.str() + ", " + w.str() + (t.size() == 3 ? ", " + t[2].str() : "");
    for (const auto& o : t)
      if (o.dtype != x.dtype) user_error("linear: operands have different dtypes (" + all + ")");
    if (x.rank() < 1 || w.rank() != 2)
      user_error("linear: expected input [..., in] and weight [out, in], got " + all);
    if (!(x.shape.back() == w.shape[1]))
      user_error("linear: input features " + x.shape.back().str() + " do not match weight " +
                 w.str());
    if (t.size() == 3 && !(t[2].rank() == 1 && t[2].shape[0] == w.shape[0]))
      user_error("linear: bias " + t[2].str() + " does not match weight " + w.str());
    TensorType r = x;
    r.shape.back() = w.shape[0];
    return std::vector<TensorType>{r};
  };
}

InferFn infer_softmax(std::string_view op) {
  return [op](Types t, const Attrs& attrs) {
    int64_t axis = attrs.i("axis");
    if (axis < 0 || axis >= t[0].rank())
      user_error(prefix(op) + "axis " + std::to_string(axis) + " is out of range for " +
                 t[0].str());
    check_floating(op, t[0]);
    return std::vector<TensorType>{t[0]};
  };
}

}  // namespace aotrace::ir
