// cuda_sort_wide_topks (pipeline pass "cuda-sort-wide-topks"): on the GPU a topk of k < n over a
// static axis of at least Options::cuda_block_row_min positions is its rows sorted whole (a thread block per
// row: plan.cpp block_rows, emit_topk_block_sort), the first k indices sliced and the values
// gathered at them; as a topk, a thread walks each row alone (emit_topk_rows, emit_topk_heap):
// top-k sampling's torch.topk(logits, 200) over 50257 would be one of the GPU's threads for
// 50257 dependent steps. The same results: the sort's order is topk's (the better value first;
// ties by the lower index; NaN the largest). The sorted indices of whole rows are a buffer of
// their own, rows × n × 8 bytes: at most kSortedTopkMaxSlots slots (at the symbols' maxima), else
// the topk stays (rows enough to fill the GPU a thread each).
// Test: lowering_tests Cuda.WideTopksSortTheirRows.
#include <algorithm>

#include "lowering/cuda/cuda_backend.h"
#include "lowering/passes.h"

namespace aotrace::lowering::cuda {
namespace {

bool sorted_whole(const ir::Graph& g, const ir::Node& n, const ir::SymBindings& max, int64_t min_positions) {
  if (n.op != ir::OpKind::TopK) return false;
  const ir::Shape& x = g.type(n.operands[0]).shape;
  if (x.empty()) return false;
  const std::optional<int64_t> length = x[static_cast<size_t>(n.attrs.i("axis"))].as_constant();
  return length && *length >= min_positions && n.attrs.i("k") < *length &&
         planned_size(g.type(n.operands[0]).numel(), max) <= kSortedTopkMaxSlots;
}

}  // namespace

ir::Graph cuda_sort_wide_topks(ir::Graph g, int64_t min_positions) {
  const ir::SymBindings max = max_bindings(g);
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) { return sorted_whole(g, n, max, min_positions); })) return g;
  GraphCopy c = copy_signature(g);
  for (const ir::Node& n : g.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    if (!sorted_whole(g, n, max, min_positions)) {
      copy_node(c, n, operands);
      continue;
    }
    const int64_t axis = n.attrs.i("axis");
    ir::Attrs whole = n.attrs;
    whole.set("k", *g.type(n.operands[0]).shape[static_cast<size_t>(axis)].as_constant());
    const std::vector<ir::ValueId> sorted = c.graph.add_node(ir::OpKind::TopK, operands, whole, n.loc);
    const ir::ValueId indices = c.graph.add(
        ir::OpKind::Slice, {sorted[1]},
        attrs_of({{"axis", axis}, {"start", int64_t{0}}, {"end", n.attrs.i("k")}, {"step", int64_t{1}}}), n.loc);
    c.map[static_cast<size_t>(n.results[0])] = c.graph.add(ir::OpKind::Gather, {operands[0], indices}, attrs_of({{"axis", axis}}), n.loc);
    c.map[static_cast<size_t>(n.results[1])] = indices;
  }
  return finish_copy(std::move(c), g);
}

}  // namespace aotrace::lowering::cuda
