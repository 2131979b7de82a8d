// Advanced indexing by integer tensors over several dims (x[rows, cols], x[:, i, j], x[b, :, t])
// and index assignment through integer tensors (x[rows, cols] = v, x[:, idx] = 0), as torch
// (numpy) defines them: the index tensors broadcast together to a shape B; B replaces the
// indexed dims where they are adjacent, and goes first otherwise.
//
// Both move the indexed dims of x first and flatten them into one dim of N positions; the
// index tensors (negative indices wrapped) become one linear index of shape B into it. Reading
// is an index_select of the linear index. Writing is a scatter along the N positions (each
// element of B writes, or adds, its row where it points, in order: a repeated position keeps the
// last write, as torch's CPU loop).
#include "embed/torch_ops_builders.h"

namespace aotrace::embed::ops {

namespace {

// The broadcast of index shapes (right-aligned, each dim equal or 1).
ir::Shape broadcast_of(Translator& t, const std::vector<ir::Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  ir::Shape out(rank, ir::SymExpr(1));
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      ir::SymExpr& o = out[rank - s.size() + i];
      if (s[i] == ir::SymExpr(1) || o == s[i]) continue;
      if (o == ir::SymExpr(1)) {
        o = s[i];
        continue;
      }
      user_error("shape mismatch: indexing tensors could not be broadcast together (" + o.str() + " vs " +
                     s[i].str() + ")",
                 t.loc());
    }
  return out;
}

ValueId i64_constant(Translator& t, int64_t v) { return constant(t, static_cast<double>(v), DType::i64); }

}  // namespace

AdvancedIndex advanced_index(Translator& t, ValueId x, const std::vector<std::pair<int, ValueId>>& indices) {
  const ir::TensorType type = type_of(t, x);
  AdvancedIndex r;
  std::vector<ir::Shape> shapes;
  for (const auto& [dim, index] : indices) {
    const ir::TensorType it = type_of(t, index);
    if (ir::is_floating(it.dtype) || it.dtype == DType::b8)
      user_error("tensors used as indices must be integer tensors (a bool mask only alone)", t.loc());
    r.dims.push_back(dim);
    shapes.push_back(it.shape);
  }
  r.adjacent = true;
  for (size_t k = 1; k < r.dims.size(); ++k) r.adjacent = r.adjacent && r.dims[k] == r.dims[k - 1] + 1;
  r.batch = broadcast_of(t, shapes);
  // The indexed dims first, in order, then the others.
  std::vector<int64_t> perm(r.dims.begin(), r.dims.end());
  for (int d = 0; d < type.rank(); ++d)
    if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end()) {
      perm.push_back(d);
      r.rest.push_back(type.shape[static_cast<size_t>(d)]);
    }
  ir::SymExpr n(1);
  ValueId linear = i64_constant(t, 0);
  // Where an index is past its own dim (torch raises), several of them could still make a linear
  // index in range, naming another element: it points past every position instead (a write
  // there is dropped).
  ValueId outside = -1;
  for (size_t k = 0; k < indices.size(); ++k) {
    const ir::SymExpr size = type.shape[static_cast<size_t>(r.dims[k])];
    if (!size.as_constant()) unsupported(t, "indexing a dynamic dim with a tensor", "declare the dim static");
    ValueId i = cast(t, indices[k].second, DType::i64);
    i = node(t, OpKind::Where, {node(t, OpKind::Lt, {i, i64_constant(t, 0)}), node(t, OpKind::Add, {i, i64_constant(t, size.constant())}), i});
    if (indices.size() > 1) {
      ValueId bad = node(t, OpKind::Or, {node(t, OpKind::Lt, {i, i64_constant(t, 0)}), node(t, OpKind::Ge, {i, i64_constant(t, size.constant())})});
      outside = outside < 0 ? bad : node(t, OpKind::Or, {outside, bad});
    }
    linear = node(t, OpKind::Add, {node(t, OpKind::Mul, {linear, i64_constant(t, size.constant())}), i});
    n = n * size;
  }
  if (outside >= 0) linear = node(t, OpKind::Where, {outside, i64_constant(t, n.constant()), linear});
  if (type_of(t, linear).shape != r.batch)
    linear = node(t, OpKind::Expand, {linear}, ir::Attrs().set("shape", r.batch));
  ir::SymExpr count(1);
  for (const auto& d : r.batch) count = count * d;
  r.linear = reshape_to(t, linear, {count});
  ir::Shape flat_shape{n};
  flat_shape.insert(flat_shape.end(), r.rest.begin(), r.rest.end());
  r.flat = reshape_to(t, permute_to(t, x, perm), flat_shape);
  r.positions = n;
  return r;
}

// The shape of x[indices] and how to reach it from [B..., rest...]: B in place of adjacent
// indexed dims (after the dims of `rest` before them), else first.
ValueId advanced_result(Translator& t, const AdvancedIndex& ix, ValueId gathered) {
  ir::Shape s = ix.batch;
  s.insert(s.end(), ix.rest.begin(), ix.rest.end());
  ValueId r = reshape_to(t, gathered, s);
  if (!ix.adjacent || ix.dims.front() == 0) return r;
  const int b = static_cast<int>(ix.batch.size()), before = ix.dims.front();
  std::vector<int64_t> perm;
  for (int d = 0; d < before; ++d) perm.push_back(b + d);
  for (int d = 0; d < b; ++d) perm.push_back(d);
  for (int d = b + before; d < static_cast<int>(s.size()); ++d) perm.push_back(d);
  return permute_to(t, r, perm);
}

ValueId advanced_getitem(Translator& t, ValueId x, const std::vector<std::pair<int, ValueId>>& indices) {
  AdvancedIndex ix = advanced_index(t, x, indices);
  ValueId gathered = node(t, OpKind::IndexSelect, {ix.flat, ix.linear}, ir::Attrs().set("axis", int64_t{0}));
  return advanced_result(t, ix, gathered);
}

ValueId advanced_setitem(Translator& t, ValueId x, const std::vector<std::pair<int, ValueId>>& indices,
                         ValueId value, bool accumulate) {
  const ir::TensorType type = type_of(t, x);
  AdvancedIndex ix = advanced_index(t, x, indices);
  // The value as x[indices] has it, then as [B..., rest...], then [numel(B), rest...].
  ValueId target = advanced_result(t, ix, node(t, OpKind::IndexSelect, {ix.flat, ix.linear}, ir::Attrs().set("axis", int64_t{0})));
  value = cast(t, value, type.dtype);
  if (type_of(t, value).shape != type_of(t, target).shape)
    value = node(t, OpKind::Expand, {value}, ir::Attrs().set("shape", type_of(t, target).shape));
  if (ix.adjacent && ix.dims.front() != 0) {  // back to B first
    const int b = static_cast<int>(ix.batch.size()), before = ix.dims.front();
    const int rank = type_of(t, value).rank();
    std::vector<int64_t> perm;
    for (int d = 0; d < b; ++d) perm.push_back(before + d);
    for (int d = 0; d < before; ++d) perm.push_back(d);
    for (int d = before + b; d < rank; ++d) perm.push_back(d);
    value = permute_to(t, value, perm);
  }
  const ir::SymExpr count = type_of(t, ix.linear).shape[0];
  ir::Shape rows{count};
  rows.insert(rows.end(), ix.rest.begin(), ix.rest.end());
  value = reshape_to(t, value, rows);
  // The values' rows written (accumulate: added) at their positions, in order.
  const char* what = accumulate ? "index_put(accumulate=True)" : "index_put";
  auto positions_along = [&](int dim, const ir::Shape& shape) {  // the linear index, broadcast along dim
    ir::Shape s(shape.size(), ir::SymExpr(1));
    s[static_cast<size_t>(dim)] = count;
    ValueId index = reshape_to(t, ix.linear, s);
    return s == shape ? index : node(t, OpKind::Expand, {index}, ir::Attrs().set("shape", shape));
  };
  if (ix.dims.size() == 1) {  // x[.., idx, ..] = v: a scatter along that dim of x itself, no transposes
    const int d = ix.dims.front();
    std::vector<int64_t> perm;
    for (int k = 1; k <= d; ++k) perm.push_back(k);
    perm.push_back(0);
    for (int k = d + 1; k < type.rank(); ++k) perm.push_back(k);
    value = permute_to(t, value, perm);
    return scatter_into(t, x, d, positions_along(d, type_of(t, value).shape), value, accumulate, what);
  }
  ValueId merged = scatter_into(t, ix.flat, 0, positions_along(0, rows), value, accumulate, what);
  // Back to x's layout: unflatten the indexed dims, then undo the permutation.
  ir::Shape unflat;
  for (int d : ix.dims) unflat.push_back(type.shape[static_cast<size_t>(d)]);
  unflat.insert(unflat.end(), ix.rest.begin(), ix.rest.end());
  merged = reshape_to(t, merged, unflat);
  std::vector<int64_t> perm(ix.dims.begin(), ix.dims.end());
  for (int d = 0; d < type.rank(); ++d)
    if (std::find(ix.dims.begin(), ix.dims.end(), d) == ix.dims.end()) perm.push_back(d);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return permute_to(t, merged, inverse);
}

// torch.index_put(self, indices, values, accumulate=False): a tuple of index tensors, one per
// leading dim (None entries: not yet), as x[i0, i1, ...] = values.
VarRef index_put(Translator& t, const CallArgs& a) {
  ValueId x = tensor(t, a.get(0, "self"), "index_put");
  auto items = sequence_items(t, a.get(1, "indices"));
  if (!items || items->empty()) user_error("index_put: indices must be a tuple of tensors (torch raises here too)", t.loc());
  std::vector<std::pair<int, ValueId>> indices;
  for (size_t d = 0; d < items->size(); ++d) {
    if (is_none((*items)[d])) unsupported(t, "index_put with a None index", "index with x[:, i] = v instead");
    ValueId i = tensor(t, (*items)[d], "index_put");
    if (type_of(t, i).dtype == DType::b8) unsupported(t, "index_put with a bool mask", "use torch.where(mask, v, x)");
    indices.emplace_back(static_cast<int>(d), i);
  }
  ValueId values = tensor_or_scalar(t, a.get(2, "values"), type_of(t, x).dtype, "index_put");
  return wrap_value(advanced_setitem(t, x, indices, values, bool_arg(t, a.get(3, "accumulate"), false)));
}

}  // namespace aotrace::embed::ops
