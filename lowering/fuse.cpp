// fuse: decides which values are materialised (written to a buffer by a kernel) and which are
// inlined into the kernel that reads them. Walking the graph from the outputs back:
//   - Full, Arange and movement ops (reshape, permute, expand, slice, flip, pad, concat) are
//     inlined: a constant, or an index map (a view) applied when the consumer loads —
//     broadcasts, transposes, slices and padding cost no copy. But a reshape of a permute read
//     by a matmul or conv (attention's heads merged back) is copied once (merges_permuted_dims);
//   - an elementwise or index op (gather, index_select) is inlined when every use lands in one
//     kernel and none is an operand of a matmul, conv or pool (those read each operand element
//     many times: it would be recomputed per read), nor broadcast to at least kBroadcastReread
//     times its size (squeeze-excitation's sigmoid of [1, C, 1, 1] scaling [1, C, H, W], layer
//     norm's rsqrt per row: computed once into a small buffer rather than per element), nor
//     read through kBroadcastReread or more views (the taps of a channels-last depthwise conv:
//     its batch norm and activation then stay the producing matmul's epilogue);
//   - a reduction (Reduce, Matmul, Conv, Pool) is inlined into its consumer's kernel — as that
//     kernel's one reduction, with the elementwise consumers as its epilogue — when it has one
//     use, reached through same-shape elementwise ops (evaluated once per output element), and
//     is not itself inside another reduction's operand; its operand's elementwise ops form its
//     prologue (not for matmul/conv/pool, see above);
//   - scans (cumsum, scatter) and sorts (topk, two results) are always materialised: they walk
//     an axis in order, in a kernel of their own;
//   - the input of a conv is materialised (a contiguous buffer, padded by pad_conv_inputs), so
//     conv kernels read it without index maps or bounds checks; so are the operands and the
//     input tiles of the Winograd transforms (the tiles are a GEMM operand), while the output
//     transform is inlined as its consumers' reduction. But a Winograd conv of few input
//     channels is one kernel: its GEMMs (U pre-packed) and input tiles are inlined into the
//     output transform's kernel, which keeps that as its reduction (fused_winograd_gemm);
//   - pack_weights' cast of an f16/bf16 weight's f32 panels back to its type is inlined into the
//     GEMM that reads the panels (packed_weight_cast);
//   - graph outputs and everything else are materialised: each is the root of a kernel.
// Test: lowering_tests Fusion.* (an elementwise chain is one kernel, softmax's kernels, the
// linear epilogue, conv + batch-norm + relu, the heads' merge copied for the GEMM), Winograd.*
// (the fused conv, up to 128 input channels), and every end-to-end test through its kernels.
#include <algorithm>
#include <set>
#include <tuple>

#include "lowering/passes.h"

namespace aotrace::lowering {
namespace {

// Where a value is evaluated: in which kernel, and on what path from that kernel's root.
struct Context {
  int kernel = 0;
  bool identity = true;            // evaluated at the root's own index (same shape, no movement)
  bool in_reduction = false;       // inside a Reduce's operand
  bool reread = false;             // inside a Matmul/Conv/Pool operand (elements read many times)
  auto operator<=>(const Context&) const = default;
};

// Winograd convs of at most this many input channels are one kernel (fused_winograd_gemm).
// Deeper ones keep their GEMM apart, whose K panels are 4× longer than the fused kernel's (its
// tiles of all 16 points stay in cache): on resnet50_b4 (1 thread) fused/apart 56×56×64 9.3/18.0
// ms, 28×28×128 9.2/10.6, 14×14×256 15.8/15.4, 7×7×512 7.8/7.1.
constexpr int64_t kFusedWinogradChannels = 128;
// ... and output rows of at most this many columns (its blocks are whole rows of tiles, on the
// stack of the thread running them).
constexpr int64_t kFusedWinogradWidth = 512;

// A value whose consumer's result is this many times bigger (a broadcast) is read that many
// times per element: an elementwise producer is then computed once, not per read.
constexpr int64_t kBroadcastReread = 4;

// Winograd transforms count as reductions: each a kernel's one loop structure of its own
// (cpu/emit_winograd.cpp), the output transform with its elementwise consumers as epilogue.
bool is_reduction(ir::OpCategory c) {
  using C = ir::OpCategory;
  return c == C::Reduce || c == C::Matmul || c == C::Conv || c == C::Pool || c == C::Transform;
}

bool always_materialised(ir::OpCategory c) {
  return c == ir::OpCategory::Scan || c == ir::OpCategory::Sort;
}

struct Fuser {
  const ir::Graph& g;
  std::vector<std::vector<std::pair<size_t, int>>> uses;  // value → (node index, operand pos)
  std::vector<std::set<Context>> contexts;                 // value → where it is evaluated
  std::vector<bool> is_output;
  std::vector<ir::ValueId> kernel_reduction;               // kernel → its reduction or -1
  std::vector<ir::ValueId> kernel_root;
  std::vector<bool> materialised;
  std::vector<int> producer_index;  // value → the node computing it, or -1
  ir::SymBindings max;  // dynamic dims at their maxima: sizes compared there

  explicit Fuser(const ir::Graph& graph)
      : g(graph), uses(graph.num_values()), contexts(graph.num_values()),
        is_output(graph.num_values(), false), materialised(graph.num_values(), false),
        producer_index(graph.num_values(), -1), max(max_bindings(graph)) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (size_t p = 0; p < g.nodes[i].operands.size(); ++p)
        uses[static_cast<size_t>(g.nodes[i].operands[p])].push_back({i, static_cast<int>(p)});
      for (ir::ValueId r : g.nodes[i].results) producer_index[static_cast<size_t>(r)] = static_cast<int>(i);
    }
    for (ir::ValueId v : g.outputs) is_output[static_cast<size_t>(v)] = true;
    for (const auto& in : g.inputs) materialised[static_cast<size_t>(in.value)] = true;
    for (const auto& w : g.weights) materialised[static_cast<size_t>(w.value)] = true;
  }

  // The contexts `v` inherits from its consumers: from every result of a consumer (topk's
  // indices may be used while its values are not).
  std::set<Context> derived_contexts(ir::ValueId v) const {
    std::set<Context> out;
    // Read through kBroadcastReread or more views (a stencil's taps: slices of one padded
    // input): each element is read that often, so an elementwise producer is computed once.
    const auto& vu = uses[static_cast<size_t>(v)];
    const bool taps = vu.size() >= static_cast<size_t>(kBroadcastReread) &&
                      std::all_of(vu.begin(), vu.end(), [&](const std::pair<size_t, int>& u) {
                        return ir::op_info(g.nodes[u.first].op).category == ir::OpCategory::Movement;
                      });
    for (auto [node_index, pos] : uses[static_cast<size_t>(v)]) {
      const ir::Node& c = g.nodes[node_index];
      ir::OpCategory cat = ir::op_info(c.op).category;
      for (ir::ValueId r : c.results)
        for (Context ctx : contexts[static_cast<size_t>(r)]) {
          if (!ir::is_elementwise(cat)) ctx.identity = false;
          if (g.type(v).shape != g.type(r).shape) ctx.identity = false;
          if (cat == ir::OpCategory::Reduce) ctx.in_reduction = true;
          // Their operands are read many times per result (topk's values and indices kernels
          // each walk the row, a heap rereads it): computing a fused producer once is cheaper
          // than at every read.
          if (cat == ir::OpCategory::Matmul || cat == ir::OpCategory::Conv ||
              cat == ir::OpCategory::Pool || cat == ir::OpCategory::Sort || cat == ir::OpCategory::Transform || taps)
            ctx.reread = true;
          // Broadcast into a result kBroadcastReread times bigger: each element read that often
          // (not concat's or pad's: each operand element lands once in their bigger result).
          if (cat != ir::OpCategory::Reduce && c.op != ir::OpKind::Concat && c.op != ir::OpKind::Pad &&
              planned_size(g.type(r).numel(), max) >= kBroadcastReread * planned_size(g.type(v).numel(), max))
            ctx.reread = true;
          out.insert(ctx);
        }
    }
    return out;
  }

  static bool any_reread(const std::set<Context>& ctxs) {
    return std::any_of(ctxs.begin(), ctxs.end(), [](const Context& c) { return c.reread; });
  }

  // A reshape of a permute (attention's heads merged back: `y.transpose(1, 2).reshape(B, T, C)`,
  // which eager computes as a copy): as a GEMM operand it is no strided view, so the GEMM would
  // gather it element by element once per block of the other operand. Copied once instead.
  bool merges_permuted_dims(ir::ValueId v) const {
    const ir::Node* n = producer_of(v);
    if (n == nullptr || n->op != ir::OpKind::Reshape) return false;
    const ir::Node* from = producer_of(n->operands[0]);
    if (from == nullptr || from->op != ir::OpKind::Permute) return false;
    // A weight's permute + reshape is pack_weights' view of its panels, read in place.
    return std::none_of(g.weights.begin(), g.weights.end(),
                        [&](const auto& w) { return w.value == from->operands[0]; });
  }

  const ir::Node* producer_of(ir::ValueId v) const {
    int i = producer_index[static_cast<size_t>(v)];
    return i < 0 ? nullptr : &g.nodes[static_cast<size_t>(i)];
  }

  // The only use of `v`, or null.
  const ir::Node* single_user(ir::ValueId v) const {
    const auto& u = uses[static_cast<size_t>(v)];
    return u.size() == 1 ? &g.nodes[u[0].first] : nullptr;
  }

  // A Winograd conv's GEMMs, M = matmul(U, winograd_input(x)) with U pre-packed
  // (pack_weights), read only by the output transform, of at most kFusedWinogradChannels input
  // channels: M and its input tiles are computed in the output transform's kernel, a block of
  // tiles at a time in cache (cpu/emit_winograd.cpp), instead of passing through memory twice
  // each (resnet's 56×56×64 layers: 51 MB per conv).
  bool fused_winograd_gemm(ir::ValueId m) const {
    const ir::Node* n = producer_of(m);
    const ir::Node* user = single_user(m);
    if (n == nullptr || n->op != ir::OpKind::Matmul || !n->attrs.has("packed_a") || user == nullptr ||
        user->op != ir::OpKind::WinogradOutput || planned_size(g.type(n->operands[0]).shape.back(), max) > kFusedWinogradChannels ||
        user->attrs.ints("out").at(1) > kFusedWinogradWidth)
      return false;
    const ir::Node* tiles = producer_of(n->operands[1]);
    return tiles != nullptr && tiles->op == ir::OpKind::WinogradInput && single_user(n->operands[1]) == n &&
           !is_output[static_cast<size_t>(n->operands[1])];
  }

  // pack_weights' cast of an f16/bf16 weight's f32 panels back to its type, the packed operand
  // of a matmul or conv: the GEMM reads the panels in place (the cast is exact), so it is
  // inlined as the view under it is.
  bool packed_weight_cast(ir::ValueId v) const {
    const ir::Node* n = producer_of(v);
    const ir::Node* user = single_user(v);
    if (n == nullptr || n->op != ir::OpKind::Cast || user == nullptr) return false;
    const bool conv = user->op == ir::OpKind::Conv;
    if (!conv && user->op != ir::OpKind::Matmul) return false;
    return (user->attrs.has("packed_a") && user->operands[conv ? 1 : 0] == v) ||
           (!conv && user->attrs.has("packed_b") && user->operands[1] == v);
  }

  bool can_inline(ir::ValueId v, ir::OpCategory cat, const std::set<Context>& ctxs) const {
    if (is_output[static_cast<size_t>(v)] || ctxs.empty() || always_materialised(cat)) return false;
    if (fused_winograd_gemm(v) || packed_weight_cast(v)) return true;
    if (const ir::Node* user = single_user(v); user != nullptr && user->op == ir::OpKind::Matmul &&
                                               fused_winograd_gemm(user->results[0]))
      return true;  // the input tiles of such GEMMs
    for (auto [node_index, pos] : uses[static_cast<size_t>(v)]) {
      const ir::Node& user = g.nodes[node_index];
      if ((user.op == ir::OpKind::Conv && pos == 0) || ir::op_info(user.op).category == ir::OpCategory::Transform)
        return false;
    }
    // The input transform's tiles are a GEMM operand: computed once, into a buffer.
    if (const ir::Node* n = producer_of(v); n != nullptr && n->op == ir::OpKind::WinogradInput) return false;
    if (cat == ir::OpCategory::Source) return true;
    if (cat == ir::OpCategory::Movement) return !(any_reread(ctxs) && merges_permuted_dims(v));
    bool one_kernel = std::all_of(ctxs.begin(), ctxs.end(), [&](const Context& c) {
      return c.kernel == ctxs.begin()->kernel && !c.reread;
    });
    if (!one_kernel) return false;
    if (!is_reduction(cat)) return true;
    const Context& c = *ctxs.begin();
    return ctxs.size() == 1 && uses[static_cast<size_t>(v)].size() == 1 && c.identity &&
           !c.in_reduction && kernel_reduction[static_cast<size_t>(c.kernel)] < 0;
  }

  void visit(const ir::Node& n) {
    ir::OpCategory cat = ir::op_info(n.op).category;
    AOT_CHECK(n.results.size() == 1 || always_materialised(cat),
              "fusion expects single-result primitives (or topk)");
    for (ir::ValueId v : n.results) visit_result(v, cat);
  }

  void visit_result(ir::ValueId v, ir::OpCategory cat) {
    std::set<Context> ctxs = derived_contexts(v);
    if (can_inline(v, cat, ctxs)) {
      // (A fused Winograd conv's GEMMs and input tiles join the output transform's kernel,
      // which keeps that as its reduction.)
      ir::ValueId& reduction = kernel_reduction[static_cast<size_t>(ctxs.begin()->kernel)];
      if (is_reduction(cat) && reduction < 0) reduction = v;
      contexts[static_cast<size_t>(v)] = std::move(ctxs);
      return;
    }
    if (ctxs.empty() && !is_output[static_cast<size_t>(v)]) return;  // unused (no DCE run)
    int k = static_cast<int>(kernel_root.size());
    kernel_root.push_back(v);
    kernel_reduction.push_back(is_reduction(cat) ? v : -1);
    materialised[static_cast<size_t>(v)] = true;
    contexts[static_cast<size_t>(v)] = {Context{k, true, false, false}};
  }

  // Materialised values a kernel loads, in first-use order (depth-first over operands).
  void collect_reads(ir::ValueId v, const std::vector<int>& producer, std::vector<bool>& seen,
                     std::vector<ir::ValueId>& reads) const {
    if (seen[static_cast<size_t>(v)]) return;
    seen[static_cast<size_t>(v)] = true;
    if (materialised[static_cast<size_t>(v)]) {
      reads.push_back(v);
      return;
    }
    // Inlined values were given a context; one without was judged unused, and reaching it here
    // would pull its whole producer graph into this kernel, unchecked by the rules above.
    AOT_CHECK(!contexts[static_cast<size_t>(v)].empty(),
              "fusion inlines %" + std::to_string(v) + ", which it judged unused");
    for (ir::ValueId o : g.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])].operands)
      collect_reads(o, producer, seen, reads);
  }
};

}  // namespace

FusedGraph fuse(ir::Graph g) {
  Fuser f(g);
  for (size_t i = g.nodes.size(); i-- > 0;) f.visit(g.nodes[i]);

  std::vector<int> producer(g.num_values(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId r : g.nodes[i].results) producer[static_cast<size_t>(r)] = static_cast<int>(i);

  FusedGraph out;
  // Kernels were found from the outputs back: reverse them into execution order.
  for (size_t k = f.kernel_root.size(); k-- > 0;) {
    FusedKernel kernel;
    kernel.root = f.kernel_root[k];
    kernel.reduction = f.kernel_reduction[k];
    std::vector<bool> seen(g.num_values(), false);
    seen[static_cast<size_t>(kernel.root)] = true;
    for (ir::ValueId o : g.nodes[static_cast<size_t>(producer[static_cast<size_t>(kernel.root)])].operands)
      f.collect_reads(o, producer, seen, kernel.reads);
    out.kernels.push_back(std::move(kernel));
  }
  out.materialised = std::move(f.materialised);
  out.graph = std::move(g);
  return out;
}

}  // namespace aotrace::lowering
