// Builders of the torch op table for shape and indexing ops: reshape/view, flatten, permute,
// transpose, squeeze/unsqueeze, expand, repeat, cat/stack, split/chunk/unbind, narrow/select,
// tensor indexing (__getitem__), gather, index_select, flip, pad, tril/triu, masked_fill and
// embedding. All of them become movement/index primitives.
#include <algorithm>
#include <cstring>

#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

ir::Shape shape_of(Translator& t, ValueId x) { return type_of(t, x).shape; }

// Resolves one -1 in `shape` against the element count of `x`.
ir::Shape infer_minus_one(Translator& t, ValueId x, ir::Shape shape, const char* what) {
  int infer = -1;
  ir::SymExpr known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].is_constant() && shape[i].constant() == -1) {
      if (infer >= 0) user_error(std::string(what) + ": only one dimension can be -1", t.loc());
      infer = static_cast<int>(i);
    } else if (shape[i].is_constant() && shape[i].constant() < 0) {
      user_error(std::string(what) + ": invalid size " + shape[i].str(), t.loc());
    } else {
      known = known * shape[i];
    }
  }
  if (infer < 0) return shape;
  ir::SymExpr numel = type_of(t, x).numel();
  auto k = known.as_constant(), n = numel.as_constant();
  if ((k && *k == 0) || (k && n && *n % *k != 0))
    user_error(std::string(what) + ": shape " + ir::shape_str(shape) + " is invalid for a tensor of " +
                   numel.str() + " elements",
               t.loc());
  shape[static_cast<size_t>(infer)] = floordiv(numel, known);
  return shape;
}


ValueId slice_node(Translator& t, ValueId x, int axis, int64_t start, ir::SymExpr end, int64_t step) {
  const ir::SymExpr dim = shape_of(t, x)[static_cast<size_t>(axis)];
  if (start == 0 && end == dim && step == 1) return x;
  ir::Attrs attrs;
  attrs.set("axis", int64_t{axis}).set("start", start).set("step", step);
  if (auto c = end.as_constant()) attrs.set("end", *c);
  else attrs.set("end", ir::Shape{end});
  return node(t, OpKind::Slice, {x}, attrs);
}

// Python slice bounds for a dim of size `dim` (static or symbolic), step > 0.
struct Bounds {
  int64_t start = 0;
  ir::SymExpr end;
  int64_t step = 1;
};

Bounds slice_bounds(Translator& t, const VarRef& start, const VarRef& stop, const VarRef& step,
                    const ir::SymExpr& dim) {
  Bounds b;
  b.step = is_none(step) ? 1 : int_arg(t, step, "slice");
  if (b.step <= 0) user_error("slicing a tensor needs a positive step, got " + std::to_string(b.step), t.loc(),
                              "use torch.flip for reversed order");
  auto bound = [&](const VarRef& v, ir::SymExpr fallback) -> ir::SymExpr {
    if (is_none(v)) return fallback;
    if (auto* s = as<SymIntVar>(v); s && !s->expr.is_constant()) return s->expr;
    int64_t i = int_arg(t, v, "slice");
    if (i < 0) return dim + i;
    return i;
  };
  ir::SymExpr s = bound(start, 0), e = bound(stop, dim);
  if (auto d = dim.as_constant()) {  // clamp as Python does
    auto clamp = [&](ir::SymExpr v) -> ir::SymExpr {
      auto c = v.as_constant();
      if (!c) return v;
      return std::max<int64_t>(0, std::min(*c, *d));
    };
    s = clamp(s), e = clamp(e);
  }
  auto sc = s.as_constant();
  if (!sc) unsupported(t, "a slice with a symbolic start", "slice with a static start");
  b.start = *sc;
  b.end = e;
  if (auto ec = e.as_constant(); ec && *ec < b.start) b.end = b.start;
  return b;
}

ValueId select_index(Translator& t, ValueId x, int axis, int64_t index) {
  ir::Shape s = shape_of(t, x);
  auto d = s[static_cast<size_t>(axis)].as_constant();
  if (!d) unsupported(t, "integer indexing of a dynamic dim");
  if (index < -*d || index >= *d)
    user_error("index " + std::to_string(index) + " is out of bounds for dim " + std::to_string(axis) +
                   " with size " + std::to_string(*d),
               t.loc());
  if (index < 0) index += *d;
  ValueId r = slice_node(t, x, axis, index, index + 1, 1);
  s.erase(s.begin() + axis);
  return reshape_to(t, r, s);
}

}  // namespace

VarRef identity(Translator& t, const CallArgs& a) {
  tensor(t, a.get(0, "input"), "this op");
  return a.get(0, "input");
}

// clone: the same value in a new variable, so that writing into the copy (y = x.clone();
// y[0] = 1) leaves x, and its source, alone.
VarRef clone(Translator& t, const CallArgs& a) { return wrap_value(tensor(t, a.get(0, "input"), "clone")); }

VarRef reshape(Translator& t, const CallArgs& a) {  // reshape and view
  const char* what = a.op && a.op->name == "aten::view" ? "view" : "reshape";
  ValueId x = tensor(t, a.get(0, "input"), what);
  ir::Shape shape = shape_arg(t, shape_items(t, a, 1, "shape|size"), what);
  return wrap_value(reshape_to(t, x, infer_minus_one(t, x, shape, what)));
}

VarRef view_as(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "view_as");
  return wrap_value(reshape_to(t, x, shape_of(t, tensor(t, a.get(1, "other"), "view_as"))));
}

VarRef flatten(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "flatten");
  const ir::Shape shape = shape_of(t, x);
  const int rank = static_cast<int>(shape.size());
  int start = normalise_dim(t, int_or(t, a, 1, "start_dim", 0), rank, "flatten");
  int end = normalise_dim(t, int_or(t, a, 2, "end_dim", -1), rank, "flatten");
  if (rank == 0) return wrap_value(reshape_to(t, x, {1}));
  ir::Shape s(shape.begin(), shape.begin() + start);
  ir::SymExpr merged = 1;
  for (int i = start; i <= end; ++i) merged = merged * shape[static_cast<size_t>(i)];
  s.push_back(merged);
  s.insert(s.end(), shape.begin() + end + 1, shape.end());
  return wrap_value(reshape_to(t, x, s));
}

VarRef unflatten(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "unflatten");
  ir::Shape shape = shape_of(t, x);
  int dim = normalise_dim(t, int_arg(t, a.get(1, "dim"), "unflatten"), static_cast<int>(shape.size()), "unflatten");
  auto items = sequence_items(t, a.get(2, "sizes"));
  if (!items) user_error("unflatten: sizes must be a sequence", t.loc());
  ir::Shape sizes = shape_arg(t, *items, "unflatten");
  // -1 among the sizes: resolved against the flattened dim.
  ir::SymExpr known = 1;
  int infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i].is_constant() && sizes[i].constant() == -1) infer = static_cast<int>(i);
    else known = known * sizes[i];
  }
  if (infer >= 0) sizes[static_cast<size_t>(infer)] = floordiv(shape[static_cast<size_t>(dim)], known);
  shape.erase(shape.begin() + dim);
  shape.insert(shape.begin() + dim, sizes.begin(), sizes.end());
  return wrap_value(reshape_to(t, x, shape));
}

VarRef permute(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "permute");
  const int rank = type_of(t, x).rank();
  std::vector<int64_t> perm = ints_arg(t, a, 1, "dims", "permute");
  for (auto& p : perm) p = normalise_dim(t, p, rank, "permute");
  return add(t, OpKind::Permute, {x}, ir::Attrs().set("perm", perm));
}

VarRef transpose(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "transpose");
  const int rank = type_of(t, x).rank();
  int d0 = normalise_dim(t, int_arg(t, a.get(1, "dim0"), "transpose"), rank, "transpose");
  int d1 = normalise_dim(t, int_arg(t, a.get(2, "dim1"), "transpose"), rank, "transpose");
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i) perm.push_back(i);
  if (rank == 0) return wrap_value(x);
  std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
  return wrap_value(permute_to(t, x, perm));
}

VarRef transpose_2d(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "t");
  const int rank = type_of(t, x).rank();
  if (rank > 2) user_error("t() expects a tensor of rank <= 2, got rank " + std::to_string(rank), t.loc());
  if (rank < 2) return wrap_value(x);
  return add(t, OpKind::Permute, {x}, ir::Attrs().set("perm", std::vector<int64_t>{1, 0}));
}

VarRef squeeze(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "squeeze");
  ir::Shape shape = shape_of(t, x), out;
  VarRef dim = a.get(1, "dim");
  std::vector<int64_t> dims = is_none(dim) ? std::vector<int64_t>{} : dims_arg(t, dim, static_cast<int>(shape.size()), "squeeze");
  for (size_t i = 0; i < shape.size(); ++i) {
    bool one = shape[i].is_constant() && shape[i].constant() == 1;
    bool named = is_none(dim) || std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!(one && named)) out.push_back(shape[i]);
  }
  return wrap_value(reshape_to(t, x, out));
}

VarRef unsqueeze(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "unsqueeze");
  int rank = type_of(t, x).rank();
  int dim = normalise_dim(t, int_arg(t, a.get(1, "dim"), "unsqueeze"), rank + 1, "unsqueeze");
  return wrap_value(unsqueeze_at(t, x, dim));
}

VarRef expand(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "expand");
  ir::Shape from = shape_of(t, x);
  ir::Shape to = shape_arg(t, shape_items(t, a, 1, "size"), "expand");
  if (to.size() < from.size()) user_error("expand: the target has fewer dims than " + type_of(t, x).str(), t.loc());
  size_t lead = to.size() - from.size();
  for (size_t i = lead; i < to.size(); ++i)
    if (to[i].is_constant() && to[i].constant() == -1) to[i] = from[i - lead];
  if (to == from) return wrap_value(x);
  return add(t, OpKind::Expand, {x}, ir::Attrs().set("shape", to));
}

VarRef expand_as(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "expand_as");
  ir::Shape to = shape_of(t, tensor(t, a.get(1, "other"), "expand_as"));
  if (to == shape_of(t, x)) return wrap_value(x);
  return add(t, OpKind::Expand, {x}, ir::Attrs().set("shape", to));
}

// x.repeat(r0, r1, ...): [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then merged.
VarRef repeat(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "repeat");
  std::vector<int64_t> reps = ints_arg(t, a, 1, "repeats", "repeat");
  ir::Shape shape = shape_of(t, x);
  if (reps.size() < shape.size()) user_error("repeat: needs at least one repeat per dim", t.loc());
  shape.insert(shape.begin(), reps.size() - shape.size(), ir::SymExpr(1));
  ir::Shape split, expanded, merged;
  for (size_t i = 0; i < reps.size(); ++i) {
    split.push_back(1), split.push_back(shape[i]);
    expanded.push_back(reps[i]), expanded.push_back(shape[i]);
    merged.push_back(shape[i] * reps[i]);
  }
  ValueId v = reshape_to(t, x, split);
  v = node(t, OpKind::Expand, {v}, ir::Attrs().set("shape", expanded));
  return wrap_value(reshape_to(t, v, merged));
}

namespace {

std::vector<ValueId> tensor_list(Translator& t, const VarRef& v, const char* what) {
  auto items = sequence_items(t, v);
  if (!items) user_error(std::string(what) + " expects a sequence of tensors", t.loc());
  std::vector<ValueId> out;
  for (auto& item : *items) out.push_back(tensor(t, item, what));
  if (out.empty()) user_error(std::string(what) + " expects a non-empty list of tensors", t.loc());
  return out;
}

}  // namespace

VarRef cat(Translator& t, const CallArgs& a) {
  std::vector<ValueId> xs = tensor_list(t, a.get(0, "tensors"), "cat");
  // torch.cat skips 1-D empty tensors (legacy behaviour).
  std::vector<ValueId> kept;
  for (ValueId x : xs) {
    const auto& s = shape_of(t, x);
    if (!(s.size() == 1 && s[0].is_constant() && s[0].constant() == 0)) kept.push_back(x);
  }
  if (kept.empty()) kept.push_back(xs[0]);
  int dim = normalise_dim(t, int_or(t, a, 1, "dim", 0), type_of(t, kept[0]).rank(), "cat");
  if (kept.size() == 1) return wrap_value(kept[0]);
  return add(t, OpKind::Concat, kept, ir::Attrs().set("axis", int64_t{dim}));
}

VarRef stack(Translator& t, const CallArgs& a) {
  std::vector<ValueId> xs = tensor_list(t, a.get(0, "tensors"), "stack");
  int dim = normalise_dim(t, int_or(t, a, 1, "dim", 0), type_of(t, xs[0]).rank() + 1, "stack");
  for (auto& x : xs) x = unsqueeze_at(t, x, dim);
  if (xs.size() == 1) return wrap_value(xs[0]);
  return add(t, OpKind::Concat, xs, ir::Attrs().set("axis", int64_t{dim}));
}

VarRef split(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "tensor|self"), "split");
  VarRef sizes = a.get(1, "split_size_or_sections|split_size");
  int dim = normalise_dim(t, int_or(t, a, 2, "dim", 0), type_of(t, x).rank(), "split");
  auto total = shape_of(t, x)[static_cast<size_t>(dim)].as_constant();
  if (!total) unsupported(t, "split along a dynamic dim");
  std::vector<int64_t> parts;
  if (auto items = sequence_items(t, sizes)) {
    for (auto& i : *items) parts.push_back(int_arg(t, i, "split"));
  } else {
    int64_t n = int_arg(t, sizes, "split");
    if (n <= 0) user_error("split: split_size must be positive", t.loc());
    for (int64_t s = 0; s < *total || (s == 0 && *total == 0); s += n) parts.push_back(std::min(n, *total - s));
  }
  std::vector<VarRef> out;
  int64_t start = 0;
  for (int64_t p : parts) {
    out.push_back(wrap_value(slice_node(t, x, dim, start, start + p, 1)));
    start += p;
  }
  if (start != *total) user_error("split: sizes do not add up to " + std::to_string(*total), t.loc());
  return sequence(std::move(out));
}

VarRef chunk(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "chunk");
  int64_t chunks = int_arg(t, a.get(1, "chunks"), "chunk");
  int dim = normalise_dim(t, int_or(t, a, 2, "dim", 0), type_of(t, x).rank(), "chunk");
  auto total = shape_of(t, x)[static_cast<size_t>(dim)].as_constant();
  if (!total) unsupported(t, "chunk along a dynamic dim");
  int64_t size = (*total + chunks - 1) / chunks;
  std::vector<VarRef> out;
  for (int64_t s = 0; s < *total; s += size)
    out.push_back(wrap_value(slice_node(t, x, dim, s, std::min(s + size, *total), 1)));
  return sequence(std::move(out));
}

VarRef unbind(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "unbind");
  int dim = normalise_dim(t, int_or(t, a, 1, "dim", 0), type_of(t, x).rank(), "unbind");
  auto total = shape_of(t, x)[static_cast<size_t>(dim)].as_constant();
  if (!total) unsupported(t, "unbind along a dynamic dim");
  std::vector<VarRef> out;
  for (int64_t i = 0; i < *total; ++i) out.push_back(wrap_value(select_index(t, x, dim, i)));
  return sequence(std::move(out));
}

VarRef narrow(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "narrow");
  int dim = normalise_dim(t, int_arg(t, a.get(1, "dim"), "narrow"), type_of(t, x).rank(), "narrow");
  int64_t start = int_arg(t, a.get(2, "start"), "narrow");
  VarRef len = a.get(3, "length");
  ir::SymExpr length = as<SymIntVar>(len) ? as<SymIntVar>(len)->expr : ir::SymExpr(int_arg(t, len, "narrow"));
  if (start < 0) start += shape_of(t, x)[static_cast<size_t>(dim)].constant();
  return wrap_value(slice_node(t, x, dim, start, length + start, 1));
}

VarRef select(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "select");
  int dim = normalise_dim(t, int_arg(t, a.get(1, "dim"), "select"), type_of(t, x).rank(), "select");
  return wrap_value(select_index(t, x, dim, int_arg(t, a.get(2, "index"), "select")));
}

// x[index]: ints, slices (positive steps), None, Ellipsis and at most one integer index tensor.
namespace {

// The items of a tensor index (x[i, 1:3, ...]) and their kinds: i)nt s)lice n)one e)llipsis
// t)ensor l)ist; `consumed` counts the dims they index.
struct IndexItems {
  std::vector<VarRef> items;
  std::vector<char> kinds;
  int consumed = 0, tensors = 0;
};

IndexItems index_items(Translator& t, const VarRef& index) {
  IndexItems r;
  if (auto* seq = as<SequenceVar>(index); seq && seq->kind == SequenceVar::Kind::Tuple) r.items = seq->items;
  else if (auto* c = as<ConstVar>(index); c && PyTuple_Check(c->obj.get())) r.items = *sequence_items(t, index);
  else r.items = {index};
  auto kind = [&](const VarRef& v) -> char {
    if (is_tensor(v)) return 't';
    if (as<SliceVar>(v)) return 's';
    if (as<SymIntVar>(v)) return 'i';
    PyRef o = t.to_python(v);
    if (!o) user_error("cannot index a tensor with " + v->describe(), t.loc());
    if (o.get() == Py_None) return 'n';
    if (o.get() == Py_Ellipsis) return 'e';
    if (PySlice_Check(o.get())) return 's';
    if (PyLong_Check(o.get()) && !PyBool_Check(o.get())) return 'i';
    if (PyList_Check(o.get()) || PyRange_Check(o.get())) return 'l';  // x[range(n), y]: an index tensor
    user_error("cannot index a tensor with " + v->describe(), t.loc());
  };
  for (auto& v : r.items) {
    r.kinds.push_back(kind(v));
    const char k = r.kinds.back();
    if (k == 'i' || k == 's' || k == 't' || k == 'l') ++r.consumed;
    if (k == 't' || k == 'l') ++r.tensors;
  }
  return r;
}

// A slice item (SliceVar or a constant slice) over a dim of size `n`.
Bounds slice_item(Translator& t, const VarRef& v, const ir::SymExpr& n) {
  VarRef start, stop, step;
  if (auto* s = as<SliceVar>(v)) {
    start = s->start, stop = s->stop, step = s->step;
  } else {
    PyRef o = t.to_python(v);
    auto* sl = reinterpret_cast<PySliceObject*>(o.get());
    start = t.constant(sl->start), stop = t.constant(sl->stop), step = t.constant(sl->step);
  }
  return slice_bounds(t, start, stop, step, n);
}

}  // namespace

VarRef getitem(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "indexing");
  const IndexItems ix = index_items(t, a.get(1, "index"));
  const std::vector<VarRef>& items = ix.items;
  const std::vector<char>& kinds = ix.kinds;
  const int consumed = ix.consumed;
  std::vector<std::pair<int, ValueId>> advanced;  // with more than one index tensor
  int rank = type_of(t, x).rank();
  if (consumed > rank) user_error("too many indices for a tensor of rank " + std::to_string(rank), t.loc());
  int d = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const VarRef& v = items[i];
    switch (kinds[i]) {
      case 'n': x = unsqueeze_at(t, x, d++); break;
      case 'e': d += rank - consumed; break;
      case 'i': x = select_index(t, x, d, int_arg(t, v, "indexing")); break;
      case 's': {
        Bounds b = slice_item(t, v, shape_of(t, x)[static_cast<size_t>(d)]);
        x = slice_node(t, x, d++, b.start, b.end, b.step);
        break;
      }
      case 't': case 'l': {
        ValueId idx = kinds[i] == 't' ? tensor(t, v, "indexing")
                                      : tensor(t, tensor_literal(t, CallArgs{{v}, {}}), "indexing");
        const ir::TensorType it = type_of(t, idx);
        if (it.dtype == DType::b8 || it.dtype == DType::u8)
          t.graph_break("data-dependent shape", "indexing with a boolean mask gives a data-dependent shape",
                        "use torch.where(mask, x, other) or masked_fill instead");
        if (ir::is_floating(it.dtype)) user_error("tensors used as indices must be integer tensors", t.loc());
        if (ix.tensors > 1) {  // indexed together after the other items
          advanced.emplace_back(d++, idx);
          break;
        }
        ir::SymExpr n = it.numel();
        ValueId flat = reshape_to(t, idx, {n});
        ValueId r = node(t, OpKind::IndexSelect, {x, flat}, ir::Attrs().set("axis", int64_t{d}));
        ir::Shape s = shape_of(t, r);
        s.erase(s.begin() + d);
        s.insert(s.begin() + d, it.shape.begin(), it.shape.end());
        x = reshape_to(t, r, s);
        d += it.rank();
        break;
      }
    }
  }
  if (!advanced.empty()) x = advanced_getitem(t, x, advanced);
  return wrap_value(x);
}

// x[index] = value on an intermediate tensor, for ints, slices of step 1 and `...`: the value,
// broadcast to x[index] as torch does, is padded out to x's shape and selected where a mask of
// the indexed region is set. Exact, and written into x by ops::inplace (its dtype kept).
VarRef setitem(Translator& t, const CallArgs& a) {
  VarRef self = a.get(0, "self");
  refuse_inplace_on_outside(t, self, "index assignment", "x = x.clone(); x[index] = value");
  ValueId x = tensor(t, self, "index assignment");
  if (VarRef index = a.get(1, "index"); is_tensor(index) && type_of(t, tensor(t, index, "")).dtype == DType::b8) {
    // x[mask] = v for a bool mask over x's leading dims and a value of one element:
    // where(mask, v, x). A value per selected element depends on how many there are.
    const ir::TensorType type = type_of(t, x), mt = type_of(t, tensor(t, index, ""));
    VarRef value = a.get(2, "value");
    const bool one_value = !is_tensor(value) || type_of(t, tensor(t, value, "")).rank() == 0;
    if (mt.rank() > type.rank() || !std::equal(mt.shape.begin(), mt.shape.end(), type.shape.begin()) || !one_value)
      unsupported(t, "x[mask] = value with a mask not over x's leading dims, or a value per selected element",
                  "use torch.where(mask, value, x)");
    ir::Shape mshape = mt.shape;
    mshape.resize(static_cast<size_t>(type.rank()), ir::SymExpr(1));
    ValueId mask = reshape_to(t, tensor(t, index, ""), mshape);
    ValueId v = cast(t, is_tensor(value) ? tensor(t, value, "") : constant(t, float_arg(t, value, "index assignment"), type.dtype), type.dtype);
    return inplace(t, self, add(t, OpKind::Where, {mask, v, x}), "index assignment");
  }
  const IndexItems ix = index_items(t, a.get(1, "index"));
  const ir::TensorType type = type_of(t, x);
  const int rank = type.rank();
  if (ix.consumed > rank) user_error("too many indices for a tensor of rank " + std::to_string(rank), t.loc());
  // One slice with a step (x[:, ::2] = v) is an index tensor of its positions.
  int stepped = 0;
  for (size_t i = 0, d = 0; i < ix.items.size(); ++i) {
    const char kind = ix.kinds[i];
    if (kind == 'e') d += static_cast<size_t>(rank - ix.consumed);
    if (kind == 's' && d < type.shape.size() && slice_item(t, ix.items[i], type.shape[d]).step != 1) ++stepped;
    if (kind != 'e' && kind != 'n') ++d;
  }
  if (ix.tensors > 0 || stepped == 1) {
    // x[i, j] = v through integer index tensors, ints (0-d index tensors), a stepped slice and
    // whole dims (`:`, `...`).
    std::vector<std::pair<int, ValueId>> indices;
    int d = 0;
    for (size_t i = 0; i < ix.items.size(); ++i) {
      const char kind = ix.kinds[i];
      const VarRef& v = ix.items[i];
      if (kind == 'e') {
        d += rank - ix.consumed;
      } else if (kind == 's') {
        Bounds b = slice_item(t, v, type.shape[static_cast<size_t>(d)]);
        const bool whole = b.start == 0 && b.step == 1 && b.end == type.shape[static_cast<size_t>(d)];
        if (!whole && (ix.tensors > 0 || b.step == 1 || !b.end.as_constant()))
          unsupported(t, "x[index] = value mixing index tensors or a stepped slice with partial slices",
                      "index whole dims (`:`) next to index tensors");
        if (!whole) {
          const int64_t count = std::max<int64_t>(0, (b.end.constant() - b.start + b.step - 1) / b.step);
          indices.emplace_back(d, node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{ir::SymExpr(count)})
                                                                 .set("start", static_cast<double>(b.start))
                                                                 .set("step", static_cast<double>(b.step)).set("dtype", DType::i64)));
        }
        ++d;
      } else if (kind == 'i') {
        indices.emplace_back(d++, constant(t, static_cast<double>(int_arg(t, v, "index assignment")), DType::i64));
      } else if (kind == 't' || kind == 'l') {
        ValueId idx = kind == 't' ? tensor(t, v, "index assignment") : tensor(t, tensor_literal(t, CallArgs{{v}, {}}), "index assignment");
        if (type_of(t, idx).dtype == DType::b8) unsupported(t, "x[index] = value with a bool mask among other indices", "use torch.where");
        indices.emplace_back(d++, idx);
      } else {
        unsupported(t, "x[index] = value with None next to index tensors");
      }
    }
    // Ints next to a stepped slice index as it does only when they are adjacent to it.
    for (size_t k = 1; ix.tensors == 0 && k < indices.size(); ++k)
      if (indices[k].first != indices[k - 1].first + 1)
        unsupported(t, "x[index] = value with a stepped slice apart from its int indices", "assign through a view-free form, e.g. torch.where");
    VarRef value = a.get(2, "value");
    ValueId v = is_tensor(value) ? tensor(t, value, "index assignment") : constant(t, float_arg(t, value, "index assignment"), type.dtype);
    return inplace(t, self, wrap_value(advanced_setitem(t, x, indices, v)), "index assignment");
  }
  std::vector<int64_t> low(static_cast<size_t>(rank), 0), high = low;
  ir::Shape region;  // the indexed region, with 1 for the dims an int removes
  for (int k = 0; k < rank; ++k) region.push_back(type.shape[static_cast<size_t>(k)]);
  int d = 0;
  for (size_t i = 0; i < ix.items.size(); ++i) {
    const char kind = ix.kinds[i];
    if (kind == 'e') {
      d += rank - ix.consumed;
      continue;
    }
    if (kind != 'i' && kind != 's')
      unsupported(t, "x[index] = value with None or tensor indices",
                  "use torch.where(mask, value, x), or index with ints and slices");
    auto n = type.shape[static_cast<size_t>(d)].as_constant();
    if (!n) unsupported(t, "x[index] = value on a dynamic dim", "declare the dim static");
    const size_t k = static_cast<size_t>(d++);
    if (kind == 'i') {
      int64_t i0 = int_arg(t, ix.items[i], "index assignment");
      if (i0 < 0) i0 += *n;
      if (i0 < 0 || i0 >= *n) user_error("index " + std::to_string(i0) + " is out of bounds for a dim of size " + std::to_string(*n), t.loc());
      low[k] = i0, high[k] = *n - 1 - i0, region[k] = ir::SymExpr(1);
      continue;
    }
    Bounds b = slice_item(t, ix.items[i], type.shape[k]);
    auto end = b.end.as_constant();
    if (b.step != 1 || !end) unsupported(t, "x[a:b:step] = value with a step other than 1");
    low[k] = b.start, high[k] = *n - *end, region[k] = ir::SymExpr(std::max<int64_t>(*end - b.start, 0));
  }
  VarRef target = getitem(t, CallArgs{{self, a.get(1, "index")}, {}});
  VarRef value = a.get(2, "value");
  VarRef v = is_tensor(value) ? value : wrap_value(constant(t, float_arg(t, value, "index assignment"), type.dtype));
  ValueId block = reshape_to(t, cast(t, tensor(t, expand_as(t, CallArgs{{v, target}, {}}), "index assignment"), type.dtype), region);
  ir::Attrs pads = ir::Attrs().set("low", low).set("high", high).set("value", 0.0);
  ValueId padded = node(t, OpKind::Pad, {block}, pads);
  ValueId ones = node(t, OpKind::Full, {}, ir::Attrs().set("shape", region).set("value", 1.0).set("dtype", DType::f32));
  ValueId mask = node(t, OpKind::Ne, {node(t, OpKind::Pad, {ones}, pads), constant(t, 0, DType::f32)});
  return inplace(t, self, add(t, OpKind::Where, {mask, padded, x}), "index assignment");
}

VarRef gather(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "gather");
  int dim = normalise_dim(t, int_arg(t, a.get(1, "dim"), "gather"), type_of(t, x).rank(), "gather");
  ValueId index = tensor(t, a.get(2, "index"), "gather");
  return add(t, OpKind::Gather, {x, index}, ir::Attrs().set("axis", int64_t{dim}));
}

VarRef index_select(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "index_select");
  int dim = normalise_dim(t, int_arg(t, a.get(1, "dim"), "index_select"), type_of(t, x).rank(), "index_select");
  ValueId index = tensor(t, a.get(2, "index"), "index_select");
  if (type_of(t, index).rank() == 0) index = reshape_to(t, index, {1});
  return add(t, OpKind::IndexSelect, {x, index}, ir::Attrs().set("axis", int64_t{dim}));
}

VarRef flip(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "flip");
  std::vector<int64_t> dims = ints_arg(t, a, 1, "dims", "flip");
  const int rank = type_of(t, x).rank();
  for (auto& d : dims) d = normalise_dim(t, d, rank, "flip");
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  if (dims.empty()) return wrap_value(x);
  return add(t, OpKind::Flip, {x}, ir::Attrs().set("axes", dims));
}

// F.pad(x, pad, mode='constant', value=0): pad lists (low, high) pairs from the last dim.
namespace {

// An i64 vector as a constant of the graph (a weight without a source).
ValueId index_constant(Translator& t, const std::vector<int64_t>& values) {
  auto bytes = std::make_shared<ir::Bytes>(values.size() * sizeof(int64_t));
  std::memcpy(bytes->data(), values.data(), bytes->size());
  ir::TensorType type;
  type.dtype = DType::i64;
  type.shape = {ir::SymExpr(static_cast<int64_t>(values.size()))};
  return t.graph().add_weight("index" + std::to_string(t.graph().weights.size()), type, "", bytes);
}

// Which element of a dim of size n each position of the padded dim copies, for torch's
// reflect (mirror without the edge), replicate (edge repeated) and circular (wrap) modes.
std::vector<int64_t> pad_indices(const std::string& mode, int64_t n, int64_t low, int64_t high) {
  std::vector<int64_t> idx;
  for (int64_t i = -low; i < n + high; ++i) {
    if (mode == "replicate") {
      idx.push_back(std::clamp<int64_t>(i, 0, n - 1));
    } else if (mode == "circular") {
      idx.push_back(((i % n) + n) % n);
    } else {  // reflect
      int64_t j = i < 0 ? -i : i;
      idx.push_back(j >= n ? 2 * (n - 1) - j : j);
    }
  }
  return idx;
}

}  // namespace

VarRef pad(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "pad");
  std::vector<int64_t> pads = ints_arg(t, CallArgs{{a.get(1, "pad")}, {}}, 0, "pad", "pad");
  std::string mode = str_arg(t, a.get(2, "mode"), "pad", "constant");
  const int rank = type_of(t, x).rank();
  if (pads.size() % 2 != 0 || static_cast<int>(pads.size()) > 2 * rank)
    user_error("pad: the padding must have an even length of at most 2 * rank", t.loc());
  std::vector<int64_t> low(static_cast<size_t>(rank), 0), high = low;
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    low[static_cast<size_t>(rank) - 1 - i] = pads[2 * i];
    high[static_cast<size_t>(rank) - 1 - i] = pads[2 * i + 1];
  }
  if (mode == "constant") {
    double value = float_or(t, a, 3, "value", 0.0);
    return add(t, OpKind::Pad, {x}, ir::Attrs().set("low", low).set("high", high).set("value", value));
  }
  if (mode != "reflect" && mode != "replicate" && mode != "circular")
    user_error("pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', not '" + mode + "'", t.loc());
  // Each padded dim gathers its elements by a constant index: exact, and no new kernel.
  for (int d = 0; d < rank; ++d) {
    const size_t k = static_cast<size_t>(d);
    if (low[k] == 0 && high[k] == 0) continue;
    auto n = type_of(t, x).shape[k].as_constant();
    if (!n) unsupported(t, "F.pad(mode='" + mode + "') of a dynamic dim", "declare the dim static");
    if (low[k] < 0 || high[k] < 0 || (mode == "reflect" && (low[k] >= *n || high[k] >= *n)) ||
        (mode == "circular" && (low[k] > *n || high[k] > *n)))
      user_error("pad: padding (" + std::to_string(low[k]) + ", " + std::to_string(high[k]) + ") of dim " +
                     std::to_string(d) + " (size " + std::to_string(*n) + ") is out of range for mode '" + mode + "'",
                 t.loc());
    x = node(t, OpKind::IndexSelect, {x, index_constant(t, pad_indices(mode, *n, low[k], high[k]))},
             ir::Attrs().set("axis", int64_t{d}));
  }
  return wrap_value(x);
}

VarRef tril(Translator& t, const CallArgs& a) {
  return add(t, OpKind::Tril, {tensor(t, a.get(0, "input"), "tril")},
             ir::Attrs().set("diagonal", int_or(t, a, 1, "diagonal", 0)));
}

VarRef triu(Translator& t, const CallArgs& a) {
  return add(t, OpKind::Triu, {tensor(t, a.get(0, "input"), "triu")},
             ir::Attrs().set("diagonal", int_or(t, a, 1, "diagonal", 0)));
}

VarRef masked_fill(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "input"), "masked_fill");
  ValueId mask = tensor(t, a.get(1, "mask"), "masked_fill");
  if (type_of(t, mask).dtype != DType::b8) user_error("masked_fill: the mask must be a bool tensor", t.loc());
  DType dt = type_of(t, x).dtype;
  VarRef value = a.get(2, "value");
  ValueId v = is_tensor(value) ? cast(t, tensor(t, value, "masked_fill"), dt)
                               : constant(t, float_arg(t, value, "masked_fill"), dt);
  return add(t, OpKind::Where, {mask, v, x});
}

// F.embedding(input, weight, ...): rows of weight selected by the flattened indices.
VarRef embedding(Translator& t, const CallArgs& a) {
  ValueId idx = tensor(t, a.get(0, "input"), "embedding");
  ValueId w = tensor(t, a.get(1, "weight"), "embedding");
  VarRef max_norm = a.get(3, "max_norm");
  if (!is_none(max_norm)) unsupported(t, "embedding(max_norm=...)", "renormalise the weights before tracing");
  const ir::TensorType it = type_of(t, idx);
  ValueId flat = reshape_to(t, idx, {it.numel()});
  ValueId rows = node(t, OpKind::IndexSelect, {w, flat}, ir::Attrs().set("axis", int64_t{0}));
  ir::Shape s = it.shape;
  s.push_back(type_of(t, w).shape[1]);
  return wrap_value(reshape_to(t, rows, s));
}

}  // namespace aotrace::embed::ops

namespace aotrace::embed::ops {

// Tensor.unfold(dim, size, step): the windows [i * step, i * step + size) along `dim`, as a new
// last dim of length `size`; `dim` becomes the window count. One index_select of every
// window's positions, then the window dim moved last.
VarRef tensor_unfold(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "unfold");
  const ir::TensorType type = type_of(t, x);
  const int rank = std::max(type.rank(), 1);
  const int dim = normalise_dim(t, int_arg(t, a.get(1, "dimension"), "unfold"), rank, "unfold");
  const int64_t size = int_arg(t, a.get(2, "size"), "unfold"), step = int_arg(t, a.get(3, "step"), "unfold");
  if (type.rank() == 0) x = reshape_to(t, x, {ir::SymExpr(1)});
  auto length = type_of(t, x).shape[static_cast<size_t>(dim)].as_constant();
  if (!length) unsupported(t, "Tensor.unfold along a dynamic dim", "declare the dim static");
  if (step <= 0 || size < 0 || size > *length)
    user_error("unfold: size " + std::to_string(size) + " and step " + std::to_string(step) +
                   " do not fit a dim of " + std::to_string(*length),
               t.loc());
  const int64_t windows = (*length - size) / step + 1;
  auto range = [&](int64_t n, double start, double stride) {
    return node(t, OpKind::Arange, {}, ir::Attrs().set("shape", ir::Shape{ir::SymExpr(n)}).set("start", start)
                                           .set("step", stride).set("dtype", DType::i64));
  };
  ValueId starts = reshape_to(t, range(windows, 0, static_cast<double>(step)), {ir::SymExpr(windows), ir::SymExpr(1)});
  ValueId offsets = reshape_to(t, range(size, 0, 1), {ir::SymExpr(1), ir::SymExpr(size)});
  ValueId index = reshape_to(t, node(t, OpKind::Add, {starts, offsets}), {ir::SymExpr(windows * size)});
  ValueId picked = node(t, OpKind::IndexSelect, {x, index}, ir::Attrs().set("axis", int64_t{dim}));
  ir::Shape s = type_of(t, x).shape;
  s[static_cast<size_t>(dim)] = ir::SymExpr(windows);
  s.insert(s.begin() + dim + 1, ir::SymExpr(size));
  picked = reshape_to(t, picked, s);
  std::vector<int64_t> perm;
  for (int d = 0; d <= static_cast<int>(s.size()) - 1; ++d)
    if (d != dim + 1) perm.push_back(d);
  perm.push_back(dim + 1);
  return wrap_value(permute_to(t, picked, perm));
}

}  // namespace aotrace::embed::ops
