// The CPU backend's kernel plans (lowering/cpu/plan.h), checked as data: the graph passes,
// fuse, schedule and plan_cpu_kernels run, LLVM never does.
#include <gtest/gtest.h>

#include "lowering/cpu/plan.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::OpKind;
using Ints = std::vector<int64_t>;

// The pipeline of lower_graph up to the CPU plans (pipeline.cpp), without codegen.
struct Planned {
  Schedule schedule;
  std::vector<cpu::CpuPlan> plans;
};
Planned plan(const ir::Graph& graph, Options::Winograd winograd_mode = Options::Winograd::never, int64_t tile = 2) {
  ir::Graph g = dce(cse(fold_constants(decompose(graph))));
  g = pack_weights(pad_conv_inputs(winograd(channels_last(std::move(g)), winograd_mode, tile)));
  Planned p{schedule(fuse(std::move(g)), "t_"), {}};
  p.plans = cpu::plan_cpu_kernels(p.schedule);
  return p;
}

ir::Attrs conv_attrs(Ints stride, Ints pad) {
  return attrs({{"stride", stride}, {"dilation", Ints{1, 1}}, {"pad_low", pad}, {"pad_high", pad},
                {"groups", int64_t{1}}});
}

// A linear layer's GEMM: A (the activations) read in place, its weight pre-packed, K in one
// panel of 256 per step of three, 128 columns per task, rows in tasks of whole MR panels.
TEST(CpuPlan, LinearLayerReadsItsActivationsInPlace) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({128, 768}), "L['x']");
  ir::ValueId w = weight(g, "w", {3072, 768}, 1), b = weight(g, "b", {3072}, 2);
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {g.add(OpKind::Matmul, {x, transpose(g, w)}), b})})});
  Planned p = plan(g);
  ASSERT_EQ(p.plans.size(), 1u);
  ASSERT_TRUE(p.plans[0].gemm.has_value());
  const cpu::GemmPlan& gp = *p.plans[0].gemm;
  EXPECT_FALSE(gp.is_conv);
  EXPECT_EQ(gp.m.str(), "128");
  EXPECT_EQ(gp.n.str(), "3072");
  EXPECT_EQ(gp.k.str(), "768");
  EXPECT_TRUE(gp.direct_a);
  EXPECT_EQ(gp.kc, 256);
  EXPECT_EQ(gp.nc.str(), "128");
  EXPECT_EQ(gp.mt % gp.mr, 0);
  EXPECT_EQ(gp.tasks().str(), "24");  // one task of all 128 rows per block of 128 columns
  EXPECT_EQ(p.plans[0].work, 128.0 * 3072 * 768);  // K multiply-adds per output
  EXPECT_NE(cpu::describe(p.plans).find("t_k0: work 3.02e+08 | gemm matmul batches 1 m 128 n 3072 k 768"), std::string::npos)
      << cpu::describe(p.plans);
}

// A bf16 linear layer is the same GEMM, but its activations are packed (widened) rather than
// read in place, and its weight's panels are f32, read through an inlined cast: one kernel.
TEST(CpuPlan, HalfLinearLayersPackTheirActivations) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(ir::DType::bf16, {128, 768}), "L['x']");
  ir::ValueId w = typed_weight(g, ir::DType::bf16, "w", {3072, 768}, 1), b = typed_weight(g, ir::DType::bf16, "b", {3072}, 2);
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Add, {g.add(OpKind::Matmul, {x, transpose(g, w)}), b})})});
  Planned p = plan(g);
  ASSERT_EQ(p.plans.size(), 1u);
  ASSERT_TRUE(p.plans[0].gemm.has_value());
  EXPECT_FALSE(p.plans[0].gemm->direct_a);
  EXPECT_TRUE(p.plans[0].gemm->a_rows);  // packed by rows of 16 K-steps, widened and transposed
  EXPECT_NE(cpu::describe(p.plans).find("t_k0: work 3.02e+08 | gemm matmul batches 1 m 128 n 3072 k 768"), std::string::npos)
      << cpu::describe(p.plans);
  EXPECT_NE(cpu::describe(p.plans).find(" a_rows"), std::string::npos) << cpu::describe(p.plans);
}

// Convs: stride 1 unpadded (a 1×1) on the input's rows ("wide": whole rows per block), a
// strided padded 3×3 through a materialised pad ("gathered"), and at batch 4 with 7×7 outputs
// the images folded into the columns ("merged"). An elementwise kernel has no plan.
TEST(CpuPlan, ConvsChooseHowTheyReadTheirInput) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 64, 56, 56}), "L['x']");
  ir::ValueId small = g.add_input("small", f32({4, 64, 14, 14}), "L['small']");
  ir::ValueId w1 = weight(g, "w1", {128, 64, 1, 1}, 1), w3 = weight(g, "w3", {128, 64, 3, 3}, 2);
  set_outputs(g, {g.add(OpKind::Conv, {x, w1}, conv_attrs({1, 1}, {0, 0})),
                  g.add(OpKind::Conv, {x, w3}, conv_attrs({2, 2}, {1, 1})),
                  g.add(OpKind::Conv, {small, w3}, conv_attrs({2, 2}, {1, 1})),
                  g.add(OpKind::Exp, {x})});
  Planned p = plan(g);
  std::vector<const cpu::GemmPlan*> gemms;
  int without = 0;
  for (const cpu::CpuPlan& c : p.plans) {
    if (c.gemm) gemms.push_back(&*c.gemm);
    else ++without;
  }
  ASSERT_EQ(gemms.size(), 3u) << cpu::describe(p.plans);
  EXPECT_EQ(without, 3);  // the two pads and the exp
  EXPECT_EQ(p.plans.back().work, 64.0 * 56 * 56);  // the exp: one operation per element
  const cpu::GemmPlan &one = *gemms[0], &strided = *gemms[1], &merged = *gemms[2];
  EXPECT_TRUE(one.is_conv && one.wide && !one.gathered);
  EXPECT_EQ(one.k.str(), "64");
  EXPECT_EQ(one.row.str(), "56");
  EXPECT_EQ(one.nc.str(), "224");  // K <= 64: 256 columns, in whole rows of 56
  EXPECT_TRUE(strided.gathered && !strided.wide && !strided.merged);
  EXPECT_EQ(strided.n.str(), "784");
  EXPECT_EQ(strided.k.str(), "576");
  EXPECT_EQ(strided.kc, 192);  // 576 in three even panels
  EXPECT_TRUE(merged.merged && merged.gathered);
  EXPECT_EQ(merged.batches.str(), "1");
  EXPECT_EQ(merged.n.str(), "196");  // 4 images of 7×7
}

// Winograd convs: 64 input channels are one fused kernel, in blocks of whole rows of tiles small
// enough for 8 tasks or more (28 rows of 28 tiles at batch 1: blocks of 3 rows, 10 tasks); 256
// input channels keep the transforms and the GEMM apart.
TEST(CpuPlan, WinogradConvsFuseUpTo128Channels) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 64, 56, 56}), "L['x']");
  ir::ValueId deep = g.add_input("deep", f32({1, 256, 14, 14}), "L['deep']");
  set_outputs(g, {g.add(OpKind::Conv, {x, weight(g, "w", {64, 64, 3, 3}, 1)}, conv_attrs({1, 1}, {1, 1})),
                  g.add(OpKind::Conv, {deep, weight(g, "w2", {256, 256, 3, 3}, 2)}, conv_attrs({1, 1}, {1, 1}))});
  Planned p = plan(g, Options::Winograd::always);
  std::vector<const cpu::WinogradPlan*> w;
  for (const cpu::CpuPlan& c : p.plans)
    if (c.winograd) w.push_back(&*c.winograd);
  ASSERT_EQ(w.size(), 3u) << cpu::describe(p.plans);  // the fused conv, the deep one's transforms
  EXPECT_TRUE(w[0]->fused);
  EXPECT_EQ(w[0]->in_channels, 64);
  EXPECT_EQ(w[0]->block_rows, 3);
  EXPECT_EQ(w[0]->tasks(), 10);
  EXPECT_EQ(w[0]->kc, 64);
  EXPECT_EQ(w[0]->mt % 6, 0);
  EXPECT_GE(w[0]->ldb, 2 * 28 + 32);  // a block's last row of tiles, as vectors of 16
  EXPECT_TRUE(w[1]->input && !w[1]->fused);
  EXPECT_TRUE(!w[2]->input && !w[2]->fused);
  EXPECT_EQ(cpu::for_target(*w[0], 4).lanes, 4);
  EXPECT_EQ(cpu::for_target(*w[0], 4).vectors, 7);
}

// A depthwise conv and a 3×3 stride-2 max pool take the depthwise kernel; at 16 lanes, narrowed
// per CPU: a 7-wide output row takes 8 lanes, and 4 on a 4-lane CPU.
TEST(CpuPlan, DepthwiseConvsAndMaxPoolsAreVectorisedAlongTheRow) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({1, 32, 14, 14}), "L['x']");
  ir::Attrs dw = attrs({{"stride", Ints{2, 2}}, {"dilation", Ints{1, 1}}, {"pad_low", Ints{1, 1}},
                        {"pad_high", Ints{1, 1}}, {"groups", int64_t{32}}});
  ir::Attrs pool = attrs({{"kind", std::string("max")}, {"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}},
                          {"padding", Ints{1, 1}}, {"dilation", Ints{1, 1}}, {"ceil_mode", int64_t{0}}});
  set_outputs(g, {g.add(OpKind::Conv, {x, weight(g, "w", {32, 1, 3, 3}, 1)}, dw), g.add(OpKind::Pool, {x}, pool)});
  Planned p = plan(g);
  std::vector<const cpu::DepthwisePlan*> d;
  for (const cpu::CpuPlan& c : p.plans)
    if (c.depthwise) d.push_back(&*c.depthwise);
  ASSERT_EQ(d.size(), 2u) << cpu::describe(p.plans);
  EXPECT_FALSE(d[0]->max_pool);
  EXPECT_TRUE(d[1]->max_pool);
  for (const cpu::DepthwisePlan* one : d) {
    EXPECT_EQ(one->width_bound, 7);
    EXPECT_EQ(one->lanes, 8);
    EXPECT_EQ(cpu::for_target(*one, 4).lanes, 4);
    EXPECT_EQ(cpu::for_target(*one, 4).tile, 8);
  }
}

// The generic loop nest: one task per row, but a few long rows with enough work are cut into
// chunks of whole vectors too (8 per row, multiples of 16); small kernels stay whole.
TEST(CpuPlan, FewLongRowsAreCutIntoChunks) {
  ir::Graph g;
  ir::ValueId one_row = g.add_input("one_row", f32({1, 65536}), "L['one_row']");
  ir::ValueId many = g.add_input("many", f32({64, 1024}), "L['many']");
  ir::ValueId small = g.add_input("small", f32({1, 4096}), "L['small']");
  set_outputs(g, {g.add(OpKind::Exp, {one_row}), g.add(OpKind::Exp, {many}), g.add(OpKind::Exp, {small})});
  Planned p = plan(g);
  ASSERT_EQ(p.plans.size(), 3u);
  EXPECT_EQ(p.plans[0].row_chunk, 8192);
  EXPECT_EQ(p.plans[1].row_chunk, 0);  // 64 rows: tasks enough
  EXPECT_EQ(p.plans[2].row_chunk, 0);  // 4096 operations: one task, inline
  EXPECT_LT(p.plans[2].work, cpu::kParallelWork);
}

}  // namespace
}  // namespace aotrace::lowering
