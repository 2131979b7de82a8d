// channels_last: runs mobilenet-style chains of depthwise and 1×1 convs channels-last, as
// [N, H·W, C] tensors, converting at the chain's boundaries only:
//
//   1×1 conv(x, W [O, C, 1, 1], bias)  →  matmul(x', permute(W [O, C], [1, 0])) (+ bias)
//                                         (pack_weights stores W as B panels; emit_gemm.cpp
//                                          vectorises along O, whatever H·W is)
//   depthwise conv(x, W [C, 1, kh, kw]) → Σ (pairwise) over the taps of slice(pad(x' as [N, H, W, C])) ·
//                                         W's tap [C] (+ bias): elementwise ops, one kernel,
//                                         vectorised along C
//   elementwise ops (batch norm, activations, residual adds, squeeze-excitation's scale) on
//   converted values: the same op on the converted operands (an NCHW-broadcast operand such as
//   [C, 1, 1] becomes [1, 1, C]); sums, maxima and minima over H and W: over axis 1.
//
// In NCHW a 1×1 conv vectorises along H·W (7×7 = 49 columns take 64 lanes) and writes every
// channel's rows to a page of their own; a depthwise conv handles each channel's borders. Which
// values convert: the components of the graph joined by elementwise ops and these convs
// (input to output) that hold a depthwise conv. Depthwise convs of fewer than
// kMinDepthwiseChannels channels stay NCHW (and so bound a component).
// resnet's 1×1 convs, between 3×3 convs, stay NCHW: converting them alone would add a transpose
// at each. A converted value read by anything else (a 3×3 conv, a graph output, the
// classifier's flatten) is converted back there, once.
//
// Taken for f32, f16 and bf16 with static shapes and a weight (not a computed value) as the
// conv's filter. The numbers are the NCHW convs' up to the order of the sums (the taps are added
// pairwise); a half depthwise conv is computed in f32 (its input cast, f32 taps) and rounded
// once, as the conv is, not after each tap.
// Runs after DCE, before winograd / pad-conv-inputs / pack-weights (the new matmuls' weights are
// packed there); ends with DCE, which drops the NCHW nodes it replaced.
// Test: lowering_tests ChannelsLast.* (conversions, boundaries, what stays NCHW), and the
// mobilenet_v2 / efficientnet_b0 model tests.
#include <numeric>

#include "lowering/passes.h"

namespace aotrace::lowering {
namespace {

// Fewer channels than this: the depthwise conv's channels-last loop is too short (the first
// 32-channel one at 112×112 is 3x slower channels-last than emit_depthwise.cpp's kernel).
constexpr int64_t kMinDepthwiseChannels = 64;

// A conv this pass can run channels-last (Converter::kind).
enum class Kind { none, pointwise, depthwise };

struct Converter {
  const ir::Graph& old;
  GraphCopy& c;
  std::vector<int> weight_index;     // old value → index in old.weights, or -1
  std::vector<Kind> kinds;           // by node index (choose())
  std::vector<ir::ValueId> parent;   // union-find over old values
  std::vector<bool> convert;         // by component root
  std::vector<ir::ValueId> last;     // old value → its channels-last [N, H·W, C] value, or -1

  ir::ValueId find(ir::ValueId v) {
    while (parent[static_cast<size_t>(v)] != v) {
      ir::ValueId& up = parent[static_cast<size_t>(v)];
      up = parent[static_cast<size_t>(up)];  // path halving
      v = up;
    }
    return v;
  }
  void join(ir::ValueId a, ir::ValueId b) { parent[static_cast<size_t>(find(a))] = find(b); }

  std::optional<std::vector<int64_t>> static4(ir::ValueId v) const {
    const ir::TensorType& t = old.type(v);
    auto s = t.static_shape();
    if (!computed_in_f32(t.dtype) || !s || s->size() != 4) return std::nullopt;
    return s;
  }

  // A conv this pass can run channels-last: 1×1 (stride 1, no padding, groups 1) or depthwise
  // (one input channel per group, as many outputs, at least kMinDepthwiseChannels), f32, f16 or
  // bf16, static shapes, a weight of the input's type as filter.
  Kind kind(const ir::Node& n) const {
    if (n.op != ir::OpKind::Conv || !static4(n.operands[0]) || !static4(n.results[0])) return Kind::none;
    if (weight_index[static_cast<size_t>(n.operands[1])] < 0) return Kind::none;
    auto w = old.type(n.operands[1]).static_shape();
    if (!w || w->size() != 4 || old.type(n.operands[1]).dtype != old.type(n.operands[0]).dtype) return Kind::none;
    int64_t groups = n.attrs.has("groups") ? n.attrs.i("groups") : 1;
    const int64_t cin = (*static4(n.operands[0]))[1], cout = (*w)[0];
    if (groups > 1 && groups == cin && cout == cin && (*w)[1] == 1)
      return cin >= kMinDepthwiseChannels ? Kind::depthwise : Kind::none;
    if (groups != 1 || (*w)[2] != 1 || (*w)[3] != 1) return Kind::none;
    for (int64_t v : n.attrs.ints("stride"))
      if (v != 1) return Kind::none;
    for (const char* key : {"pad_low", "pad_high"})
      for (int64_t v : n.attrs.ints(key))
        if (v != 0) return Kind::none;
    return Kind::pointwise;
  }

  bool elementwise4(const ir::Node& n) const {
    return ir::is_elementwise(ir::op_info(n.op).category) && n.results.size() == 1 && static4(n.results[0]);
  }

  // Which components convert (see the header).
  void choose() {
    for (const ir::Node& n : old.nodes) kinds.push_back(kind(n));
    for (size_t i = 0; i < old.nodes.size(); ++i) {
      const ir::Node& n = old.nodes[i];
      if (elementwise4(n)) {
        for (ir::ValueId o : n.operands)
          if (old.type(o).shape.size() == 4) join(o, n.results[0]);
      } else if (kinds[i] != Kind::none) {
        join(n.operands[0], n.results[0]);
      }
    }
    for (size_t i = 0; i < old.nodes.size(); ++i)
      if (kinds[i] == Kind::depthwise) convert[static_cast<size_t>(find(old.nodes[i].results[0]))] = true;
  }
  bool converts(ir::ValueId v) { return convert[static_cast<size_t>(find(v))]; }

  // [n, c, h, w] (an NCHW value, or a lower-rank operand broadcast against one) as [n, h·w, c].
  ir::ValueId to_last(ir::ValueId mapped, const ir::Node& at) {
    ir::Shape s = c.graph.type(mapped).shape;
    while (s.size() < 4) s.insert(s.begin(), ir::SymExpr(1));
    ir::ValueId r =
        c.graph.add(ir::OpKind::Reshape, {mapped}, attrs_of({{"shape", ir::Shape{s[0], s[1], s[2] * s[3]}}}), at.loc);
    return c.graph.add(ir::OpKind::Permute, {r}, attrs_of({{"perm", std::vector<int64_t>{0, 2, 1}}}), at.loc);
  }

  // The NCHW value of old `v` in the new graph: converted back where it exists channels-last only.
  ir::ValueId nchw(ir::ValueId v) {
    ir::ValueId& m = c.map[static_cast<size_t>(v)];
    if (m < 0) {
      ir::ValueId l = last[static_cast<size_t>(v)];
      AOT_CHECK(l >= 0, "channels_last: value " + std::to_string(v) + " has no NCHW or channels-last form");
      const ir::Shape& s = old.type(v).shape;
      ir::ValueId p = c.graph.add(ir::OpKind::Permute, {l}, attrs_of({{"perm", std::vector<int64_t>{0, 2, 1}}}));
      m = c.graph.add(ir::OpKind::Reshape, {p}, attrs_of({{"shape", s}}));
    }
    return m;
  }
  ir::ValueId channels_last(ir::ValueId v, const ir::Node& at) {
    ir::ValueId& l = last[static_cast<size_t>(v)];
    if (l < 0) l = to_last(nchw(v), at);
    return l;
  }

  const ir::Graph::Weight& weight_of(ir::ValueId v) const {
    return old.weights[static_cast<size_t>(weight_index[static_cast<size_t>(v)])];
  }
  // A new weight derived from weight `v`: `bytes` of type `dtype` and shape `dims`, named after it.
  ir::ValueId weight(ir::ValueId v, const std::string& suffix, ir::DType dtype, std::vector<int64_t> dims,
                     std::shared_ptr<const ir::Bytes> bytes) {
    ir::TensorType t = old.type(v);
    t.dtype = dtype;
    t.shape = ir::Shape(dims.begin(), dims.end());
    return c.graph.add_weight(weight_of(v).name + suffix, t, weight_of(v).source, std::move(bytes));
  }

  ir::ValueId pointwise(const ir::Node& n) {
    const std::vector<int64_t> ws = *old.type(n.operands[1]).static_shape();
    ir::ValueId w2 = weight(n.operands[1], ".2d", old.type(n.operands[1]).dtype, {ws[0], ws[1]},
                            weight_of(n.operands[1]).data);  // same bytes
    ir::ValueId wt = c.graph.add(ir::OpKind::Permute, {w2}, attrs_of({{"perm", std::vector<int64_t>{1, 0}}}), n.loc);
    ir::ValueId y = c.graph.add(ir::OpKind::Matmul, {channels_last(n.operands[0], n), wt}, {}, n.loc);
    if (n.operands.size() > 2) y = c.graph.add(ir::OpKind::Add, {y, nchw(n.operands[2])}, {}, n.loc);
    return y;
  }

  ir::ValueId depthwise(const ir::Node& n) {
    const std::vector<int64_t> xs = *static4(n.operands[0]), os = *static4(n.results[0]);
    const std::vector<int64_t> ws = *old.type(n.operands[1]).static_shape();
    const int64_t C = xs[1], kh = ws[2], kw = ws[3];
    std::vector<int64_t> stride = n.attrs.ints("stride"), dilation = n.attrs.ints("dilation"),
                         low = n.attrs.ints("pad_low"), high = n.attrs.ints("pad_high");
    ir::ValueId x = c.graph.add(ir::OpKind::Reshape, {c.graph.cast(channels_last(n.operands[0], n), ir::DType::f32, n.loc)},
                                attrs_of({{"shape", ir::Shape{xs[0], xs[2], xs[3], C}}}), n.loc);
    if (low[0] || low[1] || high[0] || high[1])
      x = c.graph.add(ir::OpKind::Pad, {x}, attrs_of({{"low", std::vector<int64_t>{0, low[0], low[1], 0}},
                                                     {"high", std::vector<int64_t>{0, high[0], high[1], 0}},
                                                     {"value", 0.0}}), n.loc);
    const uint8_t* filter = weight_of(n.operands[1]).data->data();
    const ir::DType filter_type = old.type(n.operands[1]).dtype;
    std::vector<ir::ValueId> terms;
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) {
        auto slice = [&](ir::ValueId v, int64_t axis, int64_t start, int64_t s, int64_t count) {
          return c.graph.add(ir::OpKind::Slice, {v}, attrs_of({{"axis", axis}, {"start", start},
                                                               {"end", ir::Shape{start + (count - 1) * s + 1}},
                                                               {"step", s}}), n.loc);
        };
        ir::ValueId tap = slice(slice(x, 1, i * dilation[0], stride[0], os[2]), 2, j * dilation[1], stride[1], os[3]);
        auto bytes = std::make_shared<ir::Bytes>(static_cast<size_t>(C) * sizeof(float));
        auto* t = reinterpret_cast<float*>(bytes->data());
        for (int64_t ch = 0; ch < C; ++ch) t[ch] = float_element(filter, filter_type, (ch * kh + i) * kw + j);
        ir::ValueId w = weight(n.operands[1], ".tap" + std::to_string(i * kw + j), ir::DType::f32, {C}, std::move(bytes));
        terms.push_back(c.graph.add(ir::OpKind::Mul, {tap, w}, {}, n.loc));
      }
    }
    // Summed pairwise: a chain of kh·kw - 1 dependent adds per vector bound the kernel (each
    // task's few vectors could not hide it); a tree is log2 of that deep.
    while (terms.size() > 1) {
      std::vector<ir::ValueId> next;
      for (size_t t = 0; t + 1 < terms.size(); t += 2)
        next.push_back(c.graph.add(ir::OpKind::Add, {terms[t], terms[t + 1]}, {}, n.loc));
      if (terms.size() % 2 != 0) next.push_back(terms.back());
      terms = std::move(next);
    }
    ir::ValueId acc = terms[0];
    if (n.operands.size() > 2)
      acc = c.graph.add(ir::OpKind::Add, {acc, as_f32(c, old, weight_index, n.operands[2], nchw(n.operands[2]), n.loc)}, {}, n.loc);
    const ir::Shape flat{os[0], os[2] * os[3], os[1]};
    return c.graph.add(ir::OpKind::Reshape, {c.graph.cast(acc, old.type(n.results[0]).dtype, n.loc)},
                       attrs_of({{"shape", flat}}), n.loc);
  }

  // Whether every operand of elementwise `n` broadcasts over H·W as a whole: its H and W are
  // the result's, or both 1 (a [1, 1, H, 1] operand has no [n, h·w, c] form).
  bool flattens(const ir::Node& n) const {
    const std::vector<int64_t> out = *static4(n.results[0]);
    for (ir::ValueId o : n.operands) {
      auto s = old.type(o).static_shape();
      if (!s) return false;
      while (s->size() < 4) s->insert(s->begin(), 1);
      const bool whole = (*s)[2] == out[2] && (*s)[3] == out[3], none = (*s)[2] == 1 && (*s)[3] == 1;
      if (!whole && !none) return false;
    }
    return true;
  }

  // An elementwise op whose operands include a converted value: the same op channels-last.
  ir::ValueId elementwise(const ir::Node& n) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) {
      size_t rank = old.type(o).shape.size();
      if (rank == 4) operands.push_back(channels_last(o, n));
      else if (rank == 0) operands.push_back(nchw(o));
      else operands.push_back(to_last(nchw(o), n));
    }
    return c.graph.add(n.op, operands, n.attrs, n.loc);
  }

  // A sum, max or min over H and W (squeeze-excitation's and the head's average pool) of a
  // converted value: over axis 1 of [N, H·W, C]. Keeping the dims gives [N, 1, C], the
  // channels-last form of [N, C, 1, 1]; dropping them gives [N, C] itself.
  bool spatial_reduce(const ir::Node& n) {
    if (ir::op_info(n.op).category != ir::OpCategory::Reduce || n.results.size() != 1) return false;
    if (n.op != ir::OpKind::ReduceSum && n.op != ir::OpKind::ReduceMax && n.op != ir::OpKind::ReduceMin) return false;
    if (last[static_cast<size_t>(n.operands[0])] < 0) return false;
    if (n.attrs.ints("axes") != std::vector<int64_t>{2, 3}) return false;
    const bool keep = n.attrs.has("keepdim") && n.attrs.i("keepdim") != 0;
    ir::Attrs a = n.attrs;
    a.set("axes", std::vector<int64_t>{1});
    ir::ValueId y = c.graph.add(n.op, {last[static_cast<size_t>(n.operands[0])]}, a, n.loc);
    if (keep) last[static_cast<size_t>(n.results[0])] = y;
    else c.map[static_cast<size_t>(n.results[0])] = y;
    return true;
  }

  bool rewrite(size_t i) {
    const ir::Node& n = old.nodes[i];
    const Kind k = kinds[i];
    if (k != Kind::none && converts(n.results[0])) {
      last[static_cast<size_t>(n.results[0])] = k == Kind::pointwise ? pointwise(n) : depthwise(n);
      return true;
    }
    if (elementwise4(n) && converts(n.results[0]) && flattens(n)) {
      for (ir::ValueId o : n.operands)
        if (last[static_cast<size_t>(o)] >= 0) {
          last[static_cast<size_t>(n.results[0])] = elementwise(n);
          return true;
        }
      return false;
    }
    return spatial_reduce(n);
  }
};

}  // namespace

ir::Graph channels_last(ir::Graph old) {
  GraphCopy c = copy_signature(old);
  const size_t n = old.num_values();
  Converter cv{old, c, weight_indices(old), {}, std::vector<ir::ValueId>(n), std::vector<bool>(n, false),
               std::vector<ir::ValueId>(n, -1)};
  std::iota(cv.parent.begin(), cv.parent.end(), 0);
  cv.choose();
  if (std::find(cv.convert.begin(), cv.convert.end(), true) == cv.convert.end()) return old;
  for (size_t i = 0; i < old.nodes.size(); ++i) {
    if (cv.rewrite(i)) continue;
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : old.nodes[i].operands) operands.push_back(cv.nchw(o));
    copy_node(c, old.nodes[i], std::move(operands));
  }
  for (ir::ValueId o : old.outputs) cv.nchw(o);
  return dce(finish_copy(std::move(c), old));
}

}  // namespace aotrace::lowering
