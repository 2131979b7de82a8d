// cuda_sort_wide_topks (pipeline pass "cuda-sort-wide-topks"): on the GPU a topk of k < n over a
// static axis of at least Options::cuda_block_row_min positions runs on thread blocks, where as a
// topk a thread walks each row alone (emit_topk_rows, emit_topk_heap: top-k sampling's
// torch.topk(logits, 200) over 50257 would be one of the GPU's threads for 50257 dependent steps):
//   chunked  (floating x, k <= kRowTile / 2, n >= 2 · kRowTile >= 2 · the threshold): the row padded with values
//            that lose to every element (largest: -inf; smallest: NaN, which sorts last; ties
//            with real ones lose by index) to chunks of kRowTile, the topk of each chunk (its
//            rows sorted whole: a block per chunk, one shared tile), the chunks' k best (their
//            indices made global) as the candidates of a topk of k again (chunked again while
//            long): top-200 of 50257 is 25 blocks, then 3, then a sort of 600, where one block
//            would sort the whole row;
//   sorted whole: the rows sorted by a thread block each (plan.cpp block_rows,
//            emit_topk_block_sort), the first k indices sliced and the values gathered.
// The same results as the topk: candidates are in chunk order, each chunk's best first, so equal
// values keep the lower index first at every stage (NaN the largest). The sorted indices of
// whole rows are a buffer of their own, rows × n × 8 bytes: at most kSortedTopkMaxSlots slots
// (at the symbols' maxima), else the topk stays (rows enough to fill the GPU a thread each).
// Test: lowering_tests Cuda.WideTopksSortTheirRows, Cuda.NarrowTopksOfLongRowsGoByChunks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lowering/cuda/cuda_backend.h"
#include "lowering/passes.h"

namespace aotrace::lowering::cuda {
namespace {

struct Topk {
  ir::ValueId values, indices;
};

class TopkRewriter {
 public:
  TopkRewriter(ir::Graph& g, int64_t min_positions) : g_(g), min_(min_positions), max_(max_bindings(g)) {}

  // Whether topk `n` of graph `old` runs on thread blocks (chunked or sorted whole).
  bool rewrites(const ir::Graph& old, const ir::Node& n) const {
    return n.op == ir::OpKind::TopK && on_blocks(old.type(n.operands[0]), n.attrs);
  }

  // topk(x) with `attrs` appended to the graph: chunked, sorted whole, or a topk as it is.
  Topk add(ir::ValueId x, const ir::Attrs& attrs, const SourceLoc& loc) {
    const ir::TensorType xt = g_.type(x);
    const int64_t axis = attrs.i("axis"), k = attrs.i("k");
    if (const std::optional<int64_t> n = on_blocks(xt, attrs)) {
      // Chunks of kRowTile sorted by blocks: where the threshold lets a block take such a row.
      if (ir::is_floating(xt.dtype) && k <= kRowTile / 2 && *n >= 2 * kRowTile && kRowTile >= min_)
        return chunked(x, attrs, loc, *n);
      ir::Attrs whole = attrs;
      whole.set("k", *n);
      const ir::ValueId sorted = g_.add_node(ir::OpKind::TopK, {x}, whole, loc)[1];
      const ir::ValueId indices = g_.add(
          ir::OpKind::Slice, {sorted}, attrs_of({{"axis", axis}, {"start", int64_t{0}}, {"end", k}, {"step", int64_t{1}}}), loc);
      return {g_.add(ir::OpKind::Gather, {x, indices}, attrs_of({{"axis", axis}}), loc), indices};
    }
    const std::vector<ir::ValueId> r = g_.add_node(ir::OpKind::TopK, {x}, attrs, loc);
    if (topk_as_heap(g_, g_.nodes.back()))  // its values gathered, as decompose does
      return {g_.add(ir::OpKind::Gather, {x, r[1]}, attrs_of({{"axis", axis}}), loc), r[1]};
    return {r[0], r[1]};
  }

 private:
  Topk chunked(ir::ValueId x, const ir::Attrs& attrs, const SourceLoc& loc, int64_t n) {
    const ir::TensorType xt = g_.type(x);
    const int64_t axis = attrs.i("axis"), k = attrs.i("k"), chunk = kRowTile, chunks = (n + chunk - 1) / chunk;
    const auto a = static_cast<size_t>(axis);
    const bool largest = attrs.has("largest") && attrs.i("largest") != 0;
    if (chunks * chunk > n) {
      std::vector<int64_t> low(xt.shape.size(), 0), high(xt.shape.size(), 0);
      high[a] = chunks * chunk - n;
      const double loses = largest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
      x = g_.add(ir::OpKind::Pad, {x}, attrs_of({{"low", low}, {"high", high}, {"value", loses}}), loc);
    }
    ir::Shape split = xt.shape;
    split[a] = ir::SymExpr(chunks);
    split.insert(split.begin() + axis + 1, ir::SymExpr(chunk));
    ir::Attrs per_chunk = attrs;
    per_chunk.set("axis", axis + 1);
    const Topk first = add(g_.add(ir::OpKind::Reshape, {x}, attrs_of({{"shape", split}}), loc), per_chunk, loc);
    // Chunk c's indices + c · chunk: positions in the row.
    ir::Shape starts_shape(split.size(), ir::SymExpr(1));
    starts_shape[a] = ir::SymExpr(chunks);
    ir::ValueId starts = g_.add(ir::OpKind::Arange, {},
                                attrs_of({{"shape", ir::Shape{ir::SymExpr(chunks)}}, {"start", 0.0},
                                          {"step", static_cast<double>(chunk)}, {"dtype", ir::DType::i64}}), loc);
    starts = g_.add(ir::OpKind::Reshape, {starts}, attrs_of({{"shape", starts_shape}}), loc);
    ir::Shape merged = xt.shape;
    merged[a] = ir::SymExpr(chunks * k);
    auto candidates = [&](ir::ValueId v) { return g_.add(ir::OpKind::Reshape, {v}, attrs_of({{"shape", merged}}), loc); };
    const ir::ValueId positions = candidates(g_.add(ir::OpKind::Add, {first.indices, starts}, {}, loc));
    const Topk second = add(candidates(first.values), attrs, loc);
    return {second.values, g_.add(ir::OpKind::Gather, {positions, second.indices}, attrs_of({{"axis", axis}}), loc)};
  }

  // The topk's static row length where thread blocks take it: at least min_ positions, k short of
  // them, the sorted indices within kSortedTopkMaxSlots.
  std::optional<int64_t> on_blocks(const ir::TensorType& x, const ir::Attrs& attrs) const {
    if (x.shape.empty()) return std::nullopt;
    const std::optional<int64_t> n = x.shape[static_cast<size_t>(attrs.i("axis"))].as_constant();
    if (!n || *n < min_ || attrs.i("k") >= *n || planned_size(x.numel(), max_) > kSortedTopkMaxSlots) return std::nullopt;
    return n;
  }

  ir::Graph& g_;
  const int64_t min_;
  const ir::SymBindings max_;
};

}  // namespace

ir::Graph cuda_sort_wide_topks(ir::Graph g, int64_t min_positions) {
  const TopkRewriter probe(g, min_positions);
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) { return probe.rewrites(g, n); })) return g;
  GraphCopy c = copy_signature(g);
  TopkRewriter rewriter(c.graph, min_positions);
  for (const ir::Node& n : g.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    if (!probe.rewrites(g, n)) {
      copy_node(c, n, operands);
      continue;
    }
    const Topk r = rewriter.add(operands[0], n.attrs, n.loc);
    c.map[static_cast<size_t>(n.results[0])] = r.values;
    c.map[static_cast<size_t>(n.results[1])] = r.indices;
  }
  return finish_copy(std::move(c), g);
}

}  // namespace aotrace::lowering::cuda
