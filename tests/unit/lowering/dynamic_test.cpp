// Dynamic dims in CPU codegen: graphs whose shapes hold symbols of Graph::symbols are lowered
// once, and the same library is run at several sizes of the symbols' ranges (min, min + 1, an
// odd middle value, max), each compared with the reference interpreter. The plan runner binds
// the symbols from the input shapes and passes them to every kernel. Each graph runs as CUDA
// kernels under grid emulation too (expect_matches_at).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "lowering/passes.h"
#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::DType;
using ir::OpKind;
using ir::SymExpr;
using Ints = std::vector<int64_t>;

const SymExpr T = SymExpr::symbol("T");
const SymExpr B = SymExpr::symbol("B");
const SymExpr H = SymExpr::symbol("H");

ir::TensorType sym(ir::Shape shape, DType t = DType::f32) { return ir::TensorType{t, ir::Device{}, std::move(shape)}; }

ir::ValueId input(ir::Graph& g, const std::string& name, ir::Shape shape, DType t = DType::f32) {
  return g.add_input(name, sym(std::move(shape), t), "L['" + name + "']");
}

std::string str(const ir::SymBindings& b) {
  std::string s;
  for (const auto& [name, v] : b) s += name + "=" + std::to_string(v) + " ";
  return s;
}

LoweredVariant expect_matches_at_for(const ir::Graph& g, const std::vector<ir::SymBindings>& sizes, double lo, double hi,
                                     std::optional<Tolerance> tol, const Options& options);

// Lowers `g` once and runs that one library at every binding of `sizes`; for the baseline CPU,
// the CUDA kernels too, under grid emulation (lowering/cuda/: one thread per output element,
// launches sized by the symbols).
LoweredVariant expect_matches_at(const ir::Graph& g, const std::vector<ir::SymBindings>& sizes,
                                 double lo = -1, double hi = 1, std::optional<Tolerance> tol = std::nullopt,
                                 const Options& options = {}) {
  if (options.cpu.empty() && options.device == Options::Device::cpu) {
    SCOPED_TRACE("CUDA grid emulation");
    expect_matches_at_for(g, sizes, lo, hi, tol, cuda_emulation(options));
  }
  return expect_matches_at_for(g, sizes, lo, hi, tol, options);
}

LoweredVariant expect_matches_at_for(const ir::Graph& g, const std::vector<ir::SymBindings>& sizes, double lo, double hi,
                                     std::optional<Tolerance> tol, const Options& options) {
  LoweredVariant lowered = lower_graph(g, "dyn_", options);
  LoadedLibrary lib(link_cpu_library({lowered.object}, options));
  for (const ir::SymBindings& b : sizes) {
    SCOPED_TRACE(str(b));
    std::vector<ir::HostTensor> inputs = inputs_at(g, b, 7, lo, hi);
    std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
    std::vector<ir::HostTensor> actual = run_plan(lib, lowered.plan, lowered.graph, inputs);
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
      Tolerance t = tol ? *tol : tolerance_for(expected[i].dtype);
      EXPECT_EQ(compare(actual[i], expected[i], t.rtol, t.atol), "") << "output " << i;
    }
  }
  return lowered;
}

// Chains of products (matmul into matmul, conv into conv) reach magnitudes of 20-50 from
// inputs in [-1, 1]: f32 rounding of the reassociated sums is then ~1e-5 absolute.
constexpr Tolerance kChained{1e-4, 1e-3};

// Compared on the baseline and, where the host has AVX2 + FMA, on x86-64-v3 too.
void expect_matches_at_on_both_cpus(const ir::Graph& g, const std::vector<ir::SymBindings>& sizes,
                                    std::optional<Tolerance> tol = std::nullopt) {
  expect_matches_at(g, sizes, -1, 1, tol);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    Options v3;
    v3.cpu = "x86-64-v3";
    SCOPED_TRACE("x86-64-v3");
    expect_matches_at(g, sizes, -1, 1, tol, v3);
  }
}

std::vector<ir::SymBindings> t_sizes(int64_t lo, int64_t mid, int64_t hi) {
  return {{{"T", lo}}, {{"T", lo + 1}}, {{"T", mid}}, {{"T", hi}}};
}

TEST(Dynamic, ElementwiseBroadcastCompareWhere) {
  ir::Graph g;
  g.symbols["B"] = {2, 5, 1};
  g.symbols["T"] = {2, 40, 1};
  ir::ValueId x = input(g, "x", {B, T, 8}), y = input(g, "y", {T, 1}), z = input(g, "z", {8});
  ir::ValueId e = g.add(OpKind::Tanh, {g.add(OpKind::Add, {g.add(OpKind::Mul, {x, y}), z})});
  ir::ValueId w = g.add(OpKind::Where, {g.add(OpKind::Gt, {x, y}), e, g.add(OpKind::Neg, {y})});
  ir::ValueId wide = g.add(OpKind::Mul, {g.add(OpKind::Exp, {input(g, "r", {B, T, 100})}), g.constant(0.5, DType::f32)});
  set_outputs(g, {w, g.add(OpKind::Cast, {g.add(OpKind::Le, {x, z})}, attrs({{"dtype", DType::i32}})), wide});
  expect_matches_at(g, {{{"B", 2}, {"T", 2}}, {{"B", 3}, {"T", 3}}, {{"B", 2}, {"T", 17}}, {{"B", 5}, {"T", 40}}});
}

TEST(Dynamic, ReductionsOverASymbolicAxis) {
  ir::Graph g;
  g.symbols["T"] = {2, 64, 1};
  ir::ValueId x = input(g, "x", {3, T, 5});
  set_outputs(g, {g.add(OpKind::ReduceSum, {x}, reduce_attrs({1}, false)),
                  g.add(OpKind::ReduceMax, {x}, reduce_attrs({1, 2}, true)),
                  g.add(OpKind::Mean, {x}, reduce_attrs({0, 1}, false)),
                  g.add(OpKind::ArgMax, {x}, reduce_attrs({1}, false)),
                  g.add(OpKind::CumSum, {x}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({2}, false))});
  expect_matches_at(g, t_sizes(2, 33, 64));
}

TEST(Dynamic, SoftmaxAndLayerNormOverASymbolicAxis) {
  ir::Graph g;
  g.symbols["T"] = {2, 100, 1};
  ir::ValueId x = input(g, "x", {4, T}), y = input(g, "y", {T, 24});
  ir::ValueId w = weight(g, "ln.weight", {24}, 1), b = weight(g, "ln.bias", {24}, 2);
  set_outputs(g, {g.add(OpKind::Softmax, {x}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::LayerNorm, {x}, attrs({{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}})),
                  g.add(OpKind::LayerNorm, {y, w, b}, attrs({{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}})),
                  g.add(OpKind::Softmax, {y}, attrs({{"axis", int64_t{0}}}))});
  expect_matches_at(g, t_sizes(2, 51, 100));
}

TEST(Dynamic, LinearLayerOnSymbolicTokens) {
  ir::Graph g;
  g.symbols["T"] = {2, 128, 1};
  ir::ValueId x = input(g, "x", {2, T, 64});
  ir::ValueId w = weight(g, "fc.weight", {80, 64}, 3), bias = weight(g, "fc.bias", {80}, 4);
  ir::ValueId mm = g.add(OpKind::Matmul, {x, transpose(g, w)});
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {mm, bias})})});
  LoweredVariant v = expect_matches_at(g, t_sizes(2, 77, 128));
  EXPECT_EQ(v.num_kernels(), 1);
  // The weight was packed at compile time: the activations' symbolic rows do not stop it.
  bool packed = false;
  for (const auto& n : v.graph.nodes) packed |= n.op == OpKind::Matmul && n.attrs.has("packed_b");
  EXPECT_TRUE(packed);
  expect_matches_at_on_both_cpus(g, {{{"T", 5}}, {{"T", 128}}});
}

TEST(Dynamic, MatmulWithSymbolicMNAndK) {
  ir::Graph g;
  g.symbols["T"] = {2, 300, 1};
  ir::ValueId a = input(g, "a", {T, 40}), b = input(g, "b", {40, T}), c = input(g, "c", {T, 20});
  ir::ValueId ab = g.add(OpKind::Matmul, {a, b});  // M = N = T
  set_outputs(g, {ab, g.add(OpKind::Matmul, {ab, c})});  // K = T
  expect_matches_at_on_both_cpus(g, t_sizes(2, 151, 300), kChained);
}

// Lowers `g` once for the CUDA kernels of `options` under grid emulation and runs that library
// at every binding of `sizes`, on inputs rounded to a 1/128 grid (exact in TF32, f16 and bf16):
// every output must equal the reference's exactly (sums of such products, few enough, are exact
// in f32 in any order).
void expect_exact_on_a_grid(const ir::Graph& g, const Options& options, const std::vector<ir::SymBindings>& sizes) {
  LoweredVariant lowered = lower_graph(g, "grid_", cuda_emulation(options));
  LoadedLibrary lib(link_cpu_library({lowered.object}, options));
  for (const ir::SymBindings& b : sizes) {
    SCOPED_TRACE(str(b));
    std::vector<ir::HostTensor> inputs = inputs_at(g, b, 7);
    for (ir::HostTensor& t : inputs)
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::round(t.get(i) * 128) / 128);
    std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
    std::vector<ir::HostTensor> actual = run_plan(lib, lowered.plan, lowered.graph, inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) EXPECT_EQ(compare(actual[i], expected[i], 0, 0), "") << "output " << i;
  }
}

// The tensor-core tiled GEMMs (cuda_math tf32, f16, bf16; grid emulation) with T in M and N,
// in K, and a symbolic batch B: one library per math run at T = 2 (a single partial tile), 3,
// 151 and 300. Inputs on a 1/128 grid are exact in every operand type, and their sums (at most
// 300 products of multiples of 2^-14) exact in f32, so the results equal the reference's.
TEST(Dynamic, TensorCoreMatmulsWithSymbolicSizes) {
  ir::Graph g;
  g.symbols["T"] = {2, 300, 1};
  g.symbols["B"] = {2, 4, 1};
  ir::ValueId a = input(g, "a", {T, 40}), b = input(g, "b", {40, T});
  ir::ValueId e = input(g, "e", {20, T}), c = input(g, "c", {T, 24});
  ir::ValueId x = input(g, "x", {B, T, 24}), w = input(g, "w", {24, 32});
  set_outputs(g, {g.add(OpKind::Matmul, {a, b}), g.add(OpKind::Matmul, {e, c}), g.add(OpKind::Matmul, {x, w})});
  for (Options::CudaMath math : {Options::CudaMath::tf32, Options::CudaMath::f16, Options::CudaMath::bf16}) {
    SCOPED_TRACE(cuda_math_name(math));
    Options o;
    o.cuda_math = math;
    expect_exact_on_a_grid(g, o, {{{"T", 2}, {"B", 2}}, {{"T", 3}, {"B", 3}}, {{"T", 151}, {"B", 4}}, {{"T", 300}, {"B", 4}}});
  }
}

// Two-stage tiled GEMMs (hidden `compile --cuda-gemm-stages 2`; grid emulation) with T in K and
// in M, at T = 2, 8 (one step of f32's 8), 9, 33 (two of the mma's 32) and 300; f32 and TF32 on
// operands on a 1/128 grid, whose sums are exact in f32, so the results equal the reference's
// bit for bit.
TEST(Dynamic, TwoStageTiledGemmsWithSymbolicK) {
  ir::Graph g;
  g.symbols["T"] = {2, 300, 1};
  ir::ValueId a = input(g, "a", {40, T}), b = input(g, "b", {T, 33});
  ir::ValueId e = input(g, "e", {T, 40}), f = input(g, "f", {40, 20});
  set_outputs(g, {g.add(OpKind::Matmul, {a, b}), g.add(OpKind::Matmul, {e, f})});
  for (Options::CudaMath math : {Options::CudaMath::f32, Options::CudaMath::tf32}) {
    SCOPED_TRACE(cuda_math_name(math));
    Options o;
    o.cuda_math = math;
    o.cuda_gemm_stages = 2;
    expect_exact_on_a_grid(g, o, {{{"T", 2}}, {{"T", 8}}, {{"T", 9}}, {{"T", 33}}, {{"T", 300}}});
  }
}

// Attention: q @ k^T with T in M and N, the causal mask sliced from a [128, 128] buffer to
// [T, T], softmax, att @ v with K = T; the heads split by reshape + permute and merged back.
TEST(Dynamic, AttentionWithCausalMaskSlicedToT) {
  ir::Graph g;
  g.symbols["T"] = {2, 128, 1};
  ir::ValueId x = input(g, "x", {2, T, 64});
  auto heads = [&](const std::string& name, uint32_t seed) {  // [2, 4, T, 16]
    ir::ValueId w = weight(g, name, {64, 64}, seed);
    ir::ValueId p = g.add(OpKind::Matmul, {x, transpose(g, w)});
    ir::ValueId r = g.add(OpKind::Reshape, {p}, attrs({{"shape", ir::Shape{2, T, 4, 16}}}));
    return g.add(OpKind::Permute, {r}, perm_attrs({0, 2, 1, 3}));
  };
  ir::ValueId q = heads("wq", 1), k = heads("wk", 2), v = heads("wv", 3);
  ir::ValueId s = g.add(OpKind::Matmul, {q, g.add(OpKind::Permute, {k}, perm_attrs({0, 1, 3, 2}))});
  s = g.add(OpKind::Mul, {s, g.constant(0.25, DType::f32)});
  Ints tri(128 * 128);
  auto bytes = std::make_shared<ir::Bytes>(128 * 128, 0);
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j <= i; ++j) (*bytes)[static_cast<size_t>(i * 128 + j)] = 1;
  ir::ValueId mask = g.add_weight("mask", sym({128, 128}, DType::b8), "L['self'].mask", bytes);
  ir::Attrs rows = attrs({{"axis", int64_t{0}}, {"start", int64_t{0}}, {"end", ir::Shape{T}}, {"step", int64_t{1}}});
  ir::Attrs cols = attrs({{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", ir::Shape{T}}, {"step", int64_t{1}}});
  ir::ValueId m = g.add(OpKind::Slice, {g.add(OpKind::Slice, {mask}, rows)}, cols);
  s = g.add(OpKind::Where, {m, s, g.constant(-INFINITY, DType::f32)});
  ir::ValueId att = g.add(OpKind::Softmax, {s}, attrs({{"axis", int64_t{3}}}));
  ir::ValueId y = g.add(OpKind::Matmul, {att, v});  // [2, 4, T, 16]
  y = g.add(OpKind::Reshape, {g.add(OpKind::Permute, {y}, perm_attrs({0, 2, 1, 3}))},
            attrs({{"shape", ir::Shape{2, T, 64}}}));
  set_outputs(g, {y, att});
  expect_matches_at_on_both_cpus(g, t_sizes(2, 45, 128), kChained);
}

TEST(Dynamic, ReshapeHeadsAndTranspose) {
  ir::Graph g;
  g.symbols["B"] = {2, 4, 1};
  g.symbols["T"] = {2, 30, 1};
  ir::ValueId x = input(g, "x", {B, T, 24});
  ir::ValueId r = g.add(OpKind::Reshape, {x}, attrs({{"shape", ir::Shape{B, T, 4, 6}}}));
  ir::ValueId p = g.add(OpKind::Permute, {r}, perm_attrs({0, 2, 1, 3}));  // [B, 4, T, 6]
  ir::ValueId flat = g.add(OpKind::Reshape, {g.add(OpKind::Exp, {p})}, attrs({{"shape", ir::Shape{B * 4, T * 6}}}));
  ir::ValueId all = g.add(OpKind::Reshape, {x}, attrs({{"shape", ir::Shape{B * T * 24}}}));
  ir::ValueId back = g.add(OpKind::Reshape, {flat}, attrs({{"shape", ir::Shape{B, 4 * T, 6}}}));
  set_outputs(g, {p, flat, g.add(OpKind::Neg, {all}), back});
  expect_matches_at(g, {{{"B", 2}, {"T", 2}}, {{"B", 3}, {"T", 3}}, {{"B", 2}, {"T", 17}}, {{"B", 4}, {"T", 30}}});
}

TEST(Dynamic, SliceOfAStaticBufferToT) {
  ir::Graph g;
  g.symbols["T"] = {2, 128, 1};
  ir::ValueId x = input(g, "x", {T, T});
  ir::ValueId buf = weight(g, "bias", {128, 128}, 5);
  ir::Attrs rows = attrs({{"axis", int64_t{0}}, {"start", int64_t{0}}, {"end", ir::Shape{T}}, {"step", int64_t{1}}});
  ir::Attrs cols = attrs({{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", ir::Shape{T}}, {"step", int64_t{1}}});
  ir::ValueId m = g.add(OpKind::Slice, {g.add(OpKind::Slice, {buf}, rows)}, cols);
  // x[1:T:2]: a symbolic end with a step.
  ir::ValueId odd = g.add(OpKind::Slice, {x}, attrs({{"axis", int64_t{0}}, {"start", int64_t{1}}, {"end", ir::Shape{T}}, {"step", int64_t{2}}}));
  set_outputs(g, {g.add(OpKind::Add, {x, m}), g.add(OpKind::Flip, {odd}, attrs({{"axes", Ints{0, 1}}}))});
  expect_matches_at(g, t_sizes(2, 63, 128));
}

TEST(Dynamic, ArangeOfSymbolicLength) {
  ir::Graph g;
  g.symbols["T"] = {2, 1000, 1};
  ir::ValueId x = input(g, "x", {T});
  ir::ValueId r = g.add(OpKind::Arange, {}, attrs({{"shape", ir::Shape{T}}, {"start", 0.0}, {"step", 1.0}, {"dtype", DType::i64}}));
  ir::ValueId f = g.add(OpKind::Arange, {}, attrs({{"shape", ir::Shape{T}}, {"start", 0.5}, {"step", 0.25}, {"dtype", DType::f32}}));
  set_outputs(g, {r, g.add(OpKind::Add, {x, f})});
  expect_matches_at(g, t_sizes(2, 501, 1000));
}

TEST(Dynamic, ConcatPadAndIndexAlongT) {
  ir::Graph g;
  g.symbols["T"] = {2, 50, 1};
  ir::ValueId x = input(g, "x", {2, T, 8}), y = input(g, "y", {2, 5, 8}), z = input(g, "z", {2, T, 8});
  ir::ValueId cat = g.add(OpKind::Concat, {x, y, z}, attrs({{"axis", int64_t{1}}}));  // [2, 2T + 5, 8]
  ir::ValueId pad = g.add(OpKind::Pad, {x}, attrs({{"low", Ints{0, 2, 1}}, {"high", Ints{1, 3, 0}}, {"value", 0.5}}));
  ir::ValueId table = weight(g, "embed", {30, 16}, 6);
  ir::ValueId ids = input(g, "ids", {T}, DType::i64);
  ir::ValueId emb = g.add(OpKind::IndexSelect, {table, ids}, attrs({{"axis", int64_t{0}}}));  // [T, 16]
  ir::ValueId pick = g.add(OpKind::IndexSelect, {x, ids}, attrs({{"axis", int64_t{1}}}));     // reads x along T
  ir::ValueId where = input(g, "where", {2, T, 8}, DType::i64);
  ir::ValueId gathered = g.add(OpKind::Gather, {x, where}, attrs({{"axis", int64_t{1}}}));
  ir::ValueId top = topk_of(g, x, 2, 1, true)[0];
  set_outputs(g, {cat, pad, emb, pick, top, g.add(OpKind::Concat, {x, z}, attrs({{"axis", int64_t{2}}})), gathered});
  // ids in [0, 2): valid positions for every T.
  expect_matches_at(g, t_sizes(2, 23, 50), -1, 2);
}

// Scatters with symbolic extents (emit_scatter_rows): an index of T positions into a static
// row (a repetition penalty's token ids), along a symbolic axis with static rows after it (runs
// of 8 per CPU task), along the innermost axis, and along a leading axis with T rows after it
// (a symbolic count of rows: one per task); last writes and sums in order.
TEST(Dynamic, ScattersOverSymbolicExtents) {
  ir::Graph g;
  g.symbols["T"] = {2, 50, 1};
  auto scatter = [&](ir::ValueId self, ir::ValueId index, ir::ValueId src, int64_t axis, bool accumulate) {
    return g.add(OpKind::Scatter, {self, index, src}, attrs({{"axis", axis}, {"accumulate", int64_t{accumulate}}}));
  };
  ir::ValueId row = input(g, "row", {2, 40}), ids = input(g, "ids", {2, T}, DType::i64), src = input(g, "src", {2, T});
  ir::ValueId x = input(g, "x", {2, T, 8}), xi = input(g, "xi", {2, T, 8}, DType::i64), xs = input(g, "xs", {2, T, 3}, DType::i64);
  ir::ValueId z = input(g, "z", {4, T}), zi = input(g, "zi", {3, T}, DType::i64);
  set_outputs(g, {scatter(row, ids, src, 1, false), scatter(row, ids, src, 1, true), scatter(x, xi, x, 1, false),
                  scatter(x, xi, x, 1, true), scatter(x, xs, x, 2, true), scatter(z, zi, z, 0, false), scatter(z, zi, z, 0, true)});
  // indices in [0, 2): valid positions for every T.
  expect_matches_at(g, t_sizes(2, 23, 50), -1, 2);
}

// A cumsum and scatters along a symbolic innermost axis of up to 3000 (a thread block per row on
// the GPU, emit_scan_block, emit_scatter_block): the rows' tiles and the index's chunks counted at
// run time, at 2 (most threads past the row), 2049 (a tile and one), 3000; the scatters' targets
// in [0, 2) (valid at every size: repeats in every chunk).
TEST(Dynamic, BlockScansAndScattersOverASymbolicAxis) {
  ir::Graph g;
  g.symbols["T"] = {2, 3000, 1};
  ir::ValueId x = input(g, "x", {3, T}), ids = input(g, "ids", {3, T}, DType::i64);
  auto scatter = [&](bool accumulate) {
    return g.add(OpKind::Scatter, {x, ids, x}, attrs({{"axis", int64_t{1}}, {"accumulate", int64_t{accumulate}}}));
  };
  set_outputs(g, {g.add(OpKind::CumSum, {x}, attrs({{"axis", int64_t{1}}})), scatter(false), scatter(true)});
  expect_matches_at(g, t_sizes(2, 2049, 3000), 0, 2);
}

// A topk of more than kTopkRowsMaxK over a symbolic axis (emit_topk_heap: the heap's k slots,
// the rest of the row walked to its size at run time), largest and smallest, values gathered.
TEST(Dynamic, WideTopkOverASymbolicAxis) {
  ir::Graph g;
  g.symbols["T"] = {kTopkRowsMaxK + 40, kTopkRowsMaxK + 300, 1};
  ir::ValueId x = input(g, "x", {2, T});
  auto topk = [&](bool largest) { return topk_of(g, x, kTopkRowsMaxK + 30, 1, largest); };
  std::vector<ir::ValueId> a = topk(true), b = topk(false);
  set_outputs(g, {a[0], a[1], b[0], b[1]});
  expect_matches_at(g, t_sizes(kTopkRowsMaxK + 40, kTopkRowsMaxK + 177, kTopkRowsMaxK + 300));
}

ir::Attrs conv_attrs(Ints stride, Ints pad) {
  ir::Attrs a;
  a.set("stride", stride).set("dilation", Ints{1, 1}).set("pad_low", pad).set("pad_high", pad).set("groups", int64_t{1});
  return a;
}

ir::Attrs pool_attrs(Ints kernel, Ints stride, Ints pad) {
  return attrs({{"kind", std::string("max")}, {"kernel", kernel}, {"stride", stride}, {"padding", pad},
                {"dilation", Ints{1, 1}}, {"ceil_mode", int64_t{0}}});
}

// A resnet stem with symbolic batch and H = W: conv 3x3 pad 1 (a padded input: the wide GEMM
// path), relu, max pool 3x3 stride 2 pad 1, a stride-2 conv (the gathered path), an unpadded
// 1x1 conv, and a depthwise conv (emit_depthwise.cpp).
TEST(Dynamic, ConvReluMaxPoolWithSymbolicBatchAndSize) {
  ir::Graph g;
  g.symbols["B"] = {2, 3, 1};
  g.symbols["H"] = {32, 96, 32};
  ir::ValueId x = input(g, "x", {B, 3, H, H});
  ir::ValueId w1 = weight(g, "c1.weight", {16, 3, 3, 3}, 1), b1 = weight(g, "c1.bias", {16}, 2);
  ir::ValueId w2 = weight(g, "c2.weight", {24, 16, 3, 3}, 3);
  ir::ValueId w3 = weight(g, "c3.weight", {8, 24, 1, 1}, 4);
  ir::ValueId wd = weight(g, "dw.weight", {8, 1, 3, 3}, 5);
  ir::ValueId c1 = g.add(OpKind::Relu, {g.add(OpKind::Conv, {x, w1, b1}, conv_attrs({1, 1}, {1, 1}))});
  ir::ValueId p = g.add(OpKind::Pool, {c1}, pool_attrs({3, 3}, {2, 2}, {1, 1}));
  ir::ValueId c2 = g.add(OpKind::Relu, {g.add(OpKind::Conv, {p, w2}, conv_attrs({2, 2}, {1, 1}))});
  ir::ValueId c3 = g.add(OpKind::Conv, {c2, w3}, conv_attrs({1, 1}, {0, 0}));
  ir::Attrs dw = conv_attrs({1, 1}, {1, 1});
  dw.set("groups", int64_t{8});
  ir::ValueId d = g.add(OpKind::Conv, {c3, wd}, dw);
  ir::ValueId avg = g.add(OpKind::Pool, {c3}, attrs({{"kind", std::string("avg")}, {"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}},
                                                    {"padding", Ints{1, 1}}, {"dilation", Ints{1, 1}}, {"ceil_mode", int64_t{0}},
                                                    {"count_include_pad", int64_t{1}}}));
  set_outputs(g, {p, d, avg});
  expect_matches_at(g, {{{"B", 2}, {"H", 32}}, {{"B", 3}, {"H", 64}}, {{"B", 2}, {"H", 96}}}, -1, 1, kChained);
}

// A symbolic batch: a 3×3 conv of 1×1 images cut to its centre tap (conv_taps: the spatial
// sizes are static), grouped convs as a GEMM per image and group (batch index [image, group]
// over a symbolic count of images), wide and gathered.
TEST(Dynamic, GroupedConvsAndCutTapsWithASymbolicBatch) {
  ir::Graph g;
  g.symbols["B"] = {2, 5, 1};
  ir::ValueId one = input(g, "one", {B, 8, 1, 1});
  ir::ValueId x = input(g, "x", {B, 16, 9, 18});
  ir::Attrs grouped = conv_attrs({1, 1}, {1, 1});
  grouped.set("groups", int64_t{4});
  ir::Attrs strided = conv_attrs({2, 2}, {0, 0});
  strided.set("groups", int64_t{2});
  set_outputs(g, {g.add(OpKind::Conv, {one, weight(g, "w", {6, 8, 3, 3}, 1)}, conv_attrs({1, 1}, {1, 1})),
                  g.add(OpKind::Relu, {g.add(OpKind::Conv, {x, weight(g, "wg", {24, 4, 3, 3}, 2), weight(g, "bg", {24}, 3)}, grouped)}),
                  g.add(OpKind::Conv, {x, weight(g, "ws", {20, 8, 3, 3}, 4)}, strided)});
  ir::Graph cut = conv_taps(g);
  EXPECT_EQ(cut.type(cut.nodes[0].operands[1]).str(), "f32[6, 8, 1, 1]");
  expect_matches_at(g, {{{"B", 2}}, {{"B", 3}}, {{"B", 5}}});
}

// Depthwise convs (emit_depthwise.cpp) at symbolic batch, height and width: 3x3 stride 1 with
// bias + ReLU6 and with a residual add, 3x3 and 5x5 stride 2; the widths run from under one
// vector (5) to several (67), so border and interior vectors are decided at run time.
TEST(Dynamic, DepthwiseConvWithSymbolicBatchHeightAndWidth) {
  ir::Graph g;
  g.symbols["B"] = {2, 3, 1};
  g.symbols["H"] = {5, 40, 1};
  g.symbols["W"] = {5, 67, 1};
  const SymExpr W = SymExpr::symbol("W");
  ir::ValueId x = input(g, "x", {B, 8, H, W}), res = input(g, "res", {B, 8, H, W});
  ir::ValueId b = weight(g, "dw.bias", {8}, 1);
  uint32_t seed = 2;
  auto dw = [&](int64_t k, int64_t stride, bool bias) {
    ir::Attrs a = conv_attrs({stride, stride}, {k / 2, k / 2});
    a.set("groups", int64_t{8});
    std::vector<ir::ValueId> operands = {x, weight(g, "dw" + std::to_string(seed), {8, 1, k, k}, seed)};
    ++seed;
    if (bias) operands.push_back(b);
    return g.add(OpKind::Conv, operands, a);
  };
  auto relu6 = [&](ir::ValueId v) { return g.add(OpKind::Clamp, {v}, attrs({{"min", 0.0}, {"max", 6.0}})); };
  set_outputs(g, {relu6(dw(3, 1, true)), g.add(OpKind::Add, {dw(3, 1, false), res}), dw(3, 2, true), dw(5, 2, false)});
  LoweredVariant v = expect_matches_at(g, {{{"B", 2}, {"H", 5}, {"W", 5}}, {{"B", 3}, {"H", 6}, {"W", 17}},
                                           {{"B", 2}, {"H", 13}, {"W", 33}}, {{"B", 3}, {"H", 40}, {"W", 67}}},
                                       -1, 1, kChained);
  EXPECT_EQ(v.num_kernels(), 4);  // no padded copies of x
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    Options v4;
    v4.cpu = "x86-64-v4";
    SCOPED_TRACE("x86-64-v4");
    expect_matches_at(g, {{{"B", 2}, {"H", 5}, {"W", 5}}, {{"B", 3}, {"H", 40}, {"W", 67}}}, -1, 1, kChained, v4);
  }
}

// A width whose bound is too wide for the depthwise kernel's stack scratch (kDepthwiseMaxScratch,
// emit_depthwise.cpp): the per-element conv loops take it, zero padding and stride 2 included,
// and the padded conv still needs no padded copy of its input.
TEST(Dynamic, DepthwiseConvTooWideForTheScratchTakesThePerElementLoops) {
  ir::Graph g;
  g.symbols["W"] = {5, 200000, 1};
  const SymExpr W = SymExpr::symbol("W");
  ir::ValueId x = input(g, "x", {1, 4, 6, W});
  ir::Attrs a = conv_attrs({2, 2}, {1, 1});
  a.set("groups", int64_t{4});
  ir::Attrs s1 = conv_attrs({1, 1}, {1, 1});
  s1.set("groups", int64_t{4});
  set_outputs(g, {g.add(OpKind::Conv, {x, weight(g, "dw1", {4, 1, 3, 3}, 1)}, a),
                  g.add(OpKind::Conv, {x, weight(g, "dw2", {4, 1, 3, 3}, 2)}, s1)});
  LoweredVariant v = expect_matches_at(g, {{{"W", 5}}, {{"W", 19}}, {{"W", 40}}}, -1, 1, kChained);
  EXPECT_EQ(v.num_kernels(), 2);
}

// resnet's structure at symbolic batch and H = W (multiples of 32): stem conv 7x7 stride 2 +
// batch-norm + relu, max pool, a basic block whose residual goes through a stride-2 1x1 conv,
// global average pooling (a mean over symbolic H, W), flatten and the classifier.
TEST(Dynamic, ResnetShapedNetworkWithSymbolicBatchAndSize) {
  ir::Graph g;
  g.symbols["B"] = {2, 16, 1};
  g.symbols["H"] = {64, 128, 32};
  ir::ValueId x = input(g, "x", {B, 3, H, H});
  uint32_t seed = 10;
  auto bn = [&](ir::ValueId v, int64_t c) {
    ir::ValueId var = g.add(OpKind::Add, {g.add(OpKind::Abs, {weight(g, "var" + std::to_string(seed), {c}, seed)}),
                                          g.constant(0.5, DType::f32)});
    ir::ValueId mean = weight(g, "mean" + std::to_string(seed), {c}, seed + 1);
    ir::ValueId w = weight(g, "w" + std::to_string(seed), {c}, seed + 2), b = weight(g, "b" + std::to_string(seed), {c}, seed + 3);
    seed += 4;
    return g.add(OpKind::BatchNorm, {v, mean, var, w, b}, attrs({{"eps", 1e-5}}));
  };
  auto conv = [&](ir::ValueId v, int64_t cin, int64_t cout, int64_t k, int64_t stride) {
    ir::ValueId w = weight(g, "conv" + std::to_string(seed), {cout, cin, k, k}, seed);
    ++seed;
    return g.add(OpKind::Conv, {v, w}, conv_attrs({stride, stride}, {k / 2, k / 2}));
  };
  ir::ValueId stem = g.add(OpKind::Relu, {bn(conv(x, 3, 8, 7, 2), 8)});            // [B, 8, H/2, H/2]
  ir::ValueId p = g.add(OpKind::Pool, {stem}, pool_attrs({3, 3}, {2, 2}, {1, 1}));  // [B, 8, H/4, H/4]
  ir::ValueId a = g.add(OpKind::Relu, {bn(conv(p, 8, 16, 3, 2), 16)});             // [B, 16, H/8, H/8]
  ir::ValueId body = bn(conv(a, 16, 16, 3, 1), 16);
  ir::ValueId down = bn(conv(p, 8, 16, 1, 2), 16);
  ir::ValueId block = g.add(OpKind::Relu, {g.add(OpKind::Add, {body, down})});
  ir::ValueId pooled = g.add(OpKind::AdaptiveAvgPool, {block}, attrs({{"size", Ints{1, 1}}}));
  ir::ValueId flat = g.add(OpKind::Reshape, {pooled}, attrs({{"shape", ir::Shape{B, 16}}}));
  ir::ValueId fc = weight(g, "fc.weight", {10, 16}, 99);
  set_outputs(g, {g.add(OpKind::Matmul, {flat, transpose(g, fc)}), block});
  LoweredVariant v = expect_matches_at(g, {{{"B", 2}, {"H", 64}}, {{"B", 3}, {"H", 96}}, {{"B", 5}, {"H", 128}}}, -1,
                                       1, kChained);
  // Symbolic activations keep the weights pre-packed and the convs' padding materialised.
  int packed = 0, pads = 0;
  for (const auto& n : v.graph.nodes) {
    packed += n.op == OpKind::Conv && n.attrs.has("packed_a") ? 1 : 0;
    pads += n.op == OpKind::Pad ? 1 : 0;
  }
  EXPECT_EQ(packed, 4);
  EXPECT_EQ(pads, 3);
}

TEST(Dynamic, ScheduleKeepsSymbolicExtentsAndSizesBuffersForTheMaximum) {
  ir::Graph g;
  g.symbols["T"] = {2, 64, 1};
  ir::ValueId x = input(g, "x", {T, 8});
  set_outputs(g, {g.add(OpKind::Exp, {g.add(OpKind::Reshape, {x}, attrs({{"shape", ir::Shape{T * 8}}}))})});
  Schedule s = schedule(fuse(g), "s_");
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].loop_extents, (ir::Shape{T * 8}));
  for (const LogicalBuffer& b : s.buffers) EXPECT_EQ(b.size_bytes, 64 * 8 * 4);
  EXPECT_EQ(max_bindings(g), (ir::SymBindings{{"T", 64}}));
}

// `message` in the error's text, "declare the dim static" in its hint.
void expect_user_error(const ir::Graph& g, const std::string& message) {
  try {
    lower_graph(g, "v_", Options{});
    FAIL() << "expected a user error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("declare the dim static"), std::string::npos) << e.hint();
  }
}

TEST(Dynamic, UndeclaredOrUnboundedSymbolsAreUserErrors) {
  ir::Graph g;
  ir::ValueId x = input(g, "x", {T, 4});
  set_outputs(g, {g.add(OpKind::Exp, {x})});
  expect_user_error(g, "dynamic dim T of %0 (f32[T, 4]) has no declared range");
  g.symbols["T"] = {2, INT64_MAX, 1};
  expect_user_error(g, "needs a finite maximum");
  g.symbols["T"] = {1, 64, 1};
  expect_user_error(g, "includes size 0 or 1");
}

// A conv's weight sets its channels and window: symbolic there, it has no GEMM or loop plan.
TEST(Dynamic, ConvWithASymbolicWeightIsAUserError) {
  ir::Graph g;
  g.symbols["T"] = {2, 8, 1};
  ir::ValueId x = input(g, "x", {1, 3, 8, 8}), w = input(g, "w", {T, 3, 3, 3});
  set_outputs(g, {g.add(OpKind::Conv, {x, w}, conv_attrs({1, 1}, {0, 0}))});
  expect_user_error(g, "conv: the weight f32[T, 3, 3, 3] has dynamic dims");
}

}  // namespace
// The GPU's warp matmul (a warp per output over a long K) with a symbolic batch: one library,
// launched at several sizes (the emulated lanes against the reference; the CPU plan too).
TEST(Dynamic, WarpMatmulOverASymbolicBatch) {
  ir::Graph g;
  const SymExpr B = SymExpr::symbol("B");
  g.symbols["B"] = {2, 6, 1};
  ir::ValueId x = g.add_input("x", ir::TensorType{DType::f32, ir::Device{}, ir::Shape{B, 300}}, "L['x']");
  ir::ValueId w = weight(g, "w", {20, 300}, 1), bias = weight(g, "bias", {20}, 2);
  set_outputs(g, {g.add(OpKind::Gelu, {g.add(OpKind::Linear, {x, w, bias})}, attrs({{"approximate", std::string("none")}}))});
  expect_matches_at(g, {{{"B", 2}}, {{"B", 5}}, {{"B", 6}}});
}

// The GPU's reductions over static extents with a symbolic count of outputs (a dynamic batch's
// rows): a warp per row of 300 (the layer norm's and softmax's sums and maxima), a block per row
// of 20000, and a sum (keepdim) over 32 × 2048 positions per batch and an argmax over 65536 split
// across the grid (cuda-split-reductions, its parts counted at B's maximum); emulated at B = 2,
// 3, 5, 6.
TEST(Dynamic, GpuReductionsWithASymbolicCountOfRows) {
  ir::Graph g;
  g.symbols["B"] = {2, 6, 1};
  ir::ValueId x = input(g, "x", {B, 300}), y = input(g, "y", {B, 20000}), z = input(g, "z", {B, 32, 2048});
  ir::ValueId v = input(g, "v", {B, 65536});
  set_outputs(g, {g.add(OpKind::LayerNorm, {x}, attrs({{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}})),
                  g.add(OpKind::Softmax, {x}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::ReduceSum, {y}, reduce_attrs({1}, false)),
                  g.add(OpKind::ReduceSum, {z}, reduce_attrs({1, 2}, true)), g.add(OpKind::ArgMax, {v}, reduce_attrs({1}, false))});
  const std::multiset<std::string> launches = gpu_launches(g, "dyn_");
  EXPECT_EQ(launches.count("32*B"), 4u) << "the layer norm's two sums, the softmax's max and sum: a warp per row";
  EXPECT_EQ(launches.count("256*B"), 1u) << "y's rows: a block each";
  EXPECT_EQ(launches.count("1024*B"), 2u) << "z's and v's first reductions: 32 chunks of 2048 per batch, a warp each";
  EXPECT_EQ(launches.count("B"), 3u) << "z's partials; v's chunks' extremes gathered and their argmax, then the index: a thread per batch";
  expect_matches_at(g, {{{"B", 2}}, {{"B", 3}}, {{"B", 5}}, {{"B", 6}}});
}

// Reductions over a symbolic extent take warps and blocks too, chosen at the extent's maximum
// (the emitters' lane loops run to the size at run time): an attention softmax over a dynamic
// sequence (rows of T ≤ 512: a warp each, was a thread), a mean over T, an argmax over T, a sum
// over T × 4096 per batch (a block each); emulated at T = 2 (fewer positions than lanes), 3, 37
// and 512.
TEST(Dynamic, GpuReductionsOverASymbolicExtent) {
  ir::Graph g;
  g.symbols["T"] = {2, 512, 1};
  ir::ValueId scores = input(g, "scores", {4, T, T}), x = input(g, "x", {2, T, 4096}), h = input(g, "h", {3, T, 8});
  set_outputs(g, {g.add(OpKind::Softmax, {scores}, attrs({{"axis", int64_t{2}}})),
                  g.add(OpKind::Mean, {h}, reduce_attrs({1}, true)), g.add(OpKind::ArgMax, {h}, reduce_attrs({1}, false)),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({1, 2}, false))});
  const std::multiset<std::string> launches = gpu_launches(g, "symred_");
  EXPECT_EQ(launches.count("128*T"), 2u) << "the softmax's max and sum: a warp per row of 4 × T";
  EXPECT_EQ(launches.count("512"), 1u) << "the sum over T × 4096: a block per batch";
  EXPECT_EQ(launches.count("768"), 2u) << "the mean and the argmax over T: a warp per output of 3 × 8";
  expect_matches_at(g, {{{"T", 2}}, {{"T", 3}}, {{"T", 37}}, {{"T", 512}}});
}

}  // namespace aotrace::lowering
