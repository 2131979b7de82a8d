// The CPU backend's kernel plans (plan.h): strided views of buffers, reshape groups, GEMM
// plans, Winograd plans, work estimates.
// Test: lowering_tests CpuPlan.*, Gemm.*, Winograd.*, and every model test.
#include "lowering/cpu/plan.h"

#include <algorithm>
#include <cstdio>

#include "ir/winograd.h"

namespace aotrace::lowering::cpu {

std::vector<int64_t> int_list(const ir::Attrs& attrs, const std::string& key) {
  const ir::AttrValue& v = attrs.items.at(key);
  if (const auto* ints = std::get_if<std::vector<int64_t>>(&v)) return *ints;
  if (const auto* one = std::get_if<int64_t>(&v)) return {*one};
  std::vector<int64_t> out;
  for (const ir::SymExpr& e : std::get<ir::Shape>(v)) out.push_back(e.constant());
  return out;
}

ir::Shape to_shape(const std::vector<int64_t>& dims) { return ir::Shape(dims.begin(), dims.end()); }

KernelGraph::KernelGraph(const ir::Graph& graph, const ScheduledKernel& kernel)
    : g(graph), k(kernel), producer_index(graph.num_values(), -1), max(max_bindings(graph)) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::ValueId r : g.nodes[i].results) producer_index[static_cast<size_t>(r)] = static_cast<int>(i);
  for (size_t r = 0; r < k.read_values.size(); ++r) read_arg[k.read_values[r]] = static_cast<int>(r + 1);
}

const ir::Node& KernelGraph::producer(ir::ValueId v) const {
  int i = producer_index[static_cast<size_t>(v)];
  AOT_CHECK(i >= 0, "value %" + std::to_string(v) + " has no producer");
  return g.nodes[static_cast<size_t>(i)];
}

std::vector<DimGroup> reshape_groups(const ir::Shape& dst, const ir::Shape& src,
                                     const ir::SymBindings& at) {
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < dst.size() || j < src.size()) {
    DimGroup group{i, i, j, j};
    ir::SymExpr pd = i < dst.size() ? dst[i++] : 1, ps = j < src.size() ? src[j++] : 1;
    while (!(pd == ps) && (i < dst.size() || j < src.size())) {
      bool grow_dst = j == src.size() || (i < dst.size() && planned_size(pd, at) < planned_size(ps, at));
      if (grow_dst) pd = pd * dst[i++];
      else ps = ps * src[j++];
      if (is_zero(pd) || is_zero(ps)) {  // empty tensors: never read
        group.empty = true;
        break;
      }
    }
    group.i1 = i;
    group.j1 = j;
    groups.push_back(group);
  }
  return groups;
}

std::optional<StridedView> strided_view(const KernelGraph& kg, ir::ValueId v) {
  auto dims = [&](ir::ValueId x) -> const ir::Shape& { return kg.dims(x); };
  const ir::Shape& shape = dims(v);
  if (auto it = kg.read_arg.find(v); it != kg.read_arg.end()) {
    StridedView sv{v, 0, std::vector<ir::SymExpr>(shape.size())};
    ir::SymExpr stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      sv.strides[d] = is_one(shape[d]) ? ir::SymExpr(0) : stride;
      stride = stride * shape[d];
    }
    return sv;
  }
  if (kg.producer_index[static_cast<size_t>(v)] < 0) return std::nullopt;
  const ir::Node& n = kg.producer(v);
  if (n.operands.size() != 1 || kg.dtype(n.operands[0]) != kg.dtype(v)) return std::nullopt;  // pad, concat, casts
  std::optional<StridedView> src = strided_view(kg, n.operands[0]);
  if (!src) return std::nullopt;
  const ir::Shape& from = dims(n.operands[0]);
  StridedView out{src->buffer, src->offset, std::vector<ir::SymExpr>(shape.size(), 0)};
  switch (n.op) {
    case ir::OpKind::Expand:  // numpy broadcasting: leading new dims and size-1 dims read 0
      for (size_t d = 0; d < from.size(); ++d)
        out.strides[d + shape.size() - from.size()] = is_one(from[d]) ? ir::SymExpr(0) : src->strides[d];
      return out;
    case ir::OpKind::Permute: {
      std::vector<int64_t> perm = int_list(n.attrs, "perm");
      for (size_t i = 0; i < perm.size(); ++i)
        out.strides[i] = src->strides[static_cast<size_t>(perm[i] < 0 ? perm[i] + static_cast<int64_t>(from.size()) : perm[i])];
      return out;
    }
    case ir::OpKind::Slice: {
      auto axis = static_cast<size_t>(n.attrs.i("axis"));
      int64_t step = n.attrs.has("step") ? n.attrs.i("step") : 1;
      out.strides = src->strides;
      out.offset = out.offset + src->strides[axis] * n.attrs.i("start");
      out.strides[axis] = out.strides[axis] * step;
      return out;
    }
    case ir::OpKind::Flip:
      out.strides = src->strides;
      for (int64_t a : int_list(n.attrs, "axes")) {
        auto axis = static_cast<size_t>(a);
        out.offset = out.offset + (from[axis] - 1) * src->strides[axis];
        out.strides[axis] = src->strides[axis] * -1;
      }
      return out;
    case ir::OpKind::Reshape: {
      // Each group of source dims (reshape_groups) must be one affine run (stride[d] =
      // stride[d+1]·size[d+1] over its non-1 dims, as equal SymExprs); the result dims of the
      // group then split that run.
      for (const DimGroup& group : reshape_groups(shape, from, kg.max)) {
        if (group.empty) return std::nullopt;
        ir::SymExpr inner = 0;  // the stride one past the last dim checked
        bool have = false;
        for (size_t d = group.j1; d-- > group.j0;) {
          if (is_one(from[d])) continue;
          if (have && !(src->strides[d] == inner)) return std::nullopt;
          have = true;
          inner = src->strides[d] * from[d];
        }
        ir::SymExpr stride = 0;  // of the group's innermost non-1 source dim
        for (size_t d = group.j1; d-- > group.j0;)
          if (!is_one(from[d])) { stride = src->strides[d]; break; }
        for (size_t d = group.i1; d-- > group.i0;) {
          out.strides[d] = is_one(shape[d]) ? ir::SymExpr(0) : stride;
          stride = stride * shape[d];
        }
      }
      return out;
    }
    default: return std::nullopt;
  }
}

namespace {

// Convs of at most this many output positions per image fold a batch into N (GemmPlan::merged):
// resnet50's 7×7 layers at batch 4 12-18% faster each; its 14×14 ones gained nothing (their
// stride-2 3×3 conv lost 8%).
constexpr int64_t kMergedImageColumns = 64;
// Stride-1 convs of at least this many rows (output channels a group) gather their columns where
// the input rows are longer than the output's (plan_gemm); fewer rows keep the wide conv, whose
// packing is cheaper per column.
constexpr int64_t kGatheredMinRows = 16;

// The blocking constants from the sizes (symbolic ones at their maxima): every choice here is
// correct for any size, only the speed depends on it. Static sizes get exactly their own.
void plan_gemm_blocking(const KernelGraph& kg, GemmPlan& p) {
  auto planned = [&](const ir::SymExpr& e) { return kg.planned(e); };
  const int64_t m = planned(p.m), k = planned(p.k), batches = planned(p.batches);
  p.mr = kPackedMR;  // panel shapes are the same for every target (pre-packed weights use them)
  p.nr = kPackedNR;
  p.mc = 12 * p.mr;
  p.kc = (k + (k + 255) / 256 - 1) / ((k + 255) / 256);  // K in even panels of <= 256
  if (p.b_pairs) p.kc += p.kc % 2;  // whole K pairs in every panel but the last
  // Columns per block: 128, or 256 where K is small and the rows are wide: there the
  // microkernel's work per output is short, and storing the epilogue's rows is what costs
  // (longer runs per row: mobilenet's 16 → 96 expand at 112×112 1.4x faster alone, resnet's
  // 64-channel Winograd GEMMs [16, 64, 64] @ [16, 64, 784] 1.1 → 0.9 ms).
  const int64_t width = k <= 64 && (p.is_conv || planned(p.n) > 128) ? 256 : 128;
  if (p.is_conv) {
    // Whole rows per block: NC = row·max(1, width // row), at most max(width, row).
    p.nc = p.row * max(ir::SymExpr(1), floordiv(ir::SymExpr(width), p.row));
    p.nc_bound = planned(p.nc.is_constant() ? p.nc : max(ir::SymExpr(width), p.row));
  } else {
    p.nc = width;
    p.nc_bound = width;
  }
  // The tile (MT × NC's bound, on the stack of the thread running the task) stays within
  // 8·MC × 128 floats (295 KB): fewer MC blocks per task where NC is wider. Up to 8 rather than
  // 4 blocks: each task packs its own B, so a conv of few columns and many channels (resnet50's
  // 7×7 1×1 convs, 2048 × 196 at batch 4) packed the same B for every 288 rows; resnet50_b4
  // 3-5% faster at 1 and 2 threads. With B's panel (up to 256 KB) a GEMM takes at most 0.6 MB of
  // the stack (README: the runtime).
  const int64_t ncp = (p.nc_bound + p.nr - 1) / p.nr * p.nr;
  const int64_t max_blocks = std::clamp<int64_t>(8 * 128 / ncp, 1, 8);
  const int64_t n_blocks = planned(p.n_blocks());
  if (p.direct_a) {
    // A is not packed, so rows per task only set the task count: at least 8 tasks where the
    // rows allow (2 per thread on 4 cores: a late thread still finds work), whole MR panels,
    // at most max_blocks MC (the tile is on the stack). MC = MT: one block per task.
    int64_t m_panels = (m + p.mr - 1) / p.mr;
    int64_t m_tasks = std::clamp<int64_t>((8 + batches * n_blocks - 1) / (batches * n_blocks), 1, m_panels);
    p.mt = p.mc = std::min(max_blocks * p.mc, (m_panels + m_tasks - 1) / m_tasks * p.mr);
    return;
  }
  // Rows per task: up to 4 MC blocks share one B packing, while keeping >= 8 tasks (threads).
  int64_t m_blocks = (m + p.mc - 1) / p.mc;
  int64_t per_task = m_blocks * batches * n_blocks / 8;
  p.mt = p.mc * std::clamp<int64_t>(per_task, 1, std::min<int64_t>(max_blocks, m_blocks));
}

}  // namespace

std::optional<GemmPlan> gemm_operands(const KernelGraph& kg) {
  GemmPlan p;
  const ScheduledKernel& k_ = kg.k;
  auto dims = [&](ir::ValueId v) -> const ir::Shape& { return kg.dims(v); };
  auto dtype = [&](ir::ValueId v) { return kg.dtype(v); };
  // f32, or f16/bf16 (stored so, multiplied in f32): their operands are widened as they are
  // packed, and the sums are rounded to the type at the epilogue.
  if (k_.reduction < 0 || !computed_in_f32(dtype(k_.reduction))) return std::nullopt;
  if (dims(k_.root) != dims(k_.reduction)) return std::nullopt;
  const ir::Node& n = kg.producer(k_.reduction);
  if (n.op != ir::OpKind::Matmul && n.op != ir::OpKind::Conv) return std::nullopt;
  p.node = kg.producer_index[static_cast<size_t>(k_.reduction)];
  p.is_conv = n.op == ir::OpKind::Conv;
  p.a = n.operands[p.is_conv ? 1 : 0];
  p.b = n.operands[p.is_conv ? 0 : 1];
  const ir::Shape& out = dims(k_.reduction);
  // Operands of one type; the result theirs, or f32 (a half matmul's unrounded sums).
  for (ir::ValueId o : n.operands)
    if (dtype(o) != dtype(p.a) || !computed_in_f32(dtype(o))) return std::nullopt;
  if (n.op == ir::OpKind::Matmul) {
    const ir::Shape &as = dims(p.a), &bs = dims(p.b);
    if (as.size() < 2 || bs.size() < 2) return std::nullopt;
    p.m = out[out.size() - 2];
    p.n = out.back();
    p.k = as.back();
    for (size_t d = 0; d + 2 < out.size(); ++d) p.batches = p.batches * out[d];
    if (!n.attrs.has("packed_a")) p.a_view = strided_view(kg, p.a);
    if (!n.attrs.has("packed_b")) p.b_view = strided_view(kg, p.b);
    // The microkernel reads an A in place as f32: f16/bf16 rows are packed (widened) instead.
    const bool rows = p.a_view && is_one(p.a_view->strides.back());
    p.direct_a = rows && dtype(p.a) == ir::DType::f32;
    p.a_rows = rows && !p.direct_a;
    p.b_pairs = n.attrs.has("packed_b_pairs");
    p.b_f16 = n.attrs.has("packed_b") && dtype(p.b) == ir::DType::f16;
    return p;
  }
  // Depthwise convs (one channel per group) take their own kernel (plan_depthwise).
  p.groups = n.attrs.has("groups") ? n.attrs.i("groups") : 1;
  if (p.groups < 1 || is_depthwise_conv(kg.g, n)) return std::nullopt;
  std::vector<int64_t> ws = static_dims(kg.g, p.a);  // weights are static
  if (out.size() != 3 && out.size() != 4) return std::nullopt;
  p.m = ws[0] / p.groups;
  p.k = 1;
  for (size_t d = 1; d < ws.size(); ++d) p.k = p.k * ws[d];
  p.n = 1;
  for (size_t d = 2; d < out.size(); ++d) p.n = p.n * out[d];
  p.batches = out[0] * p.groups;
  p.row = p.out_w = out.back();
  return p;
}

std::optional<GemmPlan> plan_gemm(const KernelGraph& kg) {
  std::optional<GemmPlan> operands = gemm_operands(kg);
  if (!operands) return std::nullopt;
  GemmPlan p = *operands;
  auto planned = [&](const ir::SymExpr& e) { return kg.planned(e); };
  const auto& read_arg_ = kg.read_arg;
  if (p.is_conv) {
    const ir::Node& n = kg.g.nodes[static_cast<size_t>(p.node)];
    const ir::Shape& out = kg.dims(kg.k.reduction);
    const ir::Shape& xs = kg.dims(p.b);
    p.wide = read_arg_.count(p.b) != 0;
    for (int64_t v : int_list(n.attrs, "stride")) p.wide = p.wide && v == 1;
    for (int64_t v : int_list(n.attrs, "pad_low")) p.wide = p.wide && v == 0;
    // Input rows longer than the output's (padding, a window wider than 1, dilation) cost the
    // wide conv the extra columns, and its blocks of whole input rows end in partial panels:
    // where output rows fill whole panels (most of a gathered conv's panels are then one vector
    // load too) and 16 rows or more share each packed column, the output's columns are gathered
    // instead: 3×3 convs (padding 1, Winograd off) at 56×56 5-12% and at 28×28 (batch 4) 6%
    // faster, grouped ones of 32 and 64 rows a group 8%, dilation 6, 12, 24 at 32×32 1.4-2.7x.
    // Wide stays where rows are shorter (14×14, 7×7: panels across rows, gathered element by
    // element, were 8-20% slower) or fewer rows share the packing (resnext's groups of 4 and 8
    // channels 15-30% slower gathered).
    if (p.wide && !(xs.back() == out.back()) && planned(out.back()) >= kPackedNR &&
        planned(p.m) >= kGatheredMinRows)
      p.wide = false;
    if (p.wide && out.size() == 4) {
      p.row = xs.back();
      p.n = out[2] * p.row;
    }
    p.gathered = !p.wide && read_arg_.count(p.b) != 0;
    for (const char* side : {"pad_low", "pad_high"})
      for (int64_t v : int_list(n.attrs, side)) p.gathered = p.gathered && v == 0;
    // Small images at a static batch over 1: one GEMM over every image's columns (with the
    // images apart, N = 49 took 64 lanes and each image's GEMM was a few tasks).
    const bool unpadded = read_arg_.count(p.b) != 0 && (p.gathered || p.wide);
    if (unpadded && out.size() == 4 && out[0].as_constant().value_or(1) > 1 && out[2].is_constant() &&
        out[3].is_constant() && planned(out[2] * out[3]) <= kMergedImageColumns) {
      p.wide = false;
      p.gathered = p.merged = true;
      p.images = out[0];
      p.batches = p.groups;
      p.row = p.out_w = out.back();
      p.n = p.images * out[2] * out[3];
    }
  }
  // A bf16 matmul of bf16 rows whose B is packed as it runs (attention's products of two
  // activations) packs B in K pairs for the bf16 dot too.
  if (!p.is_conv && p.a_rows && kg.dtype(p.a) == ir::DType::bf16 && !p.b_pairs &&
      !kg.g.nodes[static_cast<size_t>(p.node)].attrs.has("packed_b"))
    p.b_pairs = true;
  // A half conv's W (never pre-packed) is read by its rows; a bf16 one's B, where it is packed
  // from its input rows (wide, gathered), in K pairs for the bf16 dot (see GemmPlan::b_pairs).
  if (p.is_conv && kg.dtype(p.a) != ir::DType::f32 && !kg.g.nodes[static_cast<size_t>(p.node)].attrs.has("packed_a") &&
      read_arg_.count(p.a) != 0) {
    p.a_rows = true;
    p.b_pairs = kg.dtype(p.a) == ir::DType::bf16 && (p.wide || p.gathered);
  }
  // Whether packing pays is judged on the sizes at their maxima; the kernel handles every edge.
  if (planned(p.batches) == 0 || planned(p.m) < kGemmMinRows || planned(p.n) < kGemmMinColumns ||
      planned(p.k) < kGemmMinDepth) return std::nullopt;
  plan_gemm_blocking(kg, p);
  p.widen_b = p.b_f16 && planned(p.m) > 2 * p.mr;
  return p;
}

namespace {

// Multiply-adds per task (at the sizes' maxima), and the fewest tasks wanted where the conv
// allows: the runtime groups tasks into a few chunks per thread, so small tasks cost little.
constexpr int64_t kDepthwiseTaskWork = 8192;
constexpr int64_t kDepthwiseMinTasks = 16;
constexpr int64_t kDepthwiseRowGroup = 4;
// Floats of scratch per task at most (128 KB on the stack of the thread running it, as much as
// a GEMM kernel's tile): wider rows (a width of thousands) take the per-element conv loops.
constexpr int64_t kDepthwiseMaxScratch = 32 * 1024;

// A 2-D f32 max pool whose window the depthwise kernel can take: at most 64 taps, width stride
// 1 or 2 (resnet's 3×3 stride-2 pool).
static bool is_depthwise_max_pool(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::OpKind::Pool || n.attrs.s("kind") != "max") return false;
  const ir::DType t = g.type(n.operands[0]).dtype;
  if (!computed_in_f32(t) || g.type(n.results[0]).dtype != t) return false;
  if (g.type(n.operands[0]).shape.size() != 4) return false;
  std::vector<int64_t> kernel = n.attrs.ints("kernel"), stride = n.attrs.ints("stride");
  return kernel.size() == 2 && kernel[0] * kernel[1] <= 64 && stride.size() == 2 && stride[0] >= 1 &&
         stride[1] >= 1 && stride[1] <= 2;
}

}  // namespace

DepthwisePlan for_target(DepthwisePlan p, int64_t f32_lanes) {
  // The target's vector, halved while a row would fill at most half of it (7-wide rows: 8 lanes).
  const int64_t ow = p.width_bound;
  p.lanes = f32_lanes;
  while (p.lanes > 4 && 2 * ow <= p.lanes) p.lanes /= 2;
  p.tile = (ow + p.lanes - 1) / p.lanes * p.lanes;
  // The scratch: the input rows of `rows` output rows, each wide enough for the last vector's
  // last tap (lanes past the output width included), in whole vectors per phase.
  const int64_t vectors = (ow + p.lanes - 1) / p.lanes;
  p.phase_w = (vectors * p.lanes + (p.kw - 1) * p.dilation_w / p.stride_w + 1 + p.lanes - 1) / p.lanes * p.lanes;
  return p;
}

std::optional<DepthwisePlan> plan_depthwise(const KernelGraph& kg) {
  const ScheduledKernel& k_ = kg.k;
  auto dims = [&](ir::ValueId v) -> const ir::Shape& { return kg.dims(v); };
  auto planned = [&](const ir::SymExpr& e) { return kg.planned(e); };
  if (k_.reduction < 0 || dims(k_.root) != dims(k_.reduction)) return std::nullopt;
  const ir::Node& n = kg.producer(k_.reduction);
  DepthwisePlan p;
  p.max_pool = is_depthwise_max_pool(kg.g, n);
  if (!(p.max_pool || is_depthwise_conv(kg.g, n)) || kg.read_arg.count(n.operands[0]) == 0) return std::nullopt;
  for (const ir::SymExpr& d : dims(k_.reduction))
    if (is_zero(d)) return std::nullopt;
  p.node = kg.producer_index[static_cast<size_t>(k_.reduction)];
  p.x = n.operands[0];
  std::vector<int64_t> ws;  // the conv weight's sizes; a pool's window as [C, 1, kh, kw]
  std::vector<int64_t> stride = int_list(n.attrs, "stride"), dilation = {1, 1}, pad;
  if (p.max_pool) {
    std::vector<int64_t> kernel = int_list(n.attrs, "kernel");
    ws = {planned(dims(p.x)[1]), 1, kernel[0], kernel[1]};
    pad = int_list(n.attrs, "padding");
    if (n.attrs.has("dilation")) dilation = int_list(n.attrs, "dilation");
  } else {
    p.w = n.operands[1];
    ws = static_dims(kg.g, p.w);
    dilation = int_list(n.attrs, "dilation");
    pad = int_list(n.attrs, "pad_low");
  }
  p.kh = ws[2];
  p.kw = ws[3];
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  p.pad_h = pad[0];
  p.pad_w = pad[1];
  p.multiplier = p.max_pool ? 1 : ws[0] / n.attrs.i("groups");
  const ir::Shape& out = dims(k_.reduction);
  p.batches = out[0];
  p.out_c = out[1];
  p.out_h = out[2];
  p.out_w = out[3];
  const int64_t ow = planned(p.out_w), oh = planned(p.out_h), c = ws[0], batches = planned(p.batches);
  // Whole channels per task where a channel is small (7×7 rows), else row blocks of one channel.
  const int64_t per_row = std::max<int64_t>(1, ow * p.kh * p.kw);
  p.rows = std::clamp<int64_t>((kDepthwiseTaskWork + per_row - 1) / per_row, 1, std::max<int64_t>(1, oh));
  p.channels = p.rows < oh ? 1 : std::clamp<int64_t>(kDepthwiseTaskWork / (per_row * std::max<int64_t>(1, oh)), 1, c);
  auto tasks = [&] { return batches * ((c + p.channels - 1) / p.channels) * ((oh + p.rows - 1) / p.rows); };
  while (tasks() < kDepthwiseMinTasks && p.channels > 1) p.channels = (p.channels + 1) / 2;
  while (tasks() < kDepthwiseMinTasks && p.rows > 1) p.rows = (p.rows + 1) / 2;
  // Rows computed together: independent chains of fma (their latency, not the loads, would
  // bound a single row); row blocks in whole groups.
  p.group = std::min<int64_t>(kDepthwiseRowGroup, p.rows);
  if (p.rows < oh) p.rows = (p.rows + p.group - 1) / p.group * p.group;
  // The scratch holds the input rows of `rows` output rows (its width: for_target). Checked at
  // 16 lanes, the widest: a plan taken for one CPU is taken for every one.
  p.in_rows = (p.rows - 1) * p.stride_h + (p.kh - 1) * p.dilation_h + 1;
  p.width_bound = ow;
  p = for_target(p, 16);
  if (p.in_rows * p.stride_w * p.phase_w > kDepthwiseMaxScratch) return std::nullopt;
  return p;
}


WinogradPlan for_target(WinogradPlan p, int64_t f32_lanes) {
  // 7×7 outputs (4 tiles a row) use 4 lanes, not 16.
  p.lanes = 4;
  while (p.lanes < f32_lanes && p.lanes < p.tiles_w) p.lanes *= 2;
  p.vectors = (p.tiles_w + p.lanes - 1) / p.lanes;
  return p;
}

namespace {

// The fused kernel's blocking (WinogradPlan): at most this many tiles of columns (F(2×2); F(4×4):
// kWinogradColumnsF4), output channels (a multiple of MR) and input channels per step. Its
// stack: 16 tiles of 72 × 112 and 16 B matrices of 64 × 128 floats, ~1 MB at most; F(4×4)'s
// 36 of 72 × 64 and 64 × 64, ~1.25 MB. F(4×4) with 112 columns in F(2×2)'s stack (30 output
// and 22 input channels a step) was 15-20% slower than F(2×2) on resnet50_b4's 56×56×64 and
// 28×28×128 layers; with 56 or 64 columns 10-25% faster (2 threads, a noisy host). F(2×2)'s
// constants were measured on resnet50_b4 (1 thread, its
// 56×56×64 and 28×28×128 layers): 112 × 72 × 64 9.3 + 9.2 ms; 48 output channels 10.8 + 10.0;
// 32 input channels 9.6 + 9.8; 64 columns 10.2 + 9.7; 96 output channels ±0.3.
constexpr int64_t kWinogradColumns = 112;
constexpr int64_t kWinogradColumnsF4 = 56;
constexpr int64_t kWinogradRows = 72;
constexpr int64_t kWinogradDepth = 64;

// A whole Winograd conv in one kernel (fuse.cpp): M = matmul(U, winograd_input(x)) is inlined.
void plan_winograd_fused(const KernelGraph& kg, WinogradPlan& p) {
  const ir::Node& mm = kg.producer(kg.g.nodes[static_cast<size_t>(p.node)].operands[0]);
  AOT_CHECK(mm.op == ir::OpKind::Matmul && mm.attrs.has("packed_a"), "a fused Winograd conv's GEMM is not packed");
  const ir::Node& tiles = kg.producer(mm.operands[1]);
  AOT_CHECK(tiles.op == ir::OpKind::WinogradInput && kg.read_arg.count(tiles.operands[0]) != 0,
            "a fused Winograd conv does not read its input tiles' source");
  p.fused = true;
  p.x = tiles.operands[0];
  p.u = mm.operands[0];
  std::vector<int64_t> xs = static_dims(kg.g, p.x), pad = int_list(tiles.attrs, "pad_low");
  p.in_channels = xs[1];
  p.in_h = xs[2];
  p.in_w = xs[3];
  p.pad_h = pad[0];
  p.pad_w = pad[1];
  // Columns: the number of whole rows of tiles, up to kWinogradColumns tiles, whose last NR
  // panel is the fullest (56×56 outputs: 4 rows of 28 = 112, 7 panels; 14×14: 16 rows of 7).
  const int64_t nr = kPackedNR, rows_total = p.batches * p.tiles_h;
  // At least 8 tasks where the rows allow (as the GEMMs: 2 per thread on 4 cores), counting the
  // output channels' tasks at their usual size: resnet18's 56×56×64 layer (28 rows of tiles,
  // one channel task) takes blocks of 3 rows, not 4 (7 tasks).
  const int64_t channel_tasks = (p.channels + kWinogradRows - 1) / kWinogradRows;
  const int64_t blocks = (8 + channel_tasks - 1) / channel_tasks;
  const int64_t columns = p.tile == 2 ? kWinogradColumns : kWinogradColumnsF4;
  const int64_t most = std::clamp<int64_t>(std::min(columns / p.tiles_w, rows_total / blocks), 1, rows_total);
  double best = -1;
  for (int64_t r = 1; r <= most; ++r) {
    const int64_t nc = r * p.tiles_w, ncp = (nc + nr - 1) / nr * nr;
    const double use = static_cast<double>(nc) / static_cast<double>(ncp);
    if (use >= best) {
      best = use;
      p.block_rows = r;
    }
  }
  p.nc = p.block_rows * p.tiles_w;
  p.ncp = (p.nc + nr - 1) / nr * nr;
  // A block's last vector of tiles may run past its columns: B's rows have room for it.
  const int64_t reach = (p.block_rows - 1) * p.tiles_w + p.vectors * p.lanes;
  p.ldb = (std::max(p.ncp, reach) + nr - 1) / nr * nr;
  // Rows of tiles wider than kWinogradColumns (fuse.cpp fuses up to 256) take fewer output and
  // input channels per step: the stack stays ~1 MB.
  static_assert(kWinogradRows % kPackedMR == 0, "a task's output channels are whole U panels");
  const int64_t rows = std::max<int64_t>(kPackedMR, kWinogradRows * columns / std::max(p.ncp, columns) /
                                                        kPackedMR * kPackedMR);
  const int64_t depth = std::max<int64_t>(8, kWinogradDepth * (columns + 16) / std::max(p.ldb, columns + 16));
  p.mt = std::min(rows, (p.channels + kPackedMR - 1) / kPackedMR * kPackedMR);
  const int64_t k_panels = (p.in_channels + depth - 1) / depth;
  p.kc = (p.in_channels + k_panels - 1) / k_panels;
}

}  // namespace

std::optional<WinogradPlan> plan_winograd(const KernelGraph& kg) {
  const ScheduledKernel& k_ = kg.k;
  if (k_.reduction < 0) return std::nullopt;
  const ir::Node& n = kg.producer(k_.reduction);
  if (n.op != ir::OpKind::WinogradInput && n.op != ir::OpKind::WinogradOutput) return std::nullopt;
  WinogradPlan p;
  p.node = kg.producer_index[static_cast<size_t>(k_.reduction)];
  p.input = n.op == ir::OpKind::WinogradInput;
  std::vector<int64_t> out = int_list(n.attrs, "out");
  p.tile = n.attrs.i("tile");
  p.out_h = out[0];
  p.out_w = out[1];
  p.tiles_h = ir::winograd::tiles(p.out_h, p.tile);
  p.tiles_w = ir::winograd::tiles(p.out_w, p.tile);
  p = for_target(p, 16);
  std::vector<int64_t> in = static_dims(kg.g, n.operands[0]);
  if (p.input) {
    std::vector<int64_t> pad = int_list(n.attrs, "pad_low");
    p.batches = in[0];
    p.channels = p.in_channels = in[1];
    p.in_h = in[2];
    p.in_w = in[3];
    p.pad_h = pad[0];
    p.pad_w = pad[1];
  } else {
    p.channels = in[1];
    p.batches = in[2] / (p.tiles_h * p.tiles_w);
    if (kg.read_arg.count(n.operands[0]) == 0) plan_winograd_fused(kg, p);
  }
  return p;
}

// Arithmetic operations a kernel performs (per output element: its reduction's trip count), at
// the symbols' maxima.
double work_estimate(const KernelGraph& kg) {
  const ScheduledKernel& k_ = kg.k;
  auto dims = [&](ir::ValueId v) -> const ir::Shape& { return kg.dims(v); };
  auto planned = [&](const ir::SymExpr& e) { return kg.planned(e); };
  auto numel = [&](const ir::Shape& shape) {
    double c = 1;
    for (const ir::SymExpr& d : shape) c *= static_cast<double>(planned(d));
    return c;
  };
  double outputs = numel(k_.loop_extents);
  if (k_.reduction < 0) return outputs;
  const ir::Node& n = kg.producer(k_.reduction);
  double per_output = 1;
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::Reduce:
      per_output = numel(dims(n.operands[0])) / std::max(1.0, numel(dims(k_.reduction)));
      break;
    case ir::OpCategory::Matmul: per_output = static_cast<double>(planned(dims(n.operands[0]).back())); break;
    case ir::OpCategory::Conv:
      per_output = numel(dims(n.operands[1])) / std::max(1.0, static_cast<double>(planned(dims(n.operands[1])[0])));
      break;
    case ir::OpCategory::Pool:
      for (int64_t e : int_list(n.attrs, "kernel")) per_output *= static_cast<double>(e);
      break;
    case ir::OpCategory::Transform:
      per_output = 8;  // a few adds per element
      // A fused Winograd conv (emit_winograd.cpp): its GEMMs too, C·P/m² per output.
      if (n.op == ir::OpKind::WinogradOutput && kg.read_arg.count(n.operands[0]) == 0) {
        const ir::winograd::Transform& f = ir::winograd::transform(n.attrs.i("tile"));
        const ir::Shape& u = dims(kg.producer(n.operands[0]).operands[0]);  // [P, O, C]
        per_output += static_cast<double>(f.points()) / (f.m * f.m) * static_cast<double>(planned(u.back()));
      }
      break;
    default: break;
  }
  return outputs * std::max(1.0, per_output);
}

int64_t row_chunk(const KernelGraph& kg, double work) {
  const ir::Shape& extents = kg.k.loop_extents;
  if (extents.size() < 2) return 0;  // one loop (or none): no innermost loop of its own
  ir::SymExpr rows = 1;
  for (size_t d = 0; d + 1 < extents.size(); ++d) rows = rows * extents[d];
  // Few rows (a batch-1 linear layer: [1, N]): the innermost dim is split into chunks too, so
  // that there are tasks for every thread; chunks stay multiples of 16 for the vectoriser.
  // Symbolic extents are judged at their maxima; the chunk is then fixed, their count is not.
  const int64_t inner = kg.planned(extents.back());
  if (kg.planned(rows) >= 8 || inner < 64 || work < kParallelWork) return 0;
  return ((inner + 7) / 8 + 15) / 16 * 16;
}

std::vector<CpuPlan> plan_cpu_kernels(const Schedule& s) {
  std::vector<CpuPlan> plans;
  for (const ScheduledKernel& k : s.kernels) {
    KernelGraph kg(s.fused.graph, k);
    const double work = work_estimate(kg);
    CpuPlan plan;
    plan.symbol = k.symbol;
    plan.work = work;
    plan.gemm = plan_gemm(kg);
    plan.winograd = plan_winograd(kg);
    plan.depthwise = plan_depthwise(kg);
    plan.row_chunk = row_chunk(kg, work);
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::string describe(const std::vector<CpuPlan>& plans) {
  std::string out;
  for (const CpuPlan& plan : plans) {
    char work[32];
    std::snprintf(work, sizeof work, "%.3g", plan.work);
    out += plan.symbol + ": work " + work;
    if (const std::optional<DepthwisePlan>& d = plan.depthwise)
      out += std::string(" | depthwise ") + (d->max_pool ? "max pool " : "conv ") + std::to_string(d->kh) + "x" +
             std::to_string(d->kw) + " stride " + std::to_string(d->stride_h) + "x" + std::to_string(d->stride_w) +
             " | tasks " + d->tasks().str() + " (channels " + std::to_string(d->channels) + ", rows " +
             std::to_string(d->rows) + ")";
    if (const std::optional<WinogradPlan>& w = plan.winograd) {
      out += std::string(" | winograd ") + (w->input ? "input" : w->fused ? "fused" : "output") + " " +
             std::to_string(w->tile) + "x" + std::to_string(w->tile) + " tiles " +
             std::to_string(w->tiles_h) + "x" + std::to_string(w->tiles_w) + " | tasks " + std::to_string(w->tasks());
      if (w->fused)
        out += " (mt " + std::to_string(w->mt) + ", rows of tiles " + std::to_string(w->block_rows) + ", kc " +
               std::to_string(w->kc) + ", ldb " + std::to_string(w->ldb) + ")";
    }
    if (plan.row_chunk > 0 && !plan.tiled) out += " | rows in chunks of " + std::to_string(plan.row_chunk);
    if (const std::optional<TiledGemmPlan>& t = plan.tiled) {
      const GemmPlan& p = t->gemm;
      out += std::string(" | tiled ") + (p.is_conv ? "conv" : "matmul") + " batches " + p.batches.str() + " m " +
             p.m.str() + " n " + p.n.str() + " k " + p.k.str() + " | tile " + std::to_string(t->bm) + "x" +
             std::to_string(t->bn) + "x" + std::to_string(t->bk) +
             (t->math != Options::CudaMath::f32 ? std::string(" ") + cuda_math_name(t->math) +
                                             " mma m16n8k" + std::to_string(t->mma_k()) + " per warp " + std::to_string(t->wm) +
                                             "x" + std::to_string(t->wn)
                                        : " per thread " + std::to_string(t->tm) + "x" + std::to_string(t->tn)) +
             (t->stages > 1 ? " " + std::to_string(t->stages) + " stages" : "") +
             (t->a_m_fastest ? " a m-fastest" : "") + (t->b_k_fastest ? " b k-fastest" : "") +
             " | blocks " + t->tasks().str();
    } else if (plan.row_tile > 0) {
      out += " | block of " + std::to_string(plan.lanes) + " threads per row (sort, scan or scatter; tiles of " +
             std::to_string(plan.row_tile) + " in shared memory)";
    } else if (plan.lanes > 1) {
      out += plan.lanes == 32 ? std::string(" | warp of 32 lanes per output")
                              : " | block of " + std::to_string(plan.lanes) + " threads per output (shared-memory reduction)";
    }
    const std::optional<GemmPlan>& p = plan.gemm;
    if (!p) {
      out += "\n";
      continue;
    }
    out += std::string(" | gemm ") + (p->is_conv ? "conv" : "matmul") + " batches " + p->batches.str() +
           (p->groups > 1 ? " groups " + std::to_string(p->groups) : "") +
           " m " + p->m.str() + " n " + p->n.str() + " k " + p->k.str() + " | mr " + std::to_string(p->mr) +
           " nr " + std::to_string(p->nr) + " mc " + std::to_string(p->mc) + " kc " + std::to_string(p->kc) +
           " mt " + std::to_string(p->mt) + " nc " + p->nc.str() + " | tasks " + p->tasks().str();
    if (p->direct_a) out += " direct_a";
    if (p->a_rows) out += " a_rows";
    if (p->b_pairs) out += " b_pairs";
    if (p->b_f16) out += p->widen_b ? " b_f16 widen_b" : " b_f16";
    if (p->bf16_dot()) out += " bf16_dot";
    if (p->wide) out += " wide";
    if (p->gathered) out += " gathered";
    if (p->merged) out += " merged";
    out += "\n";
  }
  return out;
}

}  // namespace aotrace::lowering::cpu
