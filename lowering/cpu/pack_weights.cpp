// pack_weights: the weight operand of a GEMM kernel (emit_gemm.cpp) is stored in its panel
// layout at compile time, so that the kernel reads its panels in place instead of packing them
// on every call:
//   - matmul(x, permute(W, [1, 0])), a linear layer's W [N, K], or matmul(x, W [K, N]): B panels,
//     [⌈N/NR⌉, K, NR]; W may be a slice of a weight (the q, k, v rows of attention's in_proj);
//   - conv(x, W), W [Cout, Cin, kh, kw]: A panels, [⌈Cout/MR⌉, Cin·kh·kw, MR], or per group
//     for a grouped conv, [groups, ⌈Cout/groups/MR⌉, Cin/groups·kh·kw, MR] (f32 only: a half
//     W's rows are read in place; depthwise convs have their own kernel);
//   - matmul(W, x) with W [batch..., M, K] a weight of x's batch dims (winograd's transformed
//     filters U [16, O, C]): A panels per batch, [batch..., ⌈M/MR⌉, K, MR], so that the GEMM
//     takes its widest microkernel and streams the weight in order;
// zero-padded to whole panels. The node's operand becomes the view that reads the original
// weight back out of the packed one (permute, reshape, slice: movement ops, so the graph keeps
// its meaning for the verifier and the reference interpreter), and the node is marked
// `packed_b` / `packed_a` = the panel width, which codegen trusts. The original weight stays
// in the signature; compile stores only the weights a plan reads. Only nodes that take the GEMM
// path are packed (f32, f16 or bf16, at least passes.h's kGemmMin* sizes; symbolic activation
// dims at their maximum), with the panels of passes.h. Panels are f32, what the microkernel
// reads: an f16 or bf16 weight's are widened (exactly; twice its bytes), and its view is cast
// back to its type, which gives the same values. But a half matmul's B keeps its type: a bf16
// B's panels are bf16 in K pairs ([⌈N/NR⌉, ⌈K/2⌉, NR, 2], a zero after an odd K's last row;
// node marked `packed_b_pairs`), the layout of AVX512-BF16's dot product, whose 32 bits per
// column the microkernel without it widens with a shift and a mask; an f16 B's are f16 panels
// ([⌈N/NR⌉, K, NR], the f32 layout at half the bytes), widened to f32 as the kernel reads them
// (emit_gemm.cpp; F16C, AArch64's fcvtl, integer code on x86-64-v2: storage.cpp). Half convs' W
// (f16, bf16) stay as they are: their rows are read in place or widened as packed.
// Test: lowering_tests GraphPasses.PackWeights*, Gemm.*, and every model test.
#include <cstring>

#include "lowering/passes.h"

namespace aotrace::lowering {
namespace {

ir::Shape shape_of(std::vector<int64_t> dims) { return ir::Shape(dims.begin(), dims.end()); }

// rows × cols row-major f32 (`at(b, r, c)`, for each of `batch` matrices) as
// [batch, ⌈rows/width⌉, cols, width] panels, zero-padded. A template, not std::function: it
// runs once per weight element (tens of millions for resnet50), on the compile's critical path.
template <class At>
std::shared_ptr<const ir::Bytes> panels(int64_t batch, int64_t rows, int64_t cols, int64_t width, const At& at) {
  int64_t count = (rows + width - 1) / width;
  auto bytes = std::make_shared<ir::Bytes>(static_cast<size_t>(batch * count * cols * width) * sizeof(float), 0);
  auto* out = reinterpret_cast<float*>(bytes->data());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t q = 0; q < count; ++q)
      for (int64_t i = 0; i < width && q * width + i < rows; ++i)
        for (int64_t k = 0; k < cols; ++k) out[((b * count + q) * cols + k) * width + i] = at(b, q * width + i, k);
  return bytes;
}
template <class At>
std::shared_ptr<const ir::Bytes> panels(int64_t rows, int64_t cols, int64_t width, const At& at) {
  return panels(1, rows, cols, width, [&](int64_t, int64_t r, int64_t c) { return at(r, c); });
}

struct Packer {
  const ir::Graph& old;
  GraphCopy& c;
  std::vector<int> producer;
  std::vector<int> weight_index;  // value → index in old.weights, or -1
  ir::SymBindings max;            // symbols at their maxima (max_bindings)

  // Weight w's elements (f32, f16 or bf16) as floats: the half types widen exactly.
  struct Elements {
    const uint8_t* p;
    ir::DType t;
    float operator()(int64_t i) const { return float_element(p, t, i); }
  };
  Elements data(int w) const {
    const auto& weight = old.weights[static_cast<size_t>(w)];
    return {weight.data->data(), old.type(weight.value).dtype};
  }
  int64_t elements(int w) const {
    const auto& weight = old.weights[static_cast<size_t>(w)];
    return static_cast<int64_t>(weight.data->size() / ir::dtype_size(old.type(weight.value).dtype));
  }

  // A weight's panels, of `dtype` (f32 whatever the weight's type, the view reading it back
  // cast; or bf16 pairs).
  ir::ValueId add_packed(int w, const std::string& how, std::vector<int64_t> dims,
                         std::shared_ptr<const ir::Bytes> bytes, ir::DType dtype = ir::DType::f32) {
    const auto& src = old.weights[static_cast<size_t>(w)];
    ir::TensorType t = old.type(src.value);
    t.shape = shape_of(dims);
    t.dtype = dtype;
    // The source names the tensor across variants (the bundle stores each source once): a
    // weight without one (reached through a closure) must not get the shared "how()".
    const std::string source = src.source.empty() ? "" : how + "(" + src.source + ")";
    return c.graph.add_weight(src.name + "." + how, t, source, std::move(bytes));
  }

  // A 2-D f32, f16 or bf16 weight seen through slices of step 1: rows [r0, r0 + rows) and columns
  // [c0, c0 + cols) of weight `w`, whose rows are `stride` floats apart.
  struct WeightWindow { int w = -1; int64_t r0 = 0, c0 = 0, rows = 0, cols = 0, stride = 0; };
  WeightWindow window(ir::ValueId v) const {
    int p = producer[static_cast<size_t>(v)];
    if (p < 0) {
      int w = weight_index[static_cast<size_t>(v)];
      if (w < 0) return {};  // an input (its dims may be symbolic): nothing to pack
      std::vector<int64_t> d = static_dims(old, v);
      if (d.size() != 2 || !computed_in_f32(old.type(v).dtype)) return {};
      return {w, 0, 0, d[0], d[1], d[1]};
    }
    const ir::Node& n = old.nodes[static_cast<size_t>(p)];
    if (n.op != ir::OpKind::Slice || (n.attrs.has("step") && n.attrs.i("step") != 1)) return {};
    WeightWindow ww = window(n.operands[0]);
    if (ww.w < 0) return {};
    // The slice's length from its result (`end` may be a Shape attribute); a symbolic length
    // (a weight sliced to an activation's size) is no fixed window.
    int64_t axis = n.attrs.i("axis"), start = n.attrs.i("start");
    auto length_of = old.type(n.results[0]).shape.at(static_cast<size_t>(axis)).as_constant();
    if (!length_of) return {};
    int64_t length = *length_of;
    int64_t& origin = axis == 0 ? ww.r0 : ww.c0;
    int64_t& extent = axis == 0 ? ww.rows : ww.cols;
    if (start < 0 || length < 1 || start + length > extent) return {};
    origin += start;
    extent = length;
    return ww;
  }

  // Whether matmul `mm`'s B weight is packed in bf16 K pairs: a bf16 matmul's.
  bool in_pairs(const ir::Node& mm) const { return old.type(mm.operands[1]).dtype == ir::DType::bf16; }

  // The f32 view `v` of weight w's panels as the weight's type (exact: the panels hold its values).
  ir::ValueId cast_back(ir::ValueId v, int w, const SourceLoc& loc) {
    return c.graph.cast(v, old.type(old.weights[static_cast<size_t>(w)].value).dtype, loc);
  }

  // Matmul B [K, N] read from a weight: permute(W [N, K], [1, 0]) (a linear layer) or W [K, N]
  // itself, either possibly a slice of a bigger weight (attention's in_proj): B panels; returns
  // the view of B, or -1.
  ir::ValueId pack_b(const ir::Node& mm, const SourceLoc& loc) {
    ir::ValueId b = mm.operands[1];
    int p = producer[static_cast<size_t>(b)];
    bool transposed = p >= 0 && old.nodes[static_cast<size_t>(p)].op == ir::OpKind::Permute;
    if (transposed && old.nodes[static_cast<size_t>(p)].attrs.ints("perm") != std::vector<int64_t>{1, 0}) return -1;
    WeightWindow ww = window(transposed ? old.nodes[static_cast<size_t>(p)].operands[0] : b);
    if (ww.w < 0) return -1;
    // The activation's rows may be symbolic: judged at their maximum, as the GEMM plan is.
    const ir::Shape& as = old.type(mm.operands[0]).shape;
    int64_t n = transposed ? ww.rows : ww.cols, k = transposed ? ww.cols : ww.rows;
    if (as.size() < 2 || planned_size(as[as.size() - 2], max) < kGemmMinRows || n < kGemmMinColumns ||
        k < kGemmMinDepth) return -1;
    const int64_t origin = ww.r0 * ww.stride + ww.c0;
    auto element = [&](int64_t col, int64_t kk) {  // B[kk, col]'s index in the weight
      return origin + (transposed ? col * ww.stride + kk : kk * ww.stride + col);
    };
    int64_t count = (n + kPackedNR - 1) / kPackedNR;
    std::string how = "packed_b" + std::to_string(kPackedNR);
    if (ww.rows * ww.cols != elements(ww.w))
      how += "_r" + std::to_string(ww.r0) + "_c" + std::to_string(ww.c0) + "_" + std::to_string(ww.rows) + "x" +
             std::to_string(ww.cols);
    if (!transposed) how += "_kn";
    // A half weight's 16-bit elements moved as they are into `elements` halves (zeros elsewhere),
    // B[kk, col] to element to(col, kk).
    auto moved_halves = [&](int64_t elements, const auto& to) {
      const uint8_t* bits = old.weights[static_cast<size_t>(ww.w)].data->data();
      auto bytes = std::make_shared<ir::Bytes>(static_cast<size_t>(elements) * 2, 0);
      for (int64_t col = 0; col < n; ++col)
        for (int64_t kk = 0; kk < k; ++kk) std::memcpy(bytes->data() + to(col, kk) * 2, bits + element(col, kk) * 2, 2);
      return bytes;
    };
    if (in_pairs(mm)) {  // [count, ⌈K/2⌉, NR, 2] bf16, read back as [⌈K/2⌉·2, count·NR] rows [0, K)
      const int64_t k2 = (k + 1) / 2;
      auto bytes = moved_halves(count * k2 * kPackedNR * 2, [&](int64_t col, int64_t kk) {
        return ((col / kPackedNR * k2 + kk / 2) * kPackedNR + col % kPackedNR) * 2 + kk % 2;
      });
      ir::ValueId packed =
          add_packed(ww.w, how + "_pairs", {count, k2, kPackedNR, 2}, std::move(bytes), ir::DType::bf16);
      ir::ValueId v =
          c.graph.add(ir::OpKind::Permute, {packed}, attrs_of({{"perm", std::vector<int64_t>{1, 3, 0, 2}}}), loc);
      v = c.graph.add(ir::OpKind::Reshape, {v}, attrs_of({{"shape", shape_of({2 * k2, count * kPackedNR})}}), loc);
      if (2 * k2 != k)
        v = c.graph.add(ir::OpKind::Slice, {v},
                        attrs_of({{"axis", int64_t{0}}, {"start", int64_t{0}}, {"end", k}, {"step", int64_t{1}}}), loc);
      return c.graph.add(ir::OpKind::Slice, {v},
                         attrs_of({{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", n}, {"step", int64_t{1}}}), loc);
    }
    ir::ValueId packed;
    if (old.type(mm.operands[1]).dtype == ir::DType::f16) {  // f16 panels [count, K, NR]
      auto bytes = moved_halves(count * k * kPackedNR, [&](int64_t col, int64_t kk) {
        return (col / kPackedNR * k + kk) * kPackedNR + col % kPackedNR;
      });
      packed = add_packed(ww.w, how + "_f16", {count, k, kPackedNR}, std::move(bytes), ir::DType::f16);
    } else {
      const Elements src = data(ww.w);
      auto at = [&](int64_t col, int64_t kk) { return src(element(col, kk)); };
      packed = add_packed(ww.w, how, {count, k, kPackedNR}, panels(n, k, kPackedNR, at));
    }
    ir::ValueId v = c.graph.add(ir::OpKind::Permute, {packed}, attrs_of({{"perm", std::vector<int64_t>{1, 0, 2}}}), loc);
    v = c.graph.add(ir::OpKind::Reshape, {v}, attrs_of({{"shape", shape_of({k, count * kPackedNR})}}), loc);
    v = c.graph.add(ir::OpKind::Slice, {v},
                    attrs_of({{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", n}, {"step", int64_t{1}}}), loc);
    return cast_back(v, ww.w, loc);  // nothing to cast for f16 panels: already the weight's type
  }

  // The view of M × K matrices (after the batch dims `batch`) read back out of their A panels
  // `packed` [batch..., ⌈M/MR⌉, K, MR]: permute to [batch..., ⌈M/MR⌉, MR, K], reshape to
  // [batch..., ⌈M/MR⌉·MR, K], rows [0, M).
  ir::ValueId a_panels_view(ir::ValueId packed, std::vector<int64_t> batch, int64_t m, int64_t k,
                            const SourceLoc& loc) {
    int64_t r = static_cast<int64_t>(batch.size()), count = (m + kPackedMR - 1) / kPackedMR;
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < r; ++d) perm.push_back(d);
    perm.insert(perm.end(), {r, r + 2, r + 1});
    ir::ValueId v = c.graph.add(ir::OpKind::Permute, {packed}, attrs_of({{"perm", perm}}), loc);
    batch.insert(batch.end(), {count * kPackedMR, k});
    v = c.graph.add(ir::OpKind::Reshape, {v}, attrs_of({{"shape", shape_of(batch)}}), loc);
    return c.graph.add(ir::OpKind::Slice, {v},
                       attrs_of({{"axis", r}, {"start", int64_t{0}}, {"end", m}, {"step", int64_t{1}}}), loc);
  }

  // Matmul A [batch..., M, K] read from a weight, with the batch dims of the result (no
  // broadcast): A panels per batch; returns the view of A, or -1.
  ir::ValueId pack_matmul_a(const ir::Node& mm, const SourceLoc& loc) {
    ir::ValueId a = mm.operands[0];
    int w = weight_index[static_cast<size_t>(a)];
    if (w < 0 || !computed_in_f32(old.type(a).dtype) || old.type(mm.operands[1]).dtype != old.type(a).dtype) return -1;
    std::vector<int64_t> as = static_dims(old, a);
    const ir::Shape& out = old.type(mm.results[0]).shape;
    if (as.size() < 2 || as.size() != out.size()) return -1;
    for (size_t d = 0; d + 2 < as.size(); ++d)
      if (!(out[d] == ir::SymExpr(as[d]))) return -1;
    int64_t m = as[as.size() - 2], k = as.back(), n = planned_size(out.back(), max), batch = 1;
    for (size_t d = 0; d + 2 < as.size(); ++d) batch *= as[d];
    if (m < kGemmMinRows || n < kGemmMinColumns || k < kGemmMinDepth) return -1;
    const Elements src = data(w);
    std::vector<int64_t> batch_dims(as.begin(), as.end() - 2), dims = batch_dims;
    dims.insert(dims.end(), {(m + kPackedMR - 1) / kPackedMR, k, kPackedMR});
    ir::ValueId packed = add_packed(w, "packed_a" + std::to_string(kPackedMR) + "_mk", dims,
                                    panels(batch, m, k, kPackedMR, [&](int64_t b, int64_t r, int64_t col) {
                                      return src((b * m + r) * k + col);
                                    }));
    return cast_back(a_panels_view(packed, batch_dims, m, k, loc), w, loc);
  }

  // Conv W [Cout, Cin/groups, kh, kw]: A panels per group, [groups, ⌈Cout/groups/MR⌉,
  // Cin/groups·kh·kw, MR] (GemmPlan::groups); returns the view of W, or -1. Depthwise convs
  // (their own kernel reads W as it is) are left alone.
  ir::ValueId pack_a(const ir::Node& conv, const SourceLoc& loc) {
    const int64_t groups = conv.attrs.has("groups") ? conv.attrs.i("groups") : 1;
    if (groups < 1 || is_depthwise_conv(old, conv)) return -1;
    int w = weight_index[static_cast<size_t>(conv.operands[1])];
    // f32 only: a half conv's W stays as it is, half the bytes of f32 panels: its rows
    // [Cout, Cin·kh·kw] are what the bf16 dot reads in place (plan.cpp: B is packed in K pairs
    // as the kernel runs), or what the kernel widens as it packs them (f16, and bf16 without
    // the dot).
    if (w < 0 || old.type(conv.operands[1]).dtype != ir::DType::f32) return -1;
    if (old.type(conv.operands[0]).dtype != ir::DType::f32) return -1;
    std::vector<int64_t> ws = static_dims(old, conv.operands[1]);
    const ir::Shape& out = old.type(conv.results[0]).shape;  // batch and spatial may be symbolic
    int64_t m = ws[0] / groups, k = 1, n = 1;
    for (size_t d = 1; d < ws.size(); ++d) k *= ws[d];
    for (size_t d = 2; d < out.size(); ++d) n *= planned_size(out[d], max);
    if (m < kGemmMinRows || n < kGemmMinColumns || k < kGemmMinDepth || out[0] == ir::SymExpr(0)) return -1;
    const Elements src = data(w);
    std::vector<int64_t> batch_dims;
    if (groups > 1) batch_dims.push_back(groups);
    std::vector<int64_t> dims = batch_dims;
    dims.insert(dims.end(), {(m + kPackedMR - 1) / kPackedMR, k, kPackedMR});
    ir::ValueId packed = add_packed(w, "packed_a" + std::to_string(kPackedMR), dims,
                                    panels(groups, m, k, kPackedMR, [&](int64_t g, int64_t r, int64_t col) {
                                      return src((g * m + r) * k + col);
                                    }));
    return cast_back(c.graph.add(ir::OpKind::Reshape, {a_panels_view(packed, batch_dims, m, k, loc)},
                                 attrs_of({{"shape", shape_of(ws)}}), loc),
                     w, loc);
  }
};

}  // namespace

ir::Graph pack_weights(ir::Graph old) {
  GraphCopy c = copy_signature(old);
  Packer packer{old, c, std::vector<int>(old.num_values(), -1), weight_indices(old), max_bindings(old)};
  for (size_t i = 0; i < old.nodes.size(); ++i)
    for (ir::ValueId r : old.nodes[i].results) packer.producer[static_cast<size_t>(r)] = static_cast<int>(i);
  for (const ir::Node& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    ir::Attrs attrs = n.attrs;
    const bool gemm = computed_in_f32(old.type(n.results[0]).dtype);  // what gemm_operands takes
    if (n.op == ir::OpKind::Matmul && gemm) {
      if (ir::ValueId v = packer.pack_b(n, n.loc); v >= 0) {
        operands[1] = v;
        attrs.set("packed_b", kPackedNR);
        if (packer.in_pairs(n)) attrs.set("packed_b_pairs", int64_t{1});
      } else if (ir::ValueId a = packer.pack_matmul_a(n, n.loc); a >= 0) {
        operands[0] = a;
        attrs.set("packed_a", kPackedMR);
      }
    } else if (n.op == ir::OpKind::Conv && gemm) {
      if (ir::ValueId v = packer.pack_a(n, n.loc); v >= 0) {
        operands[1] = v;
        attrs.set("packed_a", kPackedMR);
      }
    }
    copy_node(c, n, std::move(operands), attrs);
  }
  return finish_copy(std::move(c), old);
}

}  // namespace aotrace::lowering
