// Random graphs against the reference interpreter: a differential test of fusion, scheduling and
// both backends on op combinations no hand-written test chose. Each seed builds a chain of 6 to
// 14 random ops: elementwise with broadcasting, reductions over random axes with keepdim,
// softmax, layer norm, cumsum, argmax, topk, matmuls and convs on inputs or weights (half the
// convs read a new image of 4-32 channels, so that they reach the conv GEMMs, grouped ones,
// Winograd and conv-taps' cuts: 44 conv GEMMs over 300 seeds, 5 of them grouped), pools,
// index_select, gelu, silu, every movement op (permute, reshape, slice with steps, flip, pad
// with crops, concat, expand), integer arithmetic (i32, i64: remainder, floor division,
// reductions, cumsum, argmax), boolean masks (comparisons, and, or, not, counts, where), and
// f16 / bf16 stretches (elementwise, reductions, softmax, matmuls and linear layers; outputs
// downstream of one held to 2e-2 / 1e-1 of their largest magnitude: the kernels round where
// they store, the reference after every op). Even seeds put
// a dynamic dim T (range [2, 9], [2, 20] or [2, 40]) in the first input, which the ops carry
// along. Each graph is lowered once for a CPU (half the seeds: the x86-64-v2 baseline; the
// others: this machine's widest level, x86-64-v4 or v3) and once for CUDA under grid
// emulation with random GPU options (vector elements, GEMM stages, warp-reduction threshold,
// split-reduction chunks of 1 to 2048: reductions and argmaxes of 32 positions split), and run
// at T's minimum, minimum + 1, a middle size and its maximum: each output within 1e-4 of the
// reference, relative to its largest magnitude (at least 1). Then every graph's GPU kernels go
// through NVPTX and ptxas in one link. Comparisons that could flip
// on rounding (argmax, where(a > b), topk) only read values computed exactly (inputs through
// movement, neg, abs, relu, maximum, minimum, max, min, max pools).
// AOTRACE_RANDOM_GRAPHS=N runs seeds 1..N instead of the default 32 (a longer campaign),
// AOTRACE_RANDOM_PRINT=1 prints each graph; a failure prints its seed, the GPU options and the
// graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>

#include "lowering/passes.h"
#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::DType;
using ir::OpKind;
using Ints = std::vector<int64_t>;

constexpr int64_t kMaxElements = 24000;
// Outputs within this much of the reference, relative to their largest magnitude: f32 kernels;
// with f16 or bf16 upstream (kernels round where they store, the reference after every op).
constexpr double kF32Tolerance = 1e-4, kF16Tolerance = 2e-2, kBF16Tolerance = 1e-1;

const ir::SymExpr T = ir::SymExpr::symbol("T");

struct Generator {
  Generator(uint32_t seed, bool dynamic) : rng(seed) {
    if (dynamic) g.symbols["T"] = {2, std::vector<int64_t>{9, 20, 40}[static_cast<size_t>(pick(0, 2))], 1};
  }

  std::mt19937 rng;
  ir::Graph g;
  std::vector<ir::ValueId> pool;    // f32 values ops may read
  std::vector<bool> exact;          // by value id: computed without rounding
  std::vector<double> tolerance;    // by value id: of the largest magnitude (f16, bf16 upstream: more)
  std::vector<ir::ValueId> extra;   // outputs that are not f32 (argmax, topk's indices)

  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng); }
  bool dynamic() const { return !g.symbols.empty(); }
  const ir::Shape& dims(ir::ValueId v) const { return g.type(v).shape; }
  // A dim at T's maximum; a shape's element count there.
  int64_t most(const ir::SymExpr& e) const { return planned_size(e, max_bindings(g)); }
  int64_t numel(const ir::Shape& d) const {
    int64_t n = 1;
    for (const ir::SymExpr& e : d) n *= most(e);
    return n;
  }
  static std::optional<int64_t> fixed(const ir::SymExpr& e) { return e.as_constant(); }
  static bool all_fixed(const ir::Shape& d) {
    return std::all_of(d.begin(), d.end(), [](const ir::SymExpr& e) { return e.is_constant(); });
  }

  void mark(ir::ValueId v, bool is_exact) {
    if (exact.size() <= static_cast<size_t>(v)) exact.resize(static_cast<size_t>(v) + 1, false);
    exact[static_cast<size_t>(v)] = is_exact;
  }
  ir::ValueId input(const ir::Shape& d) {
    const std::string name = "x" + std::to_string(g.inputs.size());
    const ir::ValueId v = g.add_input(name, ir::TensorType{DType::f32, ir::Device{}, d}, "L['" + name + "']");
    mark(v, true);
    return v;
  }
  // The first input: random extents, T at a random position when the graph is dynamic.
  ir::Shape first_dims(int64_t rank) {
    static const Ints sizes = {1, 2, 3, 4, 5, 7, 8, 16, 17, 32, 33, 64, 130};
    for (;;) {
      ir::Shape d;
      for (int64_t i = 0; i < rank; ++i) d.push_back(sizes[static_cast<size_t>(pick(0, static_cast<int64_t>(sizes.size()) - 1))]);
      if (dynamic()) d[static_cast<size_t>(pick(0, rank - 1))] = T;
      if (numel(d) <= kMaxElements && numel(d) >= 2) return d;
    }
  }
  // A recent value, more often than an old one; sometimes the largest (reductions shrink values
  // fast; GEMM tiles, warps and split reductions need size).
  ir::ValueId operand() {
    const int64_t n = static_cast<int64_t>(pool.size());
    if (chance(0.3))
      return *std::max_element(pool.begin(), pool.end(), [&](ir::ValueId a, ir::ValueId b) { return numel(dims(a)) < numel(dims(b)); });
    return pool[static_cast<size_t>(std::max<int64_t>(0, n - 1 - std::min(pick(0, 3), pick(0, n - 1))))];
  }
  // A new image for a conv: [N, C, H, W] or [N, C, L], channels 4-32 and spatial sizes 1-20
  // (1-3: every tap of a padded 3×3 kernel reads padding somewhere), the batch T when it fits;
  // `common`: [N, 16-32, 6-20, 6-20].
  ir::ValueId conv_image(bool common) {
    const int64_t rank = common || chance(0.75) ? 4 : 3;
    static const Ints spatial = {1, 2, 3, 5, 7, 8, 12, 16, 20};
    ir::Shape d = {pick(1, 3), std::vector<int64_t>{4, 8, 16, 24, 32}[static_cast<size_t>(pick(common ? 2 : 0, 4))]};
    for (int64_t i = 2; i < rank; ++i)
      d.push_back(common ? pick(6, 20) : rank == 3 ? pick(4, 64) : spatial[static_cast<size_t>(pick(0, 8))]);
    if (dynamic() && chance(0.5)) {
      ir::Shape t = d;
      t[0] = T;
      if (numel(t) <= kMaxElements) d = t;
    }
    while (numel(d) > kMaxElements) d[1] = d[1].constant() / 2;
    return input(d);
  }
  // A new f32 operand of shape `d`: a graph input, or (static shapes) a weight, which the
  // backends' layout passes rewrite.
  ir::ValueId operand_of(const ir::Shape& d) {
    if (!all_fixed(d) || chance(0.5)) return input(d);
    Ints w;
    for (const ir::SymExpr& e : d) w.push_back(e.constant());
    const ir::ValueId v = weight(g, "w" + std::to_string(g.weights.size()), w, static_cast<uint32_t>(pick(1, 1 << 20)));
    mark(v, true);
    return v;
  }
  // A shape that broadcasts against `d`: some dims 1, maybe fewer leading dims.
  ir::Shape broadcast_partner(const ir::Shape& d) {
    ir::Shape p;
    const int64_t drop = d.empty() ? 0 : pick(0, chance(0.3) ? static_cast<int64_t>(d.size()) : 0);
    for (size_t i = static_cast<size_t>(drop); i < d.size(); ++i) p.push_back(chance(0.3) ? ir::SymExpr(1) : d[i]);
    return p;
  }
  ir::ValueId add(OpKind op, std::vector<ir::ValueId> operands, ir::Attrs a, bool is_exact) {
    double tol = kF32Tolerance;
    for (ir::ValueId o : operands) tol = std::max(tol, tolerance_of(o));
    const ir::ValueId v = g.add(op, std::move(operands), std::move(a));
    mark(v, is_exact);
    set_tolerance(v, tol);
    return v;
  }
  double tolerance_of(ir::ValueId v) const {
    return static_cast<size_t>(v) < tolerance.size() ? tolerance[static_cast<size_t>(v)] : kF32Tolerance;
  }
  void set_tolerance(ir::ValueId v, double tol) {
    if (tolerance.size() <= static_cast<size_t>(v)) tolerance.resize(static_cast<size_t>(v) + 1, kF32Tolerance);
    tolerance[static_cast<size_t>(v)] = tol;
  }
  bool is_exact(ir::ValueId v) const { return static_cast<size_t>(v) < exact.size() && exact[static_cast<size_t>(v)]; }
  Ints random_axes(int64_t rank) {
    Ints axes;
    while (axes.empty())
      for (int64_t a = 0; a < rank; ++a)
        if (chance(0.5)) axes.push_back(a);
    return axes;
  }

  // One random op reading the pool; false when the pick did not apply (tried again).
  bool step() {
    const ir::ValueId x = operand();
    const ir::Shape d = dims(x);
    const int64_t rank = static_cast<int64_t>(d.size());
    const bool ex = is_exact(x);
    ir::ValueId y = -1;
    switch (pick(0, 24)) {
      case 0: case 1: {  // unary
        static const OpKind ops[] = {OpKind::Neg, OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Abs, OpKind::Exp};
        const OpKind op = ops[pick(0, 5)];
        if (op == OpKind::Exp) y = add(op, {add(OpKind::Tanh, {x}, {}, false)}, {}, false);  // bounded
        else y = add(op, {x}, {}, ex && (op == OpKind::Neg || op == OpKind::Relu || op == OpKind::Abs));
        break;
      }
      case 2: case 3: {  // binary, broadcasting against a new input or an equal-shaped value
        static const OpKind ops[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Maximum, OpKind::Minimum};
        const OpKind op = ops[pick(0, 4)];
        ir::ValueId other = -1;
        for (ir::ValueId v : pool)
          if (v != x && dims(v) == d && chance(0.5)) other = v;
        if (other < 0) other = input(broadcast_partner(d));
        const bool swap = chance(0.3);
        y = add(op, {swap ? other : x, swap ? x : other}, {},
                ex && is_exact(other) && (op == OpKind::Maximum || op == OpKind::Minimum));
        break;
      }
      case 4: {  // where(a > b, a, c) on exact values
        if (!ex) return false;
        const ir::ValueId b = input(broadcast_partner(d));
        y = add(OpKind::Where, {g.add(OpKind::Gt, {x, b}), x, g.add(OpKind::Mul, {b, g.constant(0.5, DType::f32)})}, {}, false);
        break;
      }
      case 5: case 6: {  // reductions
        if (rank == 0) return false;
        static const OpKind ops[] = {OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::Mean};
        const OpKind op = ops[pick(0, 3)];
        y = add(op, {x}, reduce_attrs(random_axes(rank), chance(0.4)),
                ex && (op == OpKind::ReduceMax || op == OpKind::ReduceMin));
        break;
      }
      case 7: {  // argmax / argmin of exact values: an i64 output
        if (rank == 0 || !ex) return false;
        extra.push_back(g.add(chance(0.5) ? OpKind::ArgMax : OpKind::ArgMin, {x}, reduce_attrs({pick(0, rank - 1)}, chance(0.5))));
        return true;
      }
      case 8: {  // softmax, layer norm, cumsum
        if (rank == 0) return false;
        const int64_t kind = pick(0, 2);
        if (kind == 0) y = add(OpKind::Softmax, {x}, attrs({{"axis", pick(0, rank - 1)}}), false);
        else if (kind == 1 && most(d.back()) > 1) y = add(OpKind::LayerNorm, {x}, attrs({{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}), false);
        else y = add(OpKind::CumSum, {x}, attrs({{"axis", pick(0, rank - 1)}}), false);
        break;
      }
      case 9: case 10: {  // matmul against a new [K, N] (or batched [B, K, N]) operand
        if (rank == 0) return false;
        const int64_t n = std::vector<int64_t>{1, 3, 16, 33, 70}[static_cast<size_t>(pick(0, 4))];
        ir::Shape w = {d.back(), n};
        if (rank >= 3 && chance(0.5)) w.insert(w.begin(), d[static_cast<size_t>(rank) - 3]);
        ir::Shape out = d;
        out.back() = n;
        if (numel(out) > kMaxElements || numel(w) > kMaxElements) return false;
        y = add(OpKind::Matmul, {x, operand_of(w)}, {}, false);
        break;
      }
      case 11: {  // permute
        if (rank < 2) return false;
        Ints perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        y = add(OpKind::Permute, {x}, perm_attrs(perm), ex);
        break;
      }
      case 12: {  // reshape: merge two neighbours or split a static one
        if (rank == 0) return false;
        ir::Shape r = d;
        const int64_t a = pick(0, rank - 1);
        if (a + 1 < rank && chance(0.5)) {
          r[static_cast<size_t>(a)] = r[static_cast<size_t>(a)] * r[static_cast<size_t>(a) + 1];
          r.erase(r.begin() + a + 1);
        } else {
          const std::optional<int64_t> n = fixed(d[static_cast<size_t>(a)]);
          int64_t f = 0;
          for (int64_t c : {2, 3, 4, 8}) if (n && *n % c == 0 && *n > c && chance(0.6)) f = c;
          if (f == 0) return false;
          r[static_cast<size_t>(a)] = *n / f;
          r.insert(r.begin() + a, f);
        }
        y = add(OpKind::Reshape, {x}, attrs({{"shape", r}}), ex);
        break;
      }
      case 13: {  // slice of a static dim, with a step
        if (rank == 0) return false;
        const int64_t a = pick(0, rank - 1);
        const std::optional<int64_t> n = fixed(d[static_cast<size_t>(a)]);
        if (!n || *n < 2) return false;
        const int64_t start = pick(0, *n - 1), end = pick(start + 1, *n), step = pick(1, 3);
        y = add(OpKind::Slice, {x}, attrs({{"axis", a}, {"start", start}, {"end", end}, {"step", step}}), ex);
        break;
      }
      case 14: {  // flip
        if (rank == 0) return false;
        y = add(OpKind::Flip, {x}, attrs({{"axes", random_axes(rank)}}), ex);
        break;
      }
      case 15: {  // pad (negative: crop), every dim still at least 1
        if (rank == 0) return false;
        Ints low, high;
        ir::Shape r;
        for (int64_t i = 0; i < rank; ++i) {
          const ir::SymExpr& e = d[static_cast<size_t>(i)];
          const int64_t least = fixed(e) ? *fixed(e) : g.symbols.at("T").min;
          low.push_back(chance(0.5) ? 0 : pick(-1, 2));
          high.push_back(chance(0.5) ? 0 : pick(-1, 2));
          if (least + low.back() + high.back() < 1) return false;
          r.push_back(e + (low.back() + high.back()));
        }
        if (numel(r) > kMaxElements) return false;
        y = add(OpKind::Pad, {x}, attrs({{"low", low}, {"high", high}, {"value", 0.25}}), ex);
        break;
      }
      case 16: {  // concat with a new input
        if (rank == 0) return false;
        const int64_t a = pick(0, rank - 1);
        ir::Shape other = d, r = d;
        other[static_cast<size_t>(a)] = pick(1, 9);
        r[static_cast<size_t>(a)] = r[static_cast<size_t>(a)] + other[static_cast<size_t>(a)];
        if (numel(r) > kMaxElements) return false;
        const ir::ValueId o = input(other);
        y = add(OpKind::Concat, chance(0.5) ? std::vector<ir::ValueId>{x, o} : std::vector<ir::ValueId>{o, x}, attrs({{"axis", a}}), ex);
        break;
      }
      case 18: {  // conv over 1 or 2 static spatial dims (groups 1, depthwise or a divisor of both
                  // channel counts), bias sometimes; of x, or (half the time) of an image-shaped
                  // value, so that convs reach the GEMM (wide, gathered, merged, grouped), Winograd
                  // and conv-taps' cuts, not only the per-element loops
        // A third of the images' convs: 3×3, stride 1, padding 0 or 1, groups 1, 16+ channels in
        // and out (Winograd's, when the weight is a constant and there are 16+ output tiles).
        const bool sized = chance(0.5), common = sized && chance(0.35);
        ir::ValueId image = sized ? conv_image(common) : x;
        const ir::Shape id = dims(image);
        const int64_t irank = static_cast<int64_t>(id.size());
        if ((irank != 3 && irank != 4) || !fixed(id[1])) return false;
        const int64_t c = *fixed(id[1]), spatial = irank - 2;
        const int64_t o = chance(0.5) ? c : sized ? 4 * pick(common ? 4 : 1, 8) : pick(1, 20);
        int64_t groups = !common && o == c && chance(sized ? 0.2 : 0.5) ? c : 1;
        if (!common && groups == 1 && chance(sized ? 0.4 : 0.3)) {
          const int64_t g = sized ? std::vector<int64_t>{2, 4, 8}[static_cast<size_t>(pick(0, 2))] : pick(2, 4);
          if (c % g == 0 && o % g == 0) groups = g;
        }
        ir::Shape w = {o, c / groups}, out = {id[0], o};
        Ints stride, dilation, low, high;
        const int64_t common_pad = pick(0, 1);
        for (int64_t i = 0; i < spatial; ++i) {
          const std::optional<int64_t> in = fixed(id[static_cast<size_t>(2 + i)]);
          if (!in) return false;
          const int64_t k = common ? 3 : pick(1, 3);
          w.push_back(k);
          stride.push_back(common || chance(sized ? 0.7 : 0.5) ? 1 : 2);
          dilation.push_back(!common && k > 1 && chance(0.3) ? 2 : 1);
          low.push_back(common ? common_pad : pick(0, sized ? 2 : 1));
          high.push_back(common || (sized && chance(0.7)) ? low.back() : pick(0, 1));
          const int64_t span = *in + low.back() + high.back() - dilation.back() * (k - 1) - 1;
          if (span < 0) return false;
          out.push_back(span / stride.back() + 1);
        }
        if (numel(out) > kMaxElements || numel(w) > kMaxElements) return false;
        if (sized && chance(0.4)) image = add(chance(0.5) ? OpKind::Relu : OpKind::Neg, {image}, {}, true);  // a computed input
        std::vector<ir::ValueId> operands = {image, operand_of(w)};
        if (chance(0.5)) operands.push_back(operand_of({o}));
        y = add(OpKind::Conv, operands, attrs({{"stride", stride}, {"dilation", dilation}, {"pad_low", low}, {"pad_high", high}, {"groups", groups}}), false);
        break;
      }
      case 19: {  // max or average pool over static spatial dims
        if (rank != 3 && rank != 4) return false;
        const bool is_max = chance(0.5), ceil_mode = chance(0.3);
        Ints kernel, stride, padding, dilation;
        for (int64_t i = 2; i < rank; ++i) {
          const std::optional<int64_t> in = fixed(d[static_cast<size_t>(i)]);
          if (!in) return false;
          kernel.push_back(std::min<int64_t>(pick(1, 3), *in));
          stride.push_back(pick(1, 2));
          padding.push_back(pick(0, kernel.back() / 2));
          dilation.push_back(1);
        }
        y = add(OpKind::Pool, {x}, attrs({{"kind", std::string(is_max ? "max" : "avg")}, {"kernel", kernel}, {"stride", stride},
                                          {"padding", padding}, {"dilation", dilation}, {"ceil_mode", int64_t{ceil_mode}},
                                          {"count_include_pad", int64_t{chance(0.5)}}}), ex && is_max);
        break;
      }
      case 20: {  // along a static dim: index_select by a constant index (repeats, negatives), topk of
                  // exact values, or a scatter of -x into x at a constant index of x's shape (repeats)
        if (rank == 0) return false;
        const int64_t a = pick(0, rank - 1);
        const std::optional<int64_t> n = fixed(d[static_cast<size_t>(a)]);
        if (!n) return false;
        const int64_t kind = pick(0, 2);
        if (kind == 2) {
          if (!all_fixed(d)) return false;
          std::vector<int64_t> shape;
          int64_t count = 1;
          for (const ir::SymExpr& e : d) count *= shape.emplace_back(*fixed(e));
          Ints ids(static_cast<size_t>(count));
          for (int64_t& i : ids) i = pick(0, *n - 1);
          ir::Bytes bytes(ids.size() * sizeof(int64_t));
          std::memcpy(bytes.data(), ids.data(), bytes.size());
          const ir::ValueId index = g.add_weight("ids" + std::to_string(g.weights.size()), ir::TensorType{DType::i64, ir::Device{}, ir::Shape(shape.begin(), shape.end())},
                                                 "L['self'].ids", std::make_shared<const ir::Bytes>(std::move(bytes)));
          // Sums of exact values are exact; the last write of any value is.
          const bool accumulate = ex && chance(0.5);
          y = add(OpKind::Scatter, {x, index, g.add(OpKind::Neg, {x})}, attrs({{"axis", a}, {"accumulate", int64_t{accumulate}}}), ex);
        } else if (kind == 0) {
          Ints ids(static_cast<size_t>(pick(1, 12)));
          for (int64_t& i : ids) i = pick(-*n, *n - 1);
          ir::Bytes bytes(ids.size() * sizeof(int64_t));
          std::memcpy(bytes.data(), ids.data(), bytes.size());
          const ir::ValueId index = g.add_weight("ids" + std::to_string(g.weights.size()), ir::TensorType{DType::i64, ir::Device{}, ir::Shape{static_cast<int64_t>(ids.size())}},
                                                 "L['self'].ids", std::make_shared<const ir::Bytes>(std::move(bytes)));
          y = add(OpKind::IndexSelect, {x, index}, attrs({{"axis", a}}), ex);
        } else {
          if (!ex) return false;
          const std::vector<ir::ValueId> r = g.add_node(OpKind::TopK, {x}, attrs({{"k", pick(1, std::min<int64_t>(*n, 5))}, {"axis", a}, {"largest", int64_t{chance(0.5)}}, {"sorted", int64_t{1}}}));
          mark(r[0], true);
          extra.push_back(r[1]);
          y = r[0];
        }
        break;
      }
      case 21: {  // gelu, silu
        y = chance(0.5) ? add(OpKind::Silu, {x}, {}, false)
                        : add(OpKind::Gelu, {x}, attrs({{"approximate", std::string(chance(0.5) ? "none" : "tanh")}}), false);
        break;
      }
      case 22: {  // integers: exact values ×8 truncated to i32 or i64, an integer op, an exact output
        if (!ex) return false;
        const DType it = chance(0.5) ? DType::i32 : DType::i64;
        auto integers = [&](ir::ValueId v) {
          return g.add(OpKind::Cast, {g.add(OpKind::Mul, {v, g.constant(8, DType::f32)})}, attrs({{"dtype", it}}));
        };
        const ir::ValueId a = integers(x);
        ir::ValueId r = -1;
        const int64_t kind = pick(0, 3);
        if (kind == 0 || rank == 0) {  // binary with a broadcast partner; remainder and floor division by 1..8
          static const OpKind ops[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Maximum, OpKind::Minimum, OpKind::Remainder, OpKind::FloorDiv};
          const OpKind op = ops[pick(0, 6)];
          ir::ValueId b = integers(input(broadcast_partner(d)));
          const bool divides = op == OpKind::Remainder || op == OpKind::FloorDiv;  // by b, never 0 (torch raises)
          if (divides) b = g.add(OpKind::Add, {g.add(OpKind::Abs, {b}), g.constant(1, it)});
          r = g.add(op, !divides && chance(0.5) ? std::vector<ir::ValueId>{b, a} : std::vector<ir::ValueId>{a, b});
        } else if (kind == 1) {
          static const OpKind ops[] = {OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMin};
          r = g.add(ops[pick(0, 2)], {a}, reduce_attrs(random_axes(rank), chance(0.4)));
        } else if (kind == 2) {
          r = g.add(OpKind::CumSum, {a}, attrs({{"axis", pick(0, rank - 1)}}));
        } else {
          r = g.add(chance(0.5) ? OpKind::ArgMax : OpKind::ArgMin, {a}, reduce_attrs({pick(0, rank - 1)}, chance(0.5)));
        }
        extra.push_back(r);
        if (numel(dims(r)) > kMaxElements || dims(r).empty()) return true;
        y = add(OpKind::Cast, {r}, attrs({{"dtype", DType::f32}}), true);  // small integers: exact in f32
        break;
      }
      case 23: {  // masks: comparisons of exact values, and / or / not, counted, selected by or cast
        if (!ex) return false;
        static const OpKind cmps[] = {OpKind::Gt, OpKind::Lt, OpKind::Ge, OpKind::Le, OpKind::Eq, OpKind::Ne};
        const ir::ValueId b = input(broadcast_partner(d));
        ir::ValueId m = g.add(cmps[pick(0, 5)], {x, chance(0.3) ? g.constant(0, DType::f32) : b});
        if (chance(0.5)) m = g.add(chance(0.5) ? OpKind::And : OpKind::Or, {m, g.add(cmps[pick(0, 5)], {b, g.constant(0.25, DType::f32)})});
        if (chance(0.3)) m = g.add(OpKind::Not, {m});
        const int64_t kind = pick(0, 2);
        if (kind == 0 && rank > 0) {
          extra.push_back(g.add(OpKind::ReduceSum, {m}, reduce_attrs(random_axes(rank), chance(0.4))));  // i64 counts
          return true;
        }
        y = kind == 1 ? add(OpKind::Where, {m, x, b}, {}, true) : add(OpKind::Cast, {m}, attrs({{"dtype", DType::f32}}), true);
        break;
      }
      case 24: {  // half precision: x as f16 or bf16 through one to three ops, back to f32
        const DType ht = chance(0.5) ? DType::f16 : DType::bf16;
        ir::ValueId h = g.add(OpKind::Cast, {x}, attrs({{"dtype", ht}}));
        for (int64_t i = pick(1, 3); i > 0; --i) {
          const int64_t kind = pick(0, 5);
          const int64_t r = static_cast<int64_t>(dims(h).size());
          if (kind == 5 && r > 0) {  // a half matmul or linear (bias: f32 sums, one rounding); weights in K pairs
            const ir::SymExpr k = dims(h).back();
            const int64_t n = std::vector<int64_t>{3, 16, 33}[static_cast<size_t>(pick(0, 2))];
            ir::Shape out = dims(h);
            out.back() = n;
            if (numel(out) > kMaxElements || numel({k, n}) > kMaxElements) continue;
            auto half = [&](const ir::Shape& d) { return g.add(OpKind::Cast, {operand_of(d)}, attrs({{"dtype", ht}})); };
            h = chance(0.5) ? g.add(OpKind::Matmul, {h, half({k, n})})
                            : g.add(OpKind::Linear, {h, half({n, k}), half({n})});
          } else if (kind == 0) h = g.add(std::vector<OpKind>{OpKind::Tanh, OpKind::Relu, OpKind::Sigmoid, OpKind::Neg}[static_cast<size_t>(pick(0, 3))], {h});
          else if (kind == 1) h = g.add(OpKind::Mul, {h, g.add(OpKind::Cast, {input(broadcast_partner(dims(h)))}, attrs({{"dtype", ht}}))});
          else if (kind == 2) h = g.add(OpKind::Add, {h, g.constant(0.5, ht)});
          else if (kind == 3 && r > 0) h = g.add(std::vector<OpKind>{OpKind::ReduceSum, OpKind::ReduceMax, OpKind::Mean}[static_cast<size_t>(pick(0, 2))], {h}, reduce_attrs(random_axes(r), chance(0.4)));
          else if (r > 0) h = g.add(OpKind::Softmax, {h}, attrs({{"axis", pick(0, r - 1)}}));
        }
        y = add(OpKind::Cast, {h}, attrs({{"dtype", DType::f32}}), false);
        set_tolerance(y, std::max(tolerance_of(y), ht == DType::f16 ? kF16Tolerance : kBF16Tolerance));
        break;
      }
      default: {  // expand: size-1 dims grow, maybe a new leading dim
        ir::Shape r = d;
        bool grew = false;
        for (ir::SymExpr& e : r)
          if (fixed(e) == 1 && chance(0.7)) { e = pick(2, 6); grew = true; }
        if (chance(0.3)) { r.insert(r.begin(), pick(2, 4)); grew = true; }
        if (!grew || numel(r) > kMaxElements) return false;
        y = add(OpKind::Expand, {x}, attrs({{"shape", r}}), ex);
        break;
      }
    }
    if (numel(dims(y)) > kMaxElements) return false;
    pool.push_back(y);
    return true;
  }

  void build() {
    pool.push_back(input(first_dims(pick(1, 4))));
    const int64_t steps = pick(6, 14);
    for (int64_t done = 0, tries = 0; done < steps && tries < 200; ++tries) done += step();
    std::vector<ir::ValueId> outs = {pool.back()};
    for (int64_t i = pick(0, 2); i > 0; --i) {
      const ir::ValueId v = pool[static_cast<size_t>(pick(0, static_cast<int64_t>(pool.size()) - 1))];
      if (std::find(outs.begin(), outs.end(), v) == outs.end() && !g.type(v).shape.empty()) outs.push_back(v);
    }
    for (ir::ValueId e : extra) outs.push_back(e);
    // Graph inputs are no outputs here (a value of the pool may be one).
    outs.erase(std::remove_if(outs.begin(), outs.end(), [&](ir::ValueId v) {
                 return std::any_of(g.inputs.begin(), g.inputs.end(), [&](const auto& in) { return in.value == v; });
               }),
               outs.end());
    if (outs.empty()) outs.push_back(add(OpKind::Neg, {pool.back()}, {}, true));
    set_outputs(g, outs);
  }

  // The sizes to run at: T's minimum, minimum + 1, a middle value and its maximum (none: static).
  std::vector<ir::SymBindings> sizes() const {
    if (!dynamic()) return {{}};
    const ir::SymRange& r = g.symbols.at("T");
    return {{{"T", r.min}}, {{"T", r.min + 1}}, {{"T", (r.min + r.max) / 2 | 1}}, {{"T", r.max}}};
  }
};

// Options of the emulated GPU for seed `seed`.
Options gpu_options(std::mt19937& rng) {
  Options o = cuda_emulation();
  auto one_of = [&](Ints values) { return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)]; };
  o.cuda_vector_elements = one_of({1, 2, 4});
  o.cuda_gemm_stages = one_of({1, 2});
  o.cuda_warp_reduce_min = one_of({8, 64, 256});
  o.cuda_split_reduce_chunk = one_of({1, 4, 64, 2048});
  o.cuda_block_row_min = one_of({2, 16, 256});  // 2: every sort, topk, cumsum and scatter a block per row
  return o;
}

std::string options_str(const Options& o) {
  return "vector " + std::to_string(o.cuda_vector_elements) + ", stages " + std::to_string(o.cuda_gemm_stages) +
         ", warp-reduce-min " + std::to_string(o.cuda_warp_reduce_min) + ", split chunk " +
         std::to_string(o.cuda_split_reduce_chunk) + ", block-row-min " + std::to_string(o.cuda_block_row_min);
}

// "" when every element is within tol·|e| + tol·max(1, max|e|) (NaNs matching); integers exact.
// The floor of tol: an output that is all rounding noise (a layer norm of equal values: the
// residuals of the mean over sqrt(eps)) has no scale of its own; the graphs' values are O(1).
std::string close(const ir::HostTensor& actual, const ir::HostTensor& expected, double tol) {
  double largest = 1;
  for (int64_t i = 0; i < expected.numel(); ++i)
    if (std::isfinite(expected.get(i))) largest = std::max(largest, std::abs(expected.get(i)));
  const bool exact = !ir::is_floating(expected.dtype);
  return compare(actual, expected, exact ? 0 : tol, exact ? 0 : tol * largest);
}

// The widest x86-64 level this machine runs ("" for the baseline).
std::string host_level() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86-64-v3";
  return "";
}

TEST(RandomGraphs, MatchTheReferenceOnTheCpuAndTheEmulatedGpu) {
  const char* env = std::getenv("AOTRACE_RANDOM_GRAPHS");
  const int seeds = env != nullptr ? std::atoi(env) : 32;
  std::vector<ir::Bytes> objects;
  for (int seed = 1; seed <= seeds; ++seed) {
    Generator gen(static_cast<uint32_t>(seed), seed % 2 == 0);  // even seeds: T dynamic
    gen.build();
    const ir::Graph& g = gen.g;
    if (std::getenv("AOTRACE_RANDOM_PRINT")) std::cerr << g.str() << "\n";
    std::mt19937 option_rng(static_cast<uint32_t>(seed) * 7919u);
    const Options gpu = gpu_options(option_rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (AOTRACE_RANDOM_GRAPHS=" + std::to_string(seed) + "), GPU " +
                 options_str(gpu) + ":\n" + g.str());
    // The CPU leg: seeds 2 and 3 of every 4 (a dynamic graph and a static one) on this
    // machine's widest level (AVX-512 or AVX2 vectors, F16C's rounding), the others on the
    // x86-64-v2 baseline (4 lanes, integer f16 rounding).
    Options cpu;
    if ((seed / 2) % 2 == 1) cpu.cpu = host_level();
    for (const Options& o : {cpu, gpu}) {
      SCOPED_TRACE(o.device == Options::Device::cuda ? "emulated GPU" : "CPU " + (o.cpu.empty() ? std::string("x86-64-v2") : o.cpu));
      try {
        // Lowered once, run at every size (the plan and its kernels are the same for all).
        const LoweredVariant lowered = lower_graph(g, "rg_", o);
        const LoadedLibrary lib(link_cpu_library({lowered.object}, o));
        for (const ir::SymBindings& b : gen.sizes()) {
          SCOPED_TRACE(b.empty() ? std::string("static") : "T = " + std::to_string(b.at("T")));
          const std::vector<ir::HostTensor> inputs = inputs_at(g, b, static_cast<uint32_t>(seed));
          const std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
          const std::vector<ir::HostTensor> actual = run_plan(lib, lowered.plan, lowered.graph, inputs);
          ASSERT_EQ(actual.size(), expected.size());
          for (size_t i = 0; i < actual.size(); ++i)
            EXPECT_EQ(close(actual[i], expected[i], gen.tolerance_of(g.outputs[i])), "") << "output " << i;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
      }
    }
    if (HasFailure()) break;  // one graph's report is enough to go on
    // The same GPU plan as NVPTX bitcode, for the one PTX link below.
    Options real = gpu;
    real.cuda_grid_emulation = false;
    objects.push_back(lower_graph(g, "r" + std::to_string(seed) + "_", real).object);
  }
  // Every graph's kernels through LLVM's NVPTX backend and ptxas (sm_80, sm_90) in one link: a
  // selection failure or a ptxas error is an internal error here.
  if (!HasFailure() && !objects.empty()) {
    try {
      Options archs;  // sm_80 and sm_90
      archs.device = Options::Device::cuda;
      const CudaLibrary linked = link_cuda_kernels(objects, archs);
      EXPECT_FALSE(linked.ptx.empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the random graphs' PTX: " << e.what();
    }
  }
}

}  // namespace
}  // namespace aotrace::lowering
