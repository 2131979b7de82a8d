// plan_memory: gives every Arena buffer a 64-byte-aligned offset in one arena. A buffer is live
// from the kernel that writes it to the last kernel that reads it; greedy first-fit in kernel
// order places it at the lowest offset that overlaps no buffer live at the same time, so a
// buffer reuses the space of one whose last use is earlier. arena_bytes is the peak;
// arena_bytes_at_min the peak of the same first-fit with every dynamic dim at its minimum.
// Test: lowering_tests MemoryPlan.* (reuse along a chain, no overlap of live buffers).
#include <algorithm>

#include "lowering/passes.h"

namespace aotrace::lowering {

static int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

ir::ExecutionPlan plan_memory(const Schedule& s) {
  const size_t n = s.buffers.size();
  std::vector<int> first_def(n, -1), last_use(n, -1);
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const auto& bufs = s.kernels[k].buffers;
    for (size_t a = 0; a < bufs.size(); ++a) {
      auto b = static_cast<size_t>(bufs[a]);
      if (a == 0 && first_def[b] < 0) first_def[b] = static_cast<int>(k);
      last_use[b] = std::max(last_use[b], static_cast<int>(k));
    }
  }
  // First-fit of the Arena buffers with the given sizes: their offsets (0 for the others) and
  // the peak.
  auto layout = [&](auto size_of, std::vector<int64_t>& offsets) {
    struct Placed { int64_t offset, size; int last_use; };
    std::vector<Placed> placed;
    int64_t peak = 0;
    offsets.assign(n, 0);
    for (size_t b = 0; b < n; ++b) {
      if (s.buffers[b].kind != ir::PlanBuffer::Kind::Arena) continue;
      // Buffers are created in kernel order, so `first_def` grows with b.
      std::vector<Placed> live;
      for (const Placed& p : placed)
        if (p.last_use >= first_def[b]) live.push_back(p);
      std::sort(live.begin(), live.end(), [](const Placed& x, const Placed& y) { return x.offset < y.offset; });
      int64_t size = align64(std::max<int64_t>(size_of(s.buffers[b]), 1)), offset = 0;
      for (const Placed& p : live) {
        if (offset + size <= p.offset) break;
        offset = std::max(offset, align64(p.offset + p.size));
      }
      offsets[b] = offset;
      placed.push_back({offset, size, last_use[b]});
      peak = std::max(peak, offset + size);
    }
    return peak;
  };
  ir::ExecutionPlan plan;
  std::vector<int64_t> offsets, unused;
  plan.arena_bytes = layout([](const LogicalBuffer& lb) { return lb.size_bytes; }, offsets);
  plan.arena_bytes_at_min = layout([](const LogicalBuffer& lb) { return lb.min_size_bytes; }, unused);
  for (size_t b = 0; b < n; ++b) {
    const LogicalBuffer& lb = s.buffers[b];
    plan.buffers.push_back(ir::PlanBuffer{lb.kind, lb.index, offsets[b], lb.size_bytes});
  }
  for (const ScheduledKernel& k : s.kernels) plan.calls.push_back({k.symbol, k.buffers, k.what, k.nodes});
  return plan;
}

}  // namespace aotrace::lowering
