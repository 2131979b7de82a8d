// pad_conv_inputs: conv(x, w, pad) → conv(pad(x), w, 0) for every conv with padding (and no
// negative padding). fuse materialises every conv input, so the padded input is written once
// by its own kernel and the conv reads it without bounds checks: a stride-1 conv's im2col rows
// become contiguous slices (emit_gemm.cpp packs them with vector loads) and a depthwise conv's
// window loads are plain loads. Costs one copy of the input per padded conv. Depthwise convs
// that the CPU depthwise kernel takes (is_depthwise_conv) keep their padding: that kernel splits
// each row into interior vectors (plain loads) and border vectors (masked loads), which is
// cheaper than a copy of the input. A strided 1×1 conv (resnet's downsampling shortcut) gets
// its input subsampled by a strided slice instead, and stride 1.
// Test: lowering_tests GraphPasses.PadConvInputs, Gemm.*, Ops.Conv*, Depthwise.*.
#include <algorithm>

#include "lowering/passes.h"

namespace aotrace::lowering {

bool is_depthwise_conv(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::OpKind::Conv || n.operands.size() < 2) return false;
  const ir::DType t = g.type(n.results[0]).dtype;  // f32, f16 or bf16, every operand's
  if (!computed_in_f32(t)) return false;
  for (ir::ValueId v : n.operands)
    if (g.type(v).dtype != t) return false;
  const ir::Shape &xs = g.type(n.operands[0]).shape, &ws = g.type(n.operands[1]).shape,
                  &out = g.type(n.results[0]).shape;
  int64_t groups = n.attrs.has("groups") ? n.attrs.i("groups") : 1;
  if (xs.size() != 4 || ws.size() != 4 || out.size() != 4 || groups <= 1) return false;
  for (const ir::SymExpr& d : ws) {
    std::optional<int64_t> c = d.as_constant();
    if (!c || *c <= 0) return false;
  }
  int64_t taps = ws[2].constant() * ws[3].constant();
  if (ws[1].constant() != 1 || xs[1].as_constant() != std::optional<int64_t>(groups) || taps > 64) return false;
  std::vector<int64_t> stride = n.attrs.ints("stride");
  if (stride.size() != 2 || stride[0] < 1 || stride[1] < 1 || stride[1] > 2) return false;
  for (const ir::Shape* s : {&xs, &out})
    for (const ir::SymExpr& d : *s)
      if (d.as_constant() == std::optional<int64_t>(0)) return false;
  return true;
}

namespace {
bool is_zero_dim(const ir::SymExpr& e) { return e.as_constant() == std::optional<int64_t>(0); }
}  // namespace

ir::Graph pad_conv_inputs(ir::Graph old) {
  GraphCopy c = copy_signature(old);
  for (const ir::Node& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    ir::Attrs attrs = n.attrs;
    if (n.op == ir::OpKind::Conv && !is_depthwise_conv(old, n)) {
      std::vector<int64_t> low = attrs.ints("pad_low"), high = attrs.ints("pad_high");
      bool any = false, negative = false;
      for (size_t d = 0; d < low.size(); ++d) {
        any = any || low[d] != 0 || high[d] != 0;
        negative = negative || low[d] < 0 || high[d] < 0;
      }
      if (any && !negative) {
        ir::Attrs pad;
        std::vector<int64_t> full_low = {0, 0}, full_high = {0, 0};
        full_low.insert(full_low.end(), low.begin(), low.end());
        full_high.insert(full_high.end(), high.begin(), high.end());
        pad.set("low", full_low).set("high", full_high).set("value", 0.0);
        operands[0] = c.graph.add(ir::OpKind::Pad, {operands[0]}, pad, n.loc);
        attrs.set("pad_low", std::vector<int64_t>(low.size(), 0))
            .set("pad_high", std::vector<int64_t>(high.size(), 0));
      }
      // A strided 1×1 conv reads every s-th input position only: the input is subsampled
      // (a strided slice, copied once by the input's kernel) and the conv becomes a stride-1
      // 1×1 conv, whose GEMM packs contiguous rows instead of gathering each column.
      const ir::Shape& ws = old.type(n.operands[1]).shape;
      std::vector<int64_t> stride = attrs.ints("stride");
      bool one_by_one = ws.size() >= 3;
      for (size_t d = 2; d < ws.size(); ++d) one_by_one = one_by_one && ws[d].as_constant() == std::optional<int64_t>(1);
      if (one_by_one && !negative && std::any_of(stride.begin(), stride.end(), [](int64_t v) { return v > 1; })) {
        const ir::Shape& out = old.type(n.results[0]).shape;
        for (size_t d = 0; d < stride.size(); ++d) {
          if (stride[d] == 1 || is_zero_dim(out[2 + d])) continue;  // an empty output reads nothing
          ir::SymExpr end = (out[2 + d] - 1) * stride[d] + 1;
          ir::Attrs slice;
          slice.set("axis", static_cast<int64_t>(2 + d)).set("start", int64_t{0}).set("step", stride[d]);
          if (auto e = end.as_constant()) slice.set("end", *e);
          else slice.set("end", ir::Shape{end});
          operands[0] = c.graph.add(ir::OpKind::Slice, {operands[0]}, slice, n.loc);
        }
        attrs.set("stride", std::vector<int64_t>(stride.size(), 1));
      }
    }
    copy_node(c, n, std::move(operands), attrs);
  }
  return finish_copy(std::move(c), old);
}

}  // namespace aotrace::lowering
