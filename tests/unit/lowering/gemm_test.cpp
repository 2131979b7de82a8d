// The GEMM kernels (lowering/cpu/emit_gemm.cpp): matmul and conv big enough to be packed and
// register-blocked, with edge blocks in every dim (M, N not multiples of MR/NR/MC/NC; K over two
// KC panels), broadcast batch dims, transposed operands, conv stride/padding/dilation, and
// epilogues (bias, batch-norm-like scale and shift, activation, residual add) evaluated from the
// tile. Compared with the reference interpreter; the plan runner's parallel_for splits the
// tasks into chunks run out of order.
#include <limits>

#include <gtest/gtest.h>

#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::OpKind;
using Ints = std::vector<int64_t>;

ir::Attrs conv_attrs(Ints stride, Ints dilation, Ints low, Ints high) {
  ir::Attrs a;
  a.set("stride", std::move(stride)).set("dilation", std::move(dilation)).set("pad_low", std::move(low))
      .set("pad_high", std::move(high)).set("groups", int64_t{1});
  return a;
}

// Each test compares on every vector width this machine has (expect_on_every_cpu): 4 lanes
// (microkernels of 3 rows), 8 (6 rows), 16 (two A panels, 12 rows, by two B panels per call,
// where both are there: A read in place takes 12 rows only where all 12 exist).
TEST(Gemm, MatmulEdgeBlocksInEveryDimAndTwoKPanels) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({150, 301}), "L['a']");  // M: 72 + 72 + 6; K: 151 + 150
  ir::ValueId b = g.add_input("b", f32({301, 290}), "L['b']");  // N: 128 + 128 + 34
  set_outputs(g, {g.add(OpKind::Matmul, {a, b})});
  EXPECT_EQ(expect_on_every_cpu(g).num_kernels(), 1);
}

// M = 26 (6 + 6 + 6 + 6 + 2: two pairs of A panels, then a lone partial one) and M = 20 read in
// place (rows 12..19: a pair whose second panel is partial, so two single calls).
TEST(Gemm, PairsOfAPanelsAndTheirRemainders) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({20, 40}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({40, 50}), "L['b']");
  ir::ValueId w = weight(g, "w", {3, 26, 40}, 5);  // pre-packed: A panels per batch
  ir::ValueId x = g.add_input("x", f32({3, 40, 35}), "L['x']");
  set_outputs(g, {g.add(OpKind::Matmul, {a, b}), g.add(OpKind::Relu, {g.add(OpKind::Matmul, {w, x})})});
  expect_on_every_cpu(g);
}

// A matmul without an epilogue copies its tile into the output row by row, and a transpose is
// a copy kernel: both stay vectorised loops. LLVM's loop idioms would make them calls to the C
// library's memcpy, which the kernel library imports unversioned, so it bound to glibc's oldest
// symbol and its SSE2 copy (cpu/target.cpp: no-builtin-*).
TEST(Gemm, KernelsCopyWithoutCallingTheCLibrary) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({96, 128}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({128, 200}), "L['b']");
  set_outputs(g, {g.add(OpKind::Matmul, {a, b}), g.add(OpKind::Permute, {b}, perm_attrs({1, 0})),
                  g.add(OpKind::Mul, {a, g.constant(0, ir::DType::f32)})});
  for (const char* cpu : {"x86-64-v2", "x86-64-v3", "x86-64-v4"}) {
    Options options;
    options.cpu = cpu;
    LoweredVariant lowered = lower_graph(g, "copy_", options);
    const std::string object(lowered.object.begin(), lowered.object.end());
    for (const char* f : {"memcpy", "memmove", "memset"})
      EXPECT_EQ(object.find(std::string(1, '\0') + f + '\0'), std::string::npos) << "the " << cpu << " object references " << f;
  }
  expect_on_every_cpu(g);
}

TEST(Gemm, TasksOfSeveralRowBlocks) {
  ir::Graph g;
  // K over 64, so that N keeps blocks of 128 columns (4 of them) and a task gets two MC blocks.
  ir::ValueId a = g.add_input("a", f32({300, 80}), "L['a']");  // 5 MC blocks, 2 per task: 144 144 12
  ir::ValueId b = g.add_input("b", f32({80, 400}), "L['b']");
  set_outputs(g, {g.add(OpKind::Matmul, {a, b})});
  expect_on_every_cpu(g);
}

// K of 64 or less and N over 128: blocks of 256 columns (the tile then holds at most two MC
// blocks per task); N = 600 ends in a partial block of 88.
TEST(Gemm, SmallKTakesWideColumnBlocks) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({160, 48}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({48, 600}), "L['b']");
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Matmul, {a, b})})});
  expect_on_every_cpu(g);
}

TEST(Gemm, BatchedBroadcastMatmulWithEpilogue) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({3, 1, 20, 30}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({4, 30, 17}), "L['b']");
  ir::ValueId r = g.add_input("r", f32({17}), "L['r']");
  ir::ValueId mm = g.add(OpKind::Matmul, {a, b});
  set_outputs(g, {g.add(OpKind::Tanh, {g.add(OpKind::Add, {mm, r})})});
  EXPECT_EQ(expect_on_every_cpu(g).num_kernels(), 1);
}

TEST(Gemm, LinearWithTransposedWeightBiasAndRelu) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 9, 64}), "L['x']");
  ir::ValueId w = weight(g, "w", {50, 64}, 3), bias = weight(g, "b", {50}, 4);
  ir::ValueId mm = g.add(OpKind::Matmul, {x, g.add(OpKind::Permute, {w}, perm_attrs({1, 0}))});
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {mm, bias})})});
  EXPECT_EQ(expect_on_every_cpu(g).num_kernels(), 1);
}

// Attention's matmuls read their operands through views of materialised linear outputs: q and
// k^T (a transposed B: strided loads), v (a row-major B: vector loads, 20 = 16 + 4 columns), the scores read in place
// as A (direct A rows, 10 = 6 + 4: a partial row panel), and the heads merged back through a
// permute + reshape that is not affine (packed element by element).
TEST(Gemm, AttentionOperandsAreStridedViews) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 10, 80}), "L['x']");
  auto heads = [&](const std::string& name, uint32_t seed) {  // [2, 4, 10, 20]
    ir::ValueId w = weight(g, name, {80, 80}, seed);
    ir::ValueId y = g.add(OpKind::Matmul, {x, g.add(OpKind::Permute, {w}, perm_attrs({1, 0}))});
    ir::Attrs shape;
    shape.set("shape", ir::Shape{2, 10, 4, 20});
    return g.add(OpKind::Permute, {g.add(OpKind::Reshape, {y}, shape)}, perm_attrs({0, 2, 1, 3}));
  };
  ir::ValueId q = heads("wq", 21), k = heads("wk", 22), v = heads("wv", 23);
  ir::ValueId scores = g.add(OpKind::Matmul, {q, g.add(OpKind::Permute, {k}, perm_attrs({0, 1, 3, 2}))});
  ir::ValueId ctx = g.add(OpKind::Matmul, {scores, v});
  ir::Attrs merged;
  merged.set("shape", ir::Shape{2, 10, 80});
  ir::ValueId back = g.add(OpKind::Reshape, {g.add(OpKind::Permute, {ctx}, perm_attrs({0, 2, 1, 3}))}, merged);
  ir::ValueId wo = weight(g, "wo", {80, 80}, 24);
  set_outputs(g, {g.add(OpKind::Matmul, {back, g.add(OpKind::Permute, {wo}, perm_attrs({1, 0}))})});
  // Four chained products of random values cancel: f32 rounding reaches 3e-4 of the outputs
  // (a wrong element or block is off by O(1)).
  expect_on_every_cpu(g, -1, 1, Tolerance{1e-3, 1e-3});
}

TEST(Gemm, ConvStridePaddingDilationBiasScaleShiftReluAndResidual) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 5, 17, 19}), "L['x']");
  ir::ValueId w = weight(g, "w", {13, 5, 3, 3}, 5), bias = weight(g, "b", {13}, 6);
  ir::ValueId scale = weight(g, "scale", {13, 1, 1}, 7), shift = weight(g, "shift", {13, 1, 1}, 8);
  // Output 2 × 13 × 9 × 17: stride (2, 1), padding (1, 1), dilation (1, 2).
  ir::ValueId conv = g.add(OpKind::Conv, {x, w, bias}, conv_attrs({2, 1}, {1, 2}, {1, 1}, {1, 1}));
  ir::ValueId res = g.add_input("res", f32({2, 13, 9, 17}), "L['res']");
  ir::ValueId bn = g.add(OpKind::Add, {g.add(OpKind::Mul, {conv, scale}), shift});
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {bn, res})})});
  // The padded input, then one kernel: conv with bias, scale, shift, residual and relu.
  EXPECT_EQ(expect_on_every_cpu(g).num_kernels(), 2);
}

// f16 and bf16 GEMMs take the packed path too, multiplying in f32: operands widened as they
// are packed (a row-major B a vector of bits at a time, a transposed one element by element,
// A never read in place: its panels 16 steps of K at a time, transposed in registers), weights
// kept in their type: a matmul's B pre-packed as bf16 K pairs (Gemm.Bf16WeightsMultiplyInKPairs)
// or f16 panels (Gemm.F16WeightsArePackedAsF16Panels), a conv's W read by its rows
// (Gemm.Bf16ConvsMultiplyTheirInputInKPairs), sums rounded to the type before the epilogue. Edge
// blocks in every dim, a K of two panels, a linear layer with bias and ReLU, a conv with bias.
TEST(Gemm, HalfOperandsAreWidenedAsTheyArePacked) {
  for (ir::DType t : {ir::DType::f16, ir::DType::bf16}) {
    SCOPED_TRACE(ir::dtype_name(t));
    ir::Graph g;
    ir::ValueId a = g.add_input("a", typed(t, {149, 301}), "L['a']");  // a partial panel; K: 16s and 13 more
    ir::ValueId b = g.add_input("b", typed(t, {301, 290}), "L['b']");
    ir::ValueId bt = g.add_input("bt", typed(t, {40, 301}), "L['bt']");
    ir::ValueId x = g.add_input("x", typed(t, {2, 9, 64}), "L['x']");
    ir::ValueId w = typed_weight(g, t, "w", {50, 64}, 3), bias = typed_weight(g, t, "bias", {50}, 4);
    ir::ValueId img = g.add_input("img", typed(t, {2, 5, 17, 19}), "L['img']");
    ir::ValueId cw = typed_weight(g, t, "cw", {13, 5, 3, 3}, 5), cb = typed_weight(g, t, "cb", {13}, 6);
    set_outputs(g, {g.add(OpKind::Matmul, {a, b}), g.add(OpKind::Matmul, {a, transpose(g, bt)}),
                    g.add(OpKind::Relu, {g.add(OpKind::Add, {g.add(OpKind::Matmul, {x, transpose(g, w)}), bias})}),
                    g.add(OpKind::Conv, {img, cw, cb}, conv_attrs({2, 1}, {1, 2}, {1, 1}, {1, 1}))});
    LoweredVariant lowered = expect_on_every_cpu(g);
    EXPECT_EQ(lowered.num_kernels(), 5);  // three matmuls, the conv's padded input, the conv
    std::vector<std::string> panels;
    for (const auto& weight : lowered.graph.weights)
      if (weight.name.find(".packed_") != std::string::npos) panels.push_back(lowered.graph.type(weight.value).str());
    // w's B panels in its type; no A panels for cw (its rows, as they are)
    EXPECT_EQ(panels, std::vector<std::string>{t == ir::DType::bf16 ? "bf16[4, 32, 16, 2]" : "f16[4, 64, 16]"});
  }
}

// `g` on `inputs` against the reference (this CPU's default library and, where the CPU has
// AVX-512, the x86-64-v4 one, which takes vdpbf16ps where CPUID says so), then what the x86-64-v3
// and -v4 objects hold: the dot's microkernels and CPUID's answer only in v4, microkernels that
// widen pairs (".pairs") in both where `widened`, in neither otherwise.
void expect_bf16_dot(const ir::Graph& g, const std::vector<ir::HostTensor>& inputs, bool widened) {
  expect_outputs_match(g, inputs);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    Options v4;
    v4.cpu = "x86-64-v4";
    expect_outputs_match(g, inputs, std::nullopt, v4);
  }
  for (const char* cpu : {"x86-64-v3", "x86-64-v4"}) {
    Options options;
    options.cpu = cpu;
    LoweredVariant v = lower_graph(g, "dot_", options);
    const std::string object(v.object.begin(), v.object.end());
    const bool v4 = std::string(cpu) == "x86-64-v4";
    EXPECT_EQ(object.find(".pairs") != std::string::npos, widened) << cpu;
    EXPECT_EQ(object.find(".bf16dot") != std::string::npos, v4) << cpu;
    EXPECT_EQ(object.find("aotrace.avx512_bf16") != std::string::npos, v4) << cpu;
  }
}

// Linear layers (bias, ReLU) of `t` weights [40, K] for K = 9, 64 and 301 (below one KC panel,
// odd, across two: 152 + 149), each applied to activations [rows..., K] for each of `shapes`
// (inputs in that order).
ir::Graph linear_layers(ir::DType t, const std::vector<std::vector<int64_t>>& shapes) {
  ir::Graph g;
  std::vector<ir::ValueId> outputs;
  int seed = 1;
  for (int64_t k : {9, 64, 301}) {
    const std::string name = std::to_string(k);
    ir::ValueId w = typed_weight(g, t, "w" + name, {40, k}, seed++), bias = typed_weight(g, t, "b" + name, {40}, seed++);
    for (std::vector<int64_t> rows : shapes) {
      const std::string x_name = "x" + name + "_" + std::to_string(rows.size());
      rows.push_back(k);
      ir::ValueId x = g.add_input(x_name, typed(t, rows), "L['" + x_name + "']");
      outputs.push_back(g.add(OpKind::Relu, {g.add(OpKind::Add, {g.add(OpKind::Matmul, {x, transpose(g, w)}), bias})}));
    }
  }
  set_outputs(g, outputs);
  return g;
}

// The types of `lowered`'s packed B weights, in order.
std::vector<std::string> packed_b_types(const LoweredVariant& lowered) {
  std::vector<std::string> packed;
  for (const auto& weight : lowered.graph.weights)
    if (weight.name.find(".packed_b") != std::string::npos) packed.push_back(lowered.graph.type(weight.value).str());
  return packed;
}

// A bf16 matmul's weight B stays bf16 (half the bytes of f32 panels), packed in K pairs
// ([⌈N/16⌉, ⌈K/2⌉, 16, 2], zero after an odd K), the layout of AVX512-BF16's vdpbf16ps: the
// x86-64-v4 library multiplies A's rows, read in place a pair of K at a time, by it where CPUID
// says the CPU has the instruction, and widens the pairs to f32 otherwise, as the x86-64-v2 and
// -v3 libraries always do. K odd (the last pair half used) below one KC panel and across two
// (152 + 149), and even; N and M with partial panels; a batched activation, bias and ReLU.
TEST(Gemm, Bf16WeightsMultiplyInKPairs) {
  ir::Graph g = linear_layers(ir::DType::bf16, {{2, 75}});
  EXPECT_EQ(packed_b_types(expect_on_every_cpu(g)),
            (std::vector<std::string>{"bf16[3, 5, 16, 2]", "bf16[3, 32, 16, 2]", "bf16[3, 151, 16, 2]"}));
  // An odd K's last pair reads only its first element of A: the next (the next row's first, an
  // infinity here) must not reach the sum, even times B's zero.
  std::vector<ir::HostTensor> inputs = random_inputs(g, 2, -1, 1);
  inputs[0].set(7 * 9, std::numeric_limits<double>::infinity());  // x9[0, 7, 0]
  expect_bf16_dot(g, inputs, true);
}

// An f16 matmul's weight B stays f16: panels of the f32 layout ([⌈N/16⌉, K, 16]) at half the
// bytes. Few rows (4: one call of A panels per B panel) take microkernels that widen them as
// they load them (".f16": F16C on x86-64-v3/-v4, integer code on x86-64-v2, never a libcall);
// more rows (2 × 75, widen_b) widen each task's block once into f32 panels. K below one KC
// panel, odd, and across two (152 + 149); N and M with partial panels; bias and ReLU.
TEST(Gemm, F16WeightsArePackedAsF16Panels) {
  ir::Graph g = linear_layers(ir::DType::f16, {{4}, {2, 75}});
  // Each weight's panels once per matmul (the bundle stores a source once).
  EXPECT_EQ(packed_b_types(expect_on_every_cpu(g)), (std::vector<std::string>{"f16[3, 9, 16]", "f16[3, 9, 16]", "f16[3, 64, 16]", "f16[3, 64, 16]",
                                              "f16[3, 301, 16]", "f16[3, 301, 16]"}));
  for (const char* cpu : {"x86-64-v2", "x86-64-v3", "x86-64-v4"}) {
    Options options;
    options.cpu = cpu;
    options.dump = {"cpu-plan"};
    ::testing::internal::CaptureStderr();
    LoweredVariant v = lower_graph(g, "f16_", options);
    const std::string plan = ::testing::internal::GetCapturedStderr();
    const std::string object(v.object.begin(), v.object.end());
    EXPECT_NE(object.find(".f16"), std::string::npos) << cpu;
    EXPECT_EQ(object.find("__extendhfsf2"), std::string::npos) << cpu;  // no libcalls
    int in_kernel = 0, widened = 0;
    for (size_t at = plan.find(" b_f16"); at != std::string::npos; at = plan.find(" b_f16", at + 1))
      ++(plan.compare(at, 14, " b_f16 widen_b") == 0 ? widened : in_kernel);
    EXPECT_EQ(in_kernel, 3) << plan;
    EXPECT_EQ(widened, 3) << plan;
  }
}

// A bf16 product of two activations (attention's q·kᵀ and p·v) packs its B in K pairs as it
// runs, for vdpbf16ps where the CPU has it (the x86-64-v4 library asks CPUID), as f32 panels
// elsewhere: transposed Bs (element by element) with K = 64 and K = 45, a row-major one
// (vectors) with K = 45; an odd K's last pair has a zero second half, never a stale row (the
// infinity in v's row 43 would make NaN of finite outputs) nor the next row's first element.
TEST(Gemm, Bf16ActivationProductsPackBInKPairs) {
  const ir::DType t = ir::DType::bf16;
  ir::Graph g;
  ir::ValueId q = g.add_input("q", typed(t, {2, 37, 64}), "L['q']");
  ir::ValueId k = g.add_input("k", typed(t, {2, 45, 64}), "L['k']");
  ir::ValueId p = g.add_input("p", typed(t, {2, 37, 45}), "L['p']");
  ir::ValueId v = g.add_input("v", typed(t, {2, 45, 33}), "L['v']");
  ir::ValueId kt = g.add_input("kt", typed(t, {2, 40, 45}), "L['kt']");
  ir::Attrs swap;
  swap.set("perm", std::vector<int64_t>{0, 2, 1});
  set_outputs(g, {g.add(OpKind::Matmul, {q, g.add(OpKind::Permute, {k}, swap)}),
                  g.add(OpKind::Matmul, {p, v}), g.add(OpKind::Matmul, {p, g.add(OpKind::Permute, {kt}, swap)})});
  expect_on_every_cpu(g);
  std::vector<ir::HostTensor> inputs = random_inputs(g, 4, -1, 1);
  inputs[3].set(43 * 33 + 32, std::numeric_limits<double>::infinity());  // v[0, 43, 32]
  // kt[0, 5, 0], right after row 4's last element: an odd K's last pair of column 4 never reads it.
  inputs[4].set(5 * 45, std::numeric_limits<double>::infinity());
  expect_bf16_dot(g, inputs, false);  // B packed here is never widened from pairs
}

// A bf16 conv whose input is packed as the kernel runs (wide, gathered, merged) keeps its W as it
// is (no A panels: its rows are K long) and packs its im2col in K pairs for vdpbf16ps where the
// CPU has it (the x86-64-v4 library asks CPUID); elsewhere the im2col is packed as f32 panels
// and W's rows widened as a bf16 matmul's A. K odd (3·3·3 = 27: the last pair's second half
// zero; 23 on whole rows), across two KC panels (301 = 152 + 149: an odd last one), small
// images at batch 3 merged, bias and ReLU.
TEST(Gemm, Bf16ConvsMultiplyTheirInputInKPairs) {
  const ir::DType t = ir::DType::bf16;
  ir::Graph g;
  ir::ValueId odd = g.add_input("odd", typed(t, {1, 3, 33, 35}), "L['odd']");      // gathered, stride 2
  ir::ValueId deep = g.add_input("deep", typed(t, {1, 301, 10, 12}), "L['deep']");  // 1×1, wide
  ir::ValueId small = g.add_input("small", typed(t, {3, 16, 5, 5}), "L['small']"); // merged
  ir::ValueId rows = g.add_input("rows", typed(t, {1, 23, 9, 20}), "L['rows']");   // 1×1, wide
  const ir::Attrs stride2 = conv_attrs({2, 2}, {1, 1}, {0, 0}, {0, 0}), stride1 = conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0});
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Conv, {odd, typed_weight(g, t, "w1", {40, 3, 3, 3}, 1),
                                                             typed_weight(g, t, "b1", {40}, 2)}, stride2)}),
                  g.add(OpKind::Conv, {deep, typed_weight(g, t, "w2", {24, 301, 1, 1}, 3)}, stride1),
                  g.add(OpKind::Conv, {small, typed_weight(g, t, "w3", {20, 16, 3, 3}, 4)}, stride1),
                  g.add(OpKind::Conv, {rows, typed_weight(g, t, "w4", {40, 23, 1, 1}, 5), typed_weight(g, t, "b4", {40}, 6)},
                        stride1)});
  LoweredVariant lowered = expect_on_every_cpu(g);
  for (const auto& weight : lowered.graph.weights) EXPECT_EQ(weight.name.find(".packed"), std::string::npos) << "weight " << weight.name;
  // An infinity that only k = 25 (channel 2, row 2, column 1) of the last output column reads
  // (odd[0, 2, 32, 33]): the pair after it holds k = 26 and a zero, never a stale k = 25 row
  // (infinity times A's zero half would be NaN in finite outputs).
  std::vector<ir::HostTensor> inputs = random_inputs(g, 3, -1, 1);
  inputs[0].set((2 * 33 + 32) * 35 + 33, std::numeric_limits<double>::infinity());
  expect_bf16_dot(g, inputs, false);  // the im2col is never widened from pairs
}

// f16 and bf16 convs read their input as f32 ones do, widening what they load: a 1×1 at stride
// 1 on whole rows (wide), an unpadded 3×3 at stride 2 (gathered: every other element of a
// vector) and at stride 1 (adjacent columns, per element across rows), small images at batch 3
// folded into the columns (merged), with bias, scale, shift, residual and ReLU.
TEST(Gemm, HalfConvsWidenTheirInputAsTheyLoadIt) {
  for (ir::DType t : {ir::DType::f16, ir::DType::bf16}) {
    SCOPED_TRACE(ir::dtype_name(t));
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {3, 24, 7, 7}), "L['x']");
    ir::ValueId res = g.add_input("res", typed(t, {3, 40, 7, 7}), "L['res']");
    ir::ValueId conv = g.add(OpKind::Conv, {x, typed_weight(g, t, "w", {40, 24, 1, 1}, 1), typed_weight(g, t, "b", {40}, 2)},
                             conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}));
    ir::ValueId bn = g.add(OpKind::Add, {g.add(OpKind::Mul, {conv, typed_weight(g, t, "scale", {40, 1, 1}, 3)}),
                                         typed_weight(g, t, "shift", {40, 1, 1}, 4)});
    ir::ValueId y = g.add_input("y", typed(t, {3, 16, 11, 9}), "L['y']");
    ir::ValueId z = g.add_input("z", typed(t, {2, 8, 6, 10}), "L['z']");
    ir::ValueId wide = g.add_input("wide", typed(t, {1, 8, 20, 21}), "L['wide']");
    set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {bn, res})}),
                    g.add(OpKind::Conv, {y, typed_weight(g, t, "w2", {12, 16, 3, 3}, 5)}, conv_attrs({2, 2}, {1, 1}, {0, 0}, {0, 0})),
                    g.add(OpKind::Conv, {z, typed_weight(g, t, "w3", {9, 8, 3, 3}, 6)}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0})),
                    g.add(OpKind::Conv, {wide, typed_weight(g, t, "w4", {10, 8, 1, 1}, 7)}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}))});
    expect_on_every_cpu(g);
  }
}

// The plan `--dump cpu-plan` prints for `g` (the default CPU's), and a check that it has each
// of `parts`.
std::string cpu_plan(const ir::Graph& g) {
  Options options;
  options.dump = {"cpu-plan"};
  ::testing::internal::CaptureStderr();
  lower_graph(g, "plan_", options);
  return ::testing::internal::GetCapturedStderr();
}
void expect_in_plan(const std::string& plan, std::initializer_list<const char*> parts) {
  for (const char* part : parts) EXPECT_NE(plan.find(part), std::string::npos) << part << " in\n" << plan;
}

ir::Attrs grouped(ir::Attrs a, int64_t groups) {
  a.set("groups", groups);
  return a;
}

// A grouped conv (resnext's 32 groups of 4 channels, regnet's of 8) is one GEMM per image and
// group, its W pre-packed per group ([groups, panels, K, MR]): 3×3 padded (wide, bias, batch
// norm, ReLU), a partial A panel per group (10 rows), stride 2 and dilation 2 (gathered), small
// images at batch 3 (merged into N), 1×1 (wide), K over two KC panels (36·9 = 324), a depthwise
// conv that keeps its own kernel, and f16 and bf16 grouped convs whose W is read by its rows.
TEST(Gemm, GroupedConvsAreAGemmPerGroup) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 16, 9, 11}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({1, 12, 17, 15}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({3, 32, 5, 5}), "L['z']");
  ir::ValueId u = g.add_input("u", f32({1, 72, 6, 7}), "L['u']");
  ir::ValueId conv = g.add(OpKind::Conv, {x, weight(g, "w1", {24, 4, 3, 3}, 1), weight(g, "b1", {24}, 2)},
                           grouped(conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}), 4));
  ir::ValueId bn = g.add(OpKind::Add, {g.add(OpKind::Mul, {conv, weight(g, "scale", {24, 1, 1}, 3)}), weight(g, "shift", {24, 1, 1}, 4)});
  set_outputs(g, {g.add(OpKind::Relu, {bn}),
                  g.add(OpKind::Conv, {y, weight(g, "w2", {20, 6, 3, 3}, 5)}, grouped(conv_attrs({2, 2}, {2, 2}, {0, 0}, {0, 0}), 2)),
                  g.add(OpKind::Conv, {z, weight(g, "w3", {32, 4, 3, 3}, 6)}, grouped(conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}), 8)),
                  g.add(OpKind::Conv, {z, weight(g, "w4", {16, 16, 1, 1}, 7)}, grouped(conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}), 2)),
                  g.add(OpKind::Conv, {u, weight(g, "w5", {14, 36, 3, 3}, 8)}, grouped(conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}), 2)),
                  g.add(OpKind::Conv, {z, weight(g, "w6", {32, 1, 3, 3}, 9)}, grouped(conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}), 32))});
  LoweredVariant lowered = expect_on_every_cpu(g);
  std::vector<std::string> panels;
  for (const auto& w : lowered.graph.weights)
    if (w.name.find(".packed_a") != std::string::npos) panels.push_back(lowered.graph.type(w.value).str());
  EXPECT_EQ(panels, (std::vector<std::string>{"f32[4, 1, 36, 6]", "f32[2, 2, 54, 6]", "f32[8, 1, 36, 6]",
                                               "f32[2, 2, 16, 6]", "f32[2, 2, 324, 6]"}));
  const std::string plan = cpu_plan(g);
  expect_in_plan(plan, {"batches 8 groups 4 m 6 n 117 k 36", "batches 2 groups 2 m 10 n 42 k 54",
                        "batches 8 groups 8 m 4 n 27 k 36", "batches 2 groups 2 m 8 n 75 k 16",
                        "batches 2 groups 2 m 7 n 54 k 324", "depthwise conv 3x3"});
  for (ir::DType t : {ir::DType::f16, ir::DType::bf16}) {
    SCOPED_TRACE(ir::dtype_name(t));
    ir::Graph h;
    ir::ValueId hx = h.add_input("x", typed(t, {2, 16, 9, 11}), "L['x']");
    ir::ValueId hz = h.add_input("z", typed(t, {3, 32, 5, 5}), "L['z']");
    set_outputs(h, {h.add(OpKind::Conv, {hx, typed_weight(h, t, "w1", {20, 4, 3, 3}, 1), typed_weight(h, t, "b1", {20}, 2)},
                          grouped(conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}), 4)),
                    h.add(OpKind::Conv, {hz, typed_weight(h, t, "w3", {32, 4, 3, 3}, 6)},
                          grouped(conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}), 8))});
    expect_on_every_cpu(h);
  }
}

// A bf16 matmul's sums are rounded before its epilogue reads them, as the graph rounds the
// matmul's bf16 result: 256 + 0.5 is 256 in bf16 (to even), so minus 256 is 0, not 0.5.
TEST(Gemm, HalfSumsAreRoundedBeforeTheEpilogue) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", typed(ir::DType::bf16, {16, 16}), "L['a']");
  ir::ValueId b = g.add_input("b", typed(ir::DType::bf16, {16, 16}), "L['b']");
  set_outputs(g, {g.add(OpKind::Sub, {g.add(OpKind::Matmul, {a, b}), g.constant(256, ir::DType::bf16)})});
  ir::HostTensor x = ir::HostTensor::zeros(ir::DType::bf16, {16, 16}), ones = ir::HostTensor::zeros(ir::DType::bf16, {16, 16});
  for (int64_t i = 0; i < 16; ++i) {
    x.set(i * 16, 256);
    x.set(i * 16 + 1, 0.5);
  }
  for (int64_t i = 0; i < 256; ++i) ones.set(i, 1);
  const std::vector<ir::HostTensor> inputs{x, ones};
  EXPECT_EQ(ir::evaluate(g, inputs)[0].get(0), 0.0);
  expect_outputs_match(g, inputs, Tolerance{0, 0});
}

// Small images at batch > 1 fold the batch into the GEMM's columns (GemmPlan::merged): a 1×1
// conv with bias, scale, shift, residual and ReLU at 7×7 (49 columns per image: blocks span
// images); an unpadded 3×3 at stride 2 (gathered columns) and at stride 1 (vector-loaded panels
// within an image, per-element ones across images).
TEST(Gemm, SmallImagesFoldTheBatchIntoColumns) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 24, 7, 7}), "L['x']");
  ir::ValueId res = g.add_input("res", f32({3, 40, 7, 7}), "L['res']");
  ir::ValueId conv = g.add(OpKind::Conv, {x, weight(g, "w", {40, 24, 1, 1}, 1), weight(g, "b", {40}, 2)},
                           conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}));
  ir::ValueId bn = g.add(OpKind::Add, {g.add(OpKind::Mul, {conv, weight(g, "scale", {40, 1, 1}, 3)}), weight(g, "shift", {40, 1, 1}, 4)});
  ir::ValueId y = g.add_input("y", f32({3, 16, 11, 9}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({2, 8, 6, 10}), "L['z']");
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {bn, res})}),
                  g.add(OpKind::Conv, {y, weight(g, "w2", {12, 16, 3, 3}, 5)}, conv_attrs({2, 2}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {z, weight(g, "w3", {9, 8, 3, 3}, 6)}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}))});
  expect_on_every_cpu(g);
}

// Strided convs whose panels of 16 output columns lie in one row are packed as one vector of
// 16·s elements (s = 2..4, equal strides): output rows of 17-34 columns (panels inside a row
// and across rows), dilation, padding (materialised), a 1×1 stride-2 conv whose last panel
// would read past the buffer's end (the per-element path), unequal strides and stride 5 (never).
TEST(Gemm, StridedConvRowsReadAsOneVector) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({2, 5, 9, 33}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({1, 4, 37, 70}), "L['b']");
  ir::ValueId c = g.add_input("c", f32({1, 3, 20, 100}), "L['c']");
  ir::ValueId d = g.add_input("d", f32({1, 6, 8, 130}), "L['d']");
  ir::ValueId e = g.add_input("e", f32({1, 3, 31, 64}), "L['e']");
  set_outputs(g, {g.add(OpKind::Conv, {a, weight(g, "w1", {7, 5, 1, 1}, 21)}, conv_attrs({2, 2}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {b, weight(g, "w2", {9, 4, 3, 3}, 22)}, conv_attrs({2, 2}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {b, weight(g, "w3", {5, 4, 3, 3}, 23)}, conv_attrs({2, 2}, {2, 2}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {c, weight(g, "w4", {6, 3, 3, 3}, 24)}, conv_attrs({3, 3}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {d, weight(g, "w5", {8, 6, 1, 1}, 25)}, conv_attrs({4, 4}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {e, weight(g, "w6", {16, 3, 7, 7}, 26)}, conv_attrs({2, 2}, {1, 1}, {3, 3}, {3, 3})),
                  g.add(OpKind::Conv, {b, weight(g, "w7", {6, 4, 3, 3}, 27)}, conv_attrs({2, 1}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {d, weight(g, "w8", {5, 6, 1, 1}, 28)}, conv_attrs({5, 5}, {1, 1}, {0, 0}, {0, 0}))});
  expect_on_every_cpu(g);
}

TEST(Gemm, ConvRowsWiderThanABlockAndPointwise) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 8, 3, 150}), "L['x']");
  ir::ValueId w3 = weight(g, "w3", {7, 8, 3, 3}, 9), w1 = weight(g, "w1", {10, 8, 1, 1}, 10);
  set_outputs(g, {g.add(OpKind::Conv, {x, w3}, conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1})),
                  g.add(OpKind::Conv, {x, w1}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}))});
  expect_on_every_cpu(g);
}

// Not a GEMM (one row): the per-element path, its row cut into chunks across tasks, with the
// reduction over K vectorised (reassociated); and a reduce_sum over a long row.
TEST(Gemm, Batch1LinearAndLongSumSplitTheirRow) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 200}), "L['x']");
  ir::ValueId w = weight(g, "w", {300, 200}, 13);
  ir::ValueId y = g.add_input("y", f32({2, 5000}), "L['y']");
  ir::Attrs sum;
  sum.set("axes", std::vector<int64_t>{1}).set("keepdim", int64_t{0});
  set_outputs(g, {g.add(OpKind::Matmul, {x, g.add(OpKind::Permute, {w}, perm_attrs({1, 0}))}),
                  g.add(OpKind::ReduceSum, {y}, sum)});
  expect_on_every_cpu(g);
}

// A stride-1 conv of a materialised input is computed on the input's rows (wide) where they
// are the output's (1×1), the output's rows are shorter than a panel, or fewer than 16 rows
// share each packed column; output rows of 16 or more, in longer input rows (padding, a 3×3
// window, dilation), with 16 rows or more, are gathered instead.
TEST(Gemm, LongOutputRowsOfLongerInputRowsAreGathered) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 6, 20, 24}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({2, 6, 9, 10}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({1, 12, 20, 24}), "L['z']");
  ir::ValueId w = weight(g, "w", {20, 6, 3, 3}, 1);
  set_outputs(g, {g.add(OpKind::Conv, {x, w}, conv_attrs({1, 1}, {2, 2}, {2, 2}, {2, 2})),
                  g.add(OpKind::Conv, {x, w, weight(g, "b", {20}, 2)}, conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1})),
                  g.add(OpKind::Conv, {y, w}, conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1})),
                  g.add(OpKind::Conv, {x, weight(g, "w10", {10, 6, 3, 3}, 4)}, conv_attrs({1, 1}, {1, 1}, {1, 1}, {1, 1})),
                  g.add(OpKind::Conv, {z, weight(g, "w1", {10, 12, 1, 1}, 3)}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}))});
  expect_on_every_cpu(g);
  const std::string plan = cpu_plan(g);
  const std::string gathered = "batches 1 m 20 n 480 k 54 | mr 6 nr 16 mc 72 kc 54 mt 72 nc 240 | tasks 2 gathered\n";
  const size_t first = plan.find(gathered);
  EXPECT_NE(first, std::string::npos) << plan;
  EXPECT_NE(plan.find(gathered, first + 1), std::string::npos) << plan;  // dilation 2, and padding 1
  expect_in_plan(plan, {"batches 2 m 20 n 108 k 54 | mr 6 nr 16 mc 72 kc 54 mt 72 nc 252 | tasks 2 wide\n",
                        "batches 1 m 10 n 520 k 54 | mr 6 nr 16 mc 72 kc 54 mt 72 nc 234 | tasks 3 wide\n",
                        "batches 1 m 10 n 480 k 12 | mr 6 nr 16 mc 72 kc 12 mt 72 nc 240 | tasks 2 wide\n"});
}

TEST(Gemm, NarrowProductsFromFourColumns) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 20, 2, 2}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({1, 12, 5, 5}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({2, 20, 1, 5}), "L['z']");
  ir::ValueId a = g.add_input("a", f32({40, 64}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({64, 5}), "L['b']");
  ir::ValueId t = g.add_input("t", f32({1, 20, 1, 3}), "L['t']");
  ir::ValueId w1 = weight(g, "w1", {30, 20, 1, 1}, 1);
  set_outputs(g, {g.add(OpKind::Conv, {x, w1, weight(g, "b1", {30}, 2)}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {y, weight(g, "w2", {9, 12, 3, 3}, 3)}, conv_attrs({2, 2}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Conv, {z, w1}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0})),
                  g.add(OpKind::Matmul, {a, b}),
                  g.add(OpKind::Matmul, {a, transpose(g, weight(g, "w3", {7, 64}, 4))}),
                  g.add(OpKind::Conv, {t, w1}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0}))});
  expect_on_every_cpu(g);
  const std::string plan = cpu_plan(g);
  expect_in_plan(plan, {"gemm conv batches 1 m 30 n 4 k 20", "gemm conv batches 1 m 9 n 4 k 108",
                        "gemm conv batches 1 m 30 n 10 k 20", "gemm matmul batches 1 m 40 n 5 k 64",
                        "gemm matmul batches 1 m 40 n 7 k 64"});
  EXPECT_EQ(plan.find(" n 3 "), std::string::npos) << plan;
}

// bf16 GEMMs of 2×2 images (rows of 2 in the epilogue) compile without LLVM's warnings that a
// loop asked to be vectorised was not (row_loop asks only for rows of 4 or more): a strided 1×1
// conv with batch norm added to another's (regnet's last stage at 64×64), a grouped conv.
TEST(Gemm, NarrowHalfProductsCompileQuietly) {
  ir::Graph g;
  const ir::DType t = ir::DType::bf16;
  ir::ValueId x = g.add_input("x", typed(t, {1, 16, 4, 4}), "L['x']");
  ir::ValueId y = g.add_input("y", typed(t, {1, 20, 2, 2}), "L['y']");
  auto norm = [&](ir::ValueId v, int seed) {
    return g.add(OpKind::Add, {g.add(OpKind::Mul, {v, typed_weight(g, t, "s" + std::to_string(seed), {20, 1, 1}, seed)}),
                               typed_weight(g, t, "h" + std::to_string(seed), {20, 1, 1}, seed + 1)});
  };
  ir::ValueId proj = norm(g.add(OpKind::Conv, {x, typed_weight(g, t, "w1", {20, 16, 1, 1}, 1)}, conv_attrs({2, 2}, {1, 1}, {0, 0}, {0, 0})), 10);
  ir::ValueId c = norm(g.add(OpKind::Conv, {y, typed_weight(g, t, "w2", {20, 20, 1, 1}, 2)}, conv_attrs({1, 1}, {1, 1}, {0, 0}, {0, 0})), 20);
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {proj, c})}),
                  g.add(OpKind::Conv, {x, typed_weight(g, t, "w3", {16, 8, 3, 3}, 3)},
                        grouped(conv_attrs({2, 2}, {1, 1}, {1, 1}, {1, 1}), 2))});
  expect_on_every_cpu(g);
  for (const char* cpu : {"x86-64-v3", "x86-64-v4"}) {
    Options options;
    options.cpu = cpu;
    ::testing::internal::CaptureStderr();
    lower_graph(g, "quiet_", options);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << cpu;
  }
}

TEST(Gemm, Conv1d) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 6, 40}), "L['x']");
  ir::ValueId w = weight(g, "w", {9, 6, 5}, 11), bias = weight(g, "b", {9}, 12);
  set_outputs(g, {g.add(OpKind::Conv, {x, w, bias}, conv_attrs({2}, {1}, {2}, {2}))});
  expect_on_every_cpu(g);
}

}  // namespace
}  // namespace aotrace::lowering
