// cuda_split_reductions (pipeline pass "cuda-split-reductions"): an f32 (f16, bf16) sum, maximum, minimum,
// argmax or argmin of many positions into few outputs (x.sum(), x.abs().amax() over a whole
// tensor, a mean over a long axis of a few rows) is two reductions: the first over chunks of the
// positions into `parts` partials per output, the second over the partials. As one reduction it
// is a thread block per output (plan.cpp block_reduction): one of the GPU's 100+ multiprocessors
// for x.sum(); split, the first has outputs × parts warps streaming their chunks (the grid), the
// second a warp per output over the partials. Maxima and minima are the same numbers (NaN
// propagates through the partials); a sum adds in another order (a tree of partial sums, no less
// accurate; f16 and bf16 partial sums are f32, the total rounded once). An argmax or argmin (one axis: x.argmax() of a whole tensor) splits too
// (split_arg_reduction): the first stage's indices within the chunks, a gather of those extremes,
// the first chunk holding the overall extreme, its start plus its index: the same first position
// torch finds.
//   How: each run of consecutive reduced axes is one axis (a free reshape: movement ops are index
//   maps in the kernel reading them), the innermost such axis of extent E is split [parts, E/parts]
//   (parts divides E: the chunks are contiguous where that axis is innermost), the first reduction
//   keeps `parts` where the axis was, the second reduces it, a reshape restores keepdim's ones.
//   parts: at most kSplitTargetWarps / outputs (enough warps for a big GPU's residency) and
//   positions / chunk (Options::cuda_split_reduce_chunk: each first-stage output reduces at least
//   that many), at least kSplitMinParts (fewer do not beat a block per output). The reduced
//   extents must be static; the outputs are counted at the symbols' maxima.
// The CPU keeps one reduction (its threads split the outputs, its vectors the positions).
// Test: lowering_tests Cuda.HugeReductionsSplitAcrossTheGrid, Cuda.HugeArgReductionsSplitAcrossTheGrid.
#include <optional>

#include "lowering/cuda/cuda_backend.h"
#include "lowering/passes.h"

namespace aotrace::lowering::cuda {
namespace {

using Ints = std::vector<int64_t>;

// The rewrite of one reduction: its input reshaped to `split`, the first reduction over
// `first_axes` of that (keeping the parts), the second over the parts: axis `second_axis` of the
// first's result, or with keepdim, of that result reshaped to the output's shape with the parts
// inserted at axis `keepdim_axis` (where the split run of axes starts: a free view).
struct Split {
  int64_t parts = 0;
  ir::Shape split;
  Ints first_axes;
  int64_t second_axis = 0;
  int64_t keepdim_axis = 0;
};

// The reduced axes' extents must be static (the split's parts divide one); the kept ones may be
// symbolic, counted at their maxima.
std::optional<Split> split_of(const ir::Graph& g, const ir::Node& n, int64_t chunk, const ir::SymBindings& max) {
  const std::optional<int64_t> positions = reduced_positions(g, n, max);
  if (!positions) return std::nullopt;
  const ir::Shape& dims = g.type(n.operands[0]).shape;
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t a : n.attrs.ints("axes")) {
    if (!dims[static_cast<size_t>(a)].is_constant()) return std::nullopt;
    reduced[static_cast<size_t>(a)] = true;
  }
  // Consecutive reduced axes merged: `merged` extents, `merged_reduced` which are reduced.
  ir::Shape merged;
  Ints merged_start;  // the axis where each starts
  std::vector<bool> merged_reduced;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d] && d > 0 && reduced[d - 1]) {
      merged.back() = merged.back() * dims[d];
    } else {
      merged.push_back(dims[d]);
      merged_start.push_back(static_cast<int64_t>(d));
      merged_reduced.push_back(reduced[d]);
    }
  }
  const int64_t outputs = planned_size(g.type(n.results[0]).numel(), max);
  if (*positions == 0 || outputs == 0) return std::nullopt;
  const int64_t most = std::min((kSplitTargetWarps + outputs - 1) / outputs, *positions / chunk);
  // The innermost reduced axis with a divisor in [kSplitMinParts, most]: the largest.
  for (size_t a = merged.size(); a-- > 0;) {
    if (!merged_reduced[a]) continue;
    const int64_t extent = merged[a].constant();
    for (int64_t parts = std::min(most, extent); parts >= kSplitMinParts; --parts) {
      if (extent % parts != 0) continue;
      Split s;
      s.parts = parts;
      int64_t kept_before = 0;
      for (size_t d = 0; d < merged.size(); ++d) {
        if (d == a) {
          s.second_axis = kept_before;
          s.keepdim_axis = merged_start[d];
          s.split.push_back(parts);
          s.first_axes.push_back(static_cast<int64_t>(s.split.size()));  // the chunk
          s.split.push_back(extent / parts);
          continue;
        }
        if (merged_reduced[d]) s.first_axes.push_back(static_cast<int64_t>(s.split.size()));
        else ++kept_before;
        s.split.push_back(merged[d]);
      }
      return s;
    }
  }
  return std::nullopt;
}

// An argmax or argmin split: the first finds each chunk's first extreme (its index within the
// chunk, keepdim), a gather reads those extremes, the second finds the first chunk holding the
// overall one (ties: the earlier chunk, whose positions come first; NaN: the chunk with the first
// NaN), and the index is that chunk's start plus the index within it. `x` is the split view.
ir::ValueId split_arg_reduction(ir::Graph& g, const ir::Node& n, ir::ValueId x, const Split& s, const ir::Shape& out) {
  AOT_CHECK(s.first_axes.size() == 1, "cuda-split-reductions: an argmax or argmin reduces one axis");
  const int64_t chunk_axis = s.first_axes[0], parts_axis = chunk_axis - 1;
  const ir::ValueId within = g.add(n.op, {x}, attrs_of({{"axes", Ints{chunk_axis}}, {"keepdim", int64_t{1}}}), n.loc);
  const ir::ValueId extremes = g.add(ir::OpKind::Gather, {x, within}, attrs_of({{"axis", chunk_axis}}), n.loc);
  const ir::ValueId part = g.add(n.op, {extremes}, attrs_of({{"axes", Ints{parts_axis}}, {"keepdim", int64_t{1}}}), n.loc);
  const ir::ValueId in_part = g.add(ir::OpKind::Gather, {within, part}, attrs_of({{"axis", parts_axis}}), n.loc);
  const double chunk = static_cast<double>(s.split[static_cast<size_t>(chunk_axis)].constant());
  const ir::ValueId start = g.add(ir::OpKind::Mul, {part, g.constant(chunk, g.type(within).dtype, n.loc)}, {}, n.loc);
  const ir::ValueId index = g.add(ir::OpKind::Add, {start, in_part}, {}, n.loc);
  return g.add(ir::OpKind::Reshape, {index}, attrs_of({{"shape", out}}), n.loc);
}

}  // namespace

ir::Graph cuda_split_reductions(ir::Graph old, int64_t chunk) {
  AOT_CHECK(chunk >= 1, "cuda-split-reductions: a chunk of at least one position");
  GraphCopy c = copy_signature(old);
  const ir::SymBindings max = max_bindings(old);
  bool any = false;
  for (const ir::Node& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    const std::optional<Split> s = split_of(old, n, chunk, max);
    if (!s) {
      copy_node(c, n, operands);
      continue;
    }
    any = true;
    ir::Graph& g = c.graph;
    const ir::ValueId split = g.add(ir::OpKind::Reshape, {operands[0]}, attrs_of({{"shape", s->split}}), n.loc);
    if (n.op == ir::OpKind::ArgMax || n.op == ir::OpKind::ArgMin) {
      c.map[static_cast<size_t>(n.results[0])] = split_arg_reduction(g, n, split, *s, old.type(n.results[0]).shape);
      continue;
    }
    // An f16 or bf16 sum adds in f32 and rounds once, as one reduction does: its partials are f32.
    const ir::DType type = old.type(n.results[0]).dtype;
    const bool half_sum = n.op == ir::OpKind::ReduceSum && type != ir::DType::f32;
    const ir::ValueId partials =
        g.add(n.op, {half_sum ? g.cast(split, ir::DType::f32, n.loc) : split},
              attrs_of({{"axes", s->first_axes}, {"keepdim", int64_t{0}}}), n.loc);
    ir::ValueId parts = partials;
    int64_t axis = s->second_axis;
    // With keepdim, the output's ones in the view the second reduction reads.
    if (n.attrs.has("keepdim") && n.attrs.i("keepdim") != 0) {
      ir::Shape shape = old.type(n.results[0]).shape;
      shape.insert(shape.begin() + s->keepdim_axis, s->parts);
      parts = g.add(ir::OpKind::Reshape, {partials}, attrs_of({{"shape", shape}}), n.loc);
      axis = s->keepdim_axis;
    }
    ir::ValueId total = g.add(n.op, {parts}, attrs_of({{"axes", Ints{axis}}, {"keepdim", int64_t{0}}}), n.loc);
    if (half_sum) total = g.cast(total, type, n.loc);
    c.map[static_cast<size_t>(n.results[0])] = total;
  }
  return any ? finish_copy(std::move(c), old) : old;
}

}  // namespace aotrace::lowering::cuda
