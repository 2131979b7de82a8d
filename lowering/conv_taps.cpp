// conv_taps: a conv's kernel taps that read only padding, for every output position, are cut
// from its weight. They multiply zeros: a 3×3 conv (padding 1) of a 1×1 image is a 1×1 conv,
// and DeepLab's ASPP convs (dilation 12, 24, 36) of feature maps smaller than their dilation
// are 1×1 convs too (torch pads the input by the dilation on each side: 960 channels of a 4×4
// map became 76×76, 22 MB, and the conv took 9 ms for 35 MFLOP).
//
// Along each spatial dim (static sizes; stride s, dilation d, kernel K, input H, padding low p,
// output O), tap k reads input positions o·s + k·d - p for o in [0, O): it is live where that
// range meets [0, H). The live taps are one run [k0, k1] (the range moves with k), so the conv
// becomes conv(x, W[..., k0:k1+1, ...]) with padding low p - k0·d and high its high minus
// (K - 1 - k1)·d: the same output size, the same sums (the dropped products were all with zero
// padding). A padding may become negative: the conv crops there (IR conv semantics).
//
// Taken for convs (any dtype, groups, rank) with a static weight of a known tensor (the new
// weight holds the kept taps) and static spatial sizes (any batch), where some tap is cut and
// some kept.
// Runs after DCE (only live convs) and before channels-last and winograd, so that a conv left
// with a 1×1 kernel takes their 1×1 paths.
// Test: lowering_tests GraphPasses.ConvTaps*, Dynamic.GroupedConvsAndCutTapsWithASymbolicBatch.
#include <cstring>

#include "lowering/passes.h"

namespace aotrace::lowering {
namespace {

struct Trim {
  std::vector<int64_t> first, last;  // the kept taps per spatial dim
  bool cuts = false;
};

// The live taps of conv `n`, or no cut where a spatial size is symbolic (the batch may be) or
// no tap reads the input.
Trim live_taps(const ir::Graph& g, const ir::Node& n) {
  Trim t;
  const ir::Shape &xs = g.type(n.operands[0]).shape, &os = g.type(n.results[0]).shape;
  auto ws = g.type(n.operands[1]).static_shape();
  if (!ws) return {};
  const std::vector<int64_t> stride = n.attrs.ints("stride"), dilation = n.attrs.ints("dilation"),
                             low = n.attrs.ints("pad_low");
  for (size_t s = 0; s < stride.size(); ++s) {
    const std::optional<int64_t> in = xs[2 + s].as_constant(), out = os[2 + s].as_constant();
    if (!in || !out) return {};
    const int64_t H = *in, K = (*ws)[2 + s], O = *out;
    if (O == 0 || H == 0) return {};
    auto live = [&](int64_t k) {
      const int64_t lo = k * dilation[s] - low[s], hi = lo + (O - 1) * stride[s];
      return hi >= 0 && lo <= H - 1;
    };
    int64_t k0 = 0, k1 = K - 1;
    while (k0 < K && !live(k0)) ++k0;
    if (k0 == K) return {};  // every tap reads padding: the output is the bias (left as it is)
    while (!live(k1)) --k1;
    t.first.push_back(k0);
    t.last.push_back(k1);
    t.cuts = t.cuts || k0 > 0 || k1 < K - 1;
  }
  return t;
}

}  // namespace

ir::Graph conv_taps(ir::Graph old) {
  const std::vector<int> weight_index = weight_indices(old);
  GraphCopy c = copy_signature(old);
  for (const ir::Node& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    const int w = n.op == ir::OpKind::Conv ? weight_index[static_cast<size_t>(n.operands[1])] : -1;
    const Trim trim = w >= 0 ? live_taps(old, n) : Trim{};
    if (!trim.cuts) {
      copy_node(c, n, std::move(operands));
      continue;
    }
    // The kept taps of W [O, C, K...] as a new weight, row by row along the last spatial dim.
    const auto& src = old.weights[static_cast<size_t>(w)];
    ir::TensorType wt = old.type(src.value);
    const std::vector<int64_t> ws = *wt.static_shape();
    const size_t spatial = ws.size() - 2;
    std::vector<int64_t> kept = {ws[0], ws[1]};
    for (size_t s = 0; s < spatial; ++s) kept.push_back(trim.last[s] - trim.first[s] + 1);
    // tap_stride[s]: the distance between taps along spatial dim s in a filter.
    std::vector<int64_t> tap_stride(spatial, 1);
    for (size_t s = spatial - 1; s-- > 0;) tap_stride[s] = tap_stride[s + 1] * ws[2 + s + 1];
    const int64_t per_filter = tap_stride[0] * ws[2], row = kept.back();
    int64_t lead = 1;  // kept rows per filter (every spatial dim but the last)
    for (size_t s = 0; s + 1 < spatial; ++s) lead *= kept[2 + s];
    const size_t elem = ir::dtype_size(wt.dtype);
    auto bytes = std::make_shared<ir::Bytes>(static_cast<size_t>(ws[0] * ws[1] * lead * row) * elem);
    for (int64_t f = 0; f < ws[0] * ws[1]; ++f)
      for (int64_t l = 0; l < lead; ++l) {
        int64_t rest = l, from = f * per_filter + trim.first[spatial - 1];
        for (size_t s = spatial - 1; s-- > 0;) {
          from += (rest % kept[2 + s] + trim.first[s]) * tap_stride[s];
          rest /= kept[2 + s];
        }
        std::memcpy(bytes->data() + static_cast<size_t>((f * lead + l) * row) * elem,
                    src.data->data() + static_cast<size_t>(from) * elem, static_cast<size_t>(row) * elem);
      }
    wt.shape = ir::Shape(kept.begin(), kept.end());
    // The source names the tensor across variants: each cut (variants of other sizes may cut
    // other taps) is its own.
    std::string cut;
    for (size_t s = 0; s < spatial; ++s)
      cut += (s ? "," : "") + std::to_string(trim.first[s]) + ":" + std::to_string(trim.last[s] + 1);
    const std::string source = src.source.empty() ? "" : "taps[" + cut + "](" + src.source + ")";
    operands[1] = c.graph.add_weight(src.name + ".taps", wt, source, std::move(bytes));
    ir::Attrs attrs = n.attrs;
    std::vector<int64_t> low = attrs.ints("pad_low"), high = attrs.ints("pad_high");
    const std::vector<int64_t> dilation = attrs.ints("dilation");
    for (size_t s = 0; s < spatial; ++s) {
      low[s] -= trim.first[s] * dilation[s];
      high[s] -= (ws[2 + s] - 1 - trim.last[s]) * dilation[s];
    }
    attrs.set("pad_low", low).set("pad_high", high);
    copy_node(c, n, std::move(operands), attrs);
  }
  return finish_copy(std::move(c), old);
}

}  // namespace aotrace::lowering
