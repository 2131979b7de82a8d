// End-to-end kernel tests: lower a small graph, link it, dlopen it, run the plan and compare
// with the reference interpreter (ir::evaluate) at rtol 1e-4 / atol 1e-5.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "lowering/passes.h"
#include "tests/unit/lowering/plan_runner.h"
#include "tests/unit/lowering/reference_check.h"
#include "tests/unit/lowering/test_graphs.h"

namespace aotrace::lowering {
namespace {
using namespace testing;
using ir::OpKind;

// Runs `g` compiled and interpreted on random inputs (seeded) and compares every output.
LoweredVariant expect_matches_reference(const ir::Graph& g, uint32_t seed = 1) {
  std::vector<ir::HostTensor> inputs;
  for (const auto& in : g.inputs) {
    std::vector<int64_t> shape;
    for (const auto& d : g.type(in.value).shape) shape.push_back(d.constant());
    inputs.push_back(random_tensor(shape, seed++, -2, 2, g.type(in.value).dtype));
  }
  std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
  LoweredVariant lowered;
  std::vector<ir::HostTensor> actual = compile_and_run(g, inputs, &lowered);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i)
    EXPECT_EQ(compare(actual[i], expected[i]), "") << "output " << i;
  return lowered;
}

TEST(EndToEnd, AddWithBroadcastAndPythonScalar) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 5}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({5}), "L['y']");
  set_outputs(g, {g.add(OpKind::Add, {g.add(OpKind::Add, {x, y}), g.constant(2.5, ir::DType::f32)})});
  EXPECT_EQ(expect_matches_reference(g).num_kernels(), 1);
}

TEST(EndToEnd, UnaryOps) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 33}), "L['x']");
  std::vector<ir::ValueId> outs;
  for (OpKind k : {OpKind::Relu, OpKind::Tanh, OpKind::Sigmoid, OpKind::Exp, OpKind::Neg,
                   OpKind::Abs})
    outs.push_back(g.add(k, {x}));
  outs.push_back(g.add(OpKind::Sqrt, {g.add(OpKind::Abs, {x})}));
  outs.push_back(g.add(OpKind::Log, {g.add(OpKind::Exp, {x})}));
  set_outputs(g, outs);
  expect_matches_reference(g);
}

TEST(EndToEnd, BinaryOps) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 3, 4}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({3, 1}), "L['y']");
  std::vector<ir::ValueId> outs;
  for (OpKind k : {OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Maximum, OpKind::Minimum})
    outs.push_back(g.add(k, {x, y}));
  outs.push_back(g.add(OpKind::Pow, {g.add(OpKind::Abs, {x}), y}));
  set_outputs(g, outs);
  expect_matches_reference(g);
}

TEST(EndToEnd, CompareWhereCast) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({6, 7}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({7}), "L['y']");
  ir::ValueId gt = g.add(OpKind::Gt, {x, y});
  ir::Attrs to_i64;
  to_i64.set("dtype", ir::DType::i64);
  ir::Attrs to_f64;
  to_f64.set("dtype", ir::DType::f64);
  set_outputs(g, {gt, g.add(OpKind::Where, {gt, x, g.add(OpKind::Mul, {y, g.constant(2, ir::DType::f32)})}),
                  g.add(OpKind::Cast, {g.add(OpKind::Mul, {x, g.constant(10, ir::DType::f32)})}, to_i64),
                  g.add(OpKind::Cast, {x}, to_f64), g.add(OpKind::Le, {x, g.constant(0, ir::DType::f32)})});
  expect_matches_reference(g);
}

TEST(EndToEnd, Matmul2D) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({5, 7}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({7, 3}), "L['b']");
  set_outputs(g, {g.add(OpKind::Matmul, {a, b})});
  expect_matches_reference(g);
}

TEST(EndToEnd, MatmulBatchedAndBroadcast) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({2, 5, 7}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({2, 7, 3}), "L['b']");
  ir::ValueId c = g.add_input("c", f32({7, 4}), "L['c']");
  ir::ValueId v = g.add_input("v", f32({7}), "L['v']");
  set_outputs(g, {g.add(OpKind::Matmul, {a, b}), g.add(OpKind::Matmul, {a, c}),
                  g.add(OpKind::Matmul, {a, v}), g.add(OpKind::Matmul, {v, c})});
  expect_matches_reference(g);
}

TEST(EndToEnd, MatmulWithTransposedOperand) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({5, 7}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({3, 7}), "L['b']");
  set_outputs(g, {g.add(OpKind::Matmul, {a, g.add(OpKind::Permute, {b}, perm_attrs({1, 0}))})});
  EXPECT_EQ(expect_matches_reference(g).num_kernels(), 1);
}

TEST(EndToEnd, LinearWithBias) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 20}), "L['x']");
  set_outputs(g, {g.add(OpKind::Linear, {x, weight(g, "w", {10, 20}, 7), weight(g, "b", {10}, 8)})});
  EXPECT_EQ(expect_matches_reference(g).num_kernels(), 1);
}

TEST(EndToEnd, ReshapePermuteTranspose) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 3, 4}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({4, 6}), "L['y']");
  ir::ValueId r = g.add(OpKind::Reshape, {x}, shape_attrs({6, 4}));
  ir::ValueId t = g.add(OpKind::Permute, {y}, perm_attrs({1, 0}));
  ir::ValueId p = g.add(OpKind::Permute, {x}, perm_attrs({2, 0, 1}));
  set_outputs(g, {g.add(OpKind::Add, {r, t}), p,
                  g.add(OpKind::Reshape, {p}, shape_attrs({4, 6})),   // reshape of a non-contiguous view
                  g.add(OpKind::Reshape, {x}, shape_attrs({3, 2, 1, 4}))});
  expect_matches_reference(g);
}

TEST(EndToEnd, ExpandOfSmallValue) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 1}), "L['x']");
  set_outputs(g, {g.add(OpKind::Expand, {g.add(OpKind::Exp, {x})}, shape_attrs({2, 3, 5}))});
  expect_matches_reference(g);
}

TEST(EndToEnd, ReduceSumAndMeanOverDims) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 4, 5}), "L['x']");
  set_outputs(g, {g.add(OpKind::ReduceSum, {x}, reduce_attrs({1}, false)),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({0, 2}, true)),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({0, 1, 2}, false)),
                  g.add(OpKind::Mean, {x}, reduce_attrs({2}, false)),
                  g.add(OpKind::Mean, {x}, reduce_attrs({0}, true)),
                  g.add(OpKind::ReduceMax, {x}, reduce_attrs({1, 2}, false))});
  expect_matches_reference(g);
}

// Reductions that keep the innermost axis (a channels-last average pool) accumulate runs of
// up to 64 outputs along it (emit_column_reduction): 37 and 130 outputs per row (a partial
// vector; two whole runs and a tail), keepdim or not, a prologue and an epilogue, max and min
// with NaN propagating from any position.
TEST(EndToEnd, ReductionsKeepingTheInnermostAxis) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 50, 37}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({1, 9, 130}), "L['y']");
  ir::ValueId silu = g.add(OpKind::Mul, {x, g.add(OpKind::Sigmoid, {x})});
  ir::ValueId nan = g.add(OpKind::Div, {g.constant(0, ir::DType::f32), g.constant(0, ir::DType::f32)});
  ir::ValueId holed = g.add(OpKind::Where, {g.add(OpKind::Gt, {y, g.constant(0.9, ir::DType::f32)}), nan, y});
  set_outputs(g, {g.add(OpKind::Sigmoid, {g.add(OpKind::Mean, {silu}, reduce_attrs({1}, true))}),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({0, 1}, false)),
                  g.add(OpKind::ReduceMax, {holed}, reduce_attrs({1}, false)),
                  g.add(OpKind::ReduceMin, {holed}, reduce_attrs({0, 1}, true)),
                  g.add(OpKind::ReduceSum, {y}, reduce_attrs({1}, true))});
  expect_on_every_cpu(g);
}

TEST(EndToEnd, SoftmaxLastDimAndDimZero) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({6, 10}), "L['x']");
  ir::Attrs last, first;
  last.set("axis", int64_t{1});
  first.set("axis", int64_t{0});
  set_outputs(g, {g.add(OpKind::Softmax, {x}, last), g.add(OpKind::Softmax, {x}, first),
                  g.add(OpKind::LogSoftmax, {x}, last)});
  expect_matches_reference(g);
}

TEST(EndToEnd, TwoLayerMlp) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({8, 64}), "L['x']");
  ir::ValueId h = g.add(OpKind::Relu, {g.add(OpKind::Linear, {x, weight(g, "fc1.weight", {32, 64}, 3),
                                                               weight(g, "fc1.bias", {32}, 4)})});
  set_outputs(g, {g.add(OpKind::Linear, {h, weight(g, "fc2.weight", {10, 32}, 5),
                                         weight(g, "fc2.bias", {10}, 6)})});
  EXPECT_EQ(expect_matches_reference(g).num_kernels(), 2);
}

TEST(EndToEnd, OutputAliasesGetCopies) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 3}), "L['x']");
  ir::ValueId w = weight(g, "w", {3}, 9);
  ir::ValueId e = g.add(OpKind::Exp, {x});
  set_outputs(g, {x, e, e, g.add(OpKind::Reshape, {x}, shape_attrs({3, 2})), w});
  LoweredVariant v = expect_matches_reference(g);
  EXPECT_EQ(v.num_kernels(), 5);
}

TEST(EndToEnd, RankZeroOutput) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({7}), "L['x']");
  set_outputs(g, {g.add(OpKind::Mul, {g.add(OpKind::ReduceSum, {x}, reduce_attrs({0}, false)),
                                      g.constant(0.5, ir::DType::f32)})});
  expect_matches_reference(g);
}

TEST(MemoryPlan, ReusesArenaAlongAChainWithoutOverlappingLiveBuffers) {
  ir::Graph g;
  ir::ValueId v = g.add_input("x", f32({16, 16}), "L['x']");
  ir::ValueId m = weight(g, "m", {16, 16}, 2);
  for (int i = 0; i < 5; ++i) v = g.add(OpKind::Matmul, {g.add(OpKind::Tanh, {v}), m});
  set_outputs(g, {v});
  LoweredVariant lowered = expect_matches_reference(g);
  const ir::ExecutionPlan& p = lowered.plan;
  int64_t total = 0;
  std::vector<int> def(p.buffers.size(), -1), last(p.buffers.size(), -1);
  for (size_t k = 0; k < p.calls.size(); ++k)
    for (size_t a = 0; a < p.calls[k].buffers.size(); ++a) {
      auto b = static_cast<size_t>(p.calls[k].buffers[a]);
      if (a == 0 && def[b] < 0) def[b] = static_cast<int>(k);
      last[b] = static_cast<int>(k);
    }
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (p.buffers[i].kind != ir::PlanBuffer::Kind::Arena) continue;
    total += p.buffers[i].size_bytes;
    EXPECT_EQ(p.buffers[i].offset % 64, 0);
    for (size_t j = 0; j < i; ++j) {
      if (p.buffers[j].kind != ir::PlanBuffer::Kind::Arena) continue;
      bool live_together = def[i] <= last[j] && def[j] <= last[i];
      bool overlap = p.buffers[i].offset < p.buffers[j].offset + p.buffers[j].size_bytes &&
                     p.buffers[j].offset < p.buffers[i].offset + p.buffers[i].size_bytes;
      EXPECT_FALSE(live_together && overlap) << "buffers " << i << " and " << j;
    }
  }
  EXPECT_LT(p.arena_bytes, total);
}

TEST(Determinism, SameGraphGivesByteIdenticalObjectAndLibrary) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({8, 64}), "L['x']");
  ir::Attrs a;
  a.set("axis", int64_t{1});
  set_outputs(g, {g.add(OpKind::Softmax, {g.add(OpKind::Linear, {x, weight(g, "w", {16, 64}, 1)})}, a)});
  Options o;
  LoweredVariant first = lower_graph(g, "m_", o), second = lower_graph(g, "m_", o);
  EXPECT_EQ(first.object, second.object);
  EXPECT_EQ(link_cpu_library({first.object}, o), link_cpu_library({second.object}, o));
}

// Symbolic dims lower (Dynamic.* runs them), but a range including 1 is a capture's static
// variant: refused before any work.
TEST(Lowering, SymbolicRangeIncludingOneIsAUserError) {
  ir::Graph g;
  ir::Shape s{ir::SymExpr::symbol("s0"), 4};
  ir::ValueId x = g.add_input("x", ir::TensorType{ir::DType::f32, ir::Device{}, s}, "L['x']");
  g.symbols["s0"] = ir::SymRange{1, 64, 1};
  set_outputs(g, {g.add(OpKind::Exp, {x})});
  try {
    lower_graph(g, "v_", Options{});
    FAIL() << "expected a user error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("includes size 0 or 1"), std::string::npos) << e.what();
  }
}

// Three layers of the same shapes (different weights: their own buffers) share one kernel
// per distinct computation: the plan calls one symbol three times; a layer of another width and
// the last layer's different epilogue get their own. The results are each layer's own.
TEST(Schedule, RepeatedLayersShareTheirKernels) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({8, 32}), "L['x']");
  ir::ValueId v = x;
  for (uint32_t i = 0; i < 3; ++i) {
    ir::ValueId w = g.add_weight("w" + std::to_string(i), f32({32, 32}), "L['self'].w" + std::to_string(i),
                                 random_weight_bytes({32, 32}, i + 1));
    v = g.add(OpKind::Relu, {g.add(OpKind::Matmul, {v, w})});
  }
  ir::ValueId wide = g.add_weight("wide", f32({32, 48}), "L['self'].wide", random_weight_bytes({32, 48}, 9));
  ir::ValueId out = g.add(OpKind::Tanh, {g.add(OpKind::Matmul, {v, wide})});
  set_outputs(g, {out});
  LoweredVariant lowered = expect_matches_reference(g, 5);
  std::map<std::string, int> calls;
  for (const auto& c : lowered.plan.calls) ++calls[c.symbol];
  ASSERT_EQ(lowered.plan.calls.size(), 4u);
  EXPECT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[lowered.plan.calls[0].symbol], 3);
}

TEST(Lowering, TimesEveryPass) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4}), "L['x']");
  set_outputs(g, {g.add(OpKind::Exp, {x})});
  LoweredVariant v = lower_graph(g, "t_", Options{});
  std::vector<std::string> passes;
  for (const auto& t : v.timings) passes.push_back(t.pass);
  EXPECT_EQ(passes, (std::vector<std::string>{"decompose", "fold-constants", "cse", "dce", "conv-taps", "channels-last", "winograd",
                                              "pad-conv-inputs", "pack-weights", "fuse", "schedule",
                                              "cpu-plan", "codegen", "codegen.llvm-ir", "codegen.llvm-opt",
                                              "codegen.llvm-mc", "memory-plan"}));
}

TEST(Target, CrossCompilesForAarch64) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4, 4}), "L['x']");
  set_outputs(g, {g.add(OpKind::Tanh, {g.add(OpKind::Matmul, {x, x})})});
  Options o;
  o.triple = "aarch64-linux-gnu";
  LoweredVariant v = lower_graph(g, "a_", o);
  ASSERT_GT(v.object.size(), 20u);
  EXPECT_EQ(v.object[18], 183);  // e_machine EM_AARCH64
  EXPECT_FALSE(link_cpu_library({v.object}, o).empty());
}

}  // namespace
}  // namespace aotrace::lowering

namespace aotrace::lowering {
namespace {
using namespace testing;

TEST(Link, LibraryRecordsLibmWhenKernelsCallIt) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({4}), "L['x']");
  set_outputs(g, {g.add(ir::OpKind::Sin, {x})});  // sinf (f32 exp, erf, tanh are inline code)
  ir::Bytes so = link_cpu_library({lower_graph(g, "l_", Options{}).object}, Options{});
  std::string text(so.begin(), so.end());
  EXPECT_NE(text.find("libm.so.6"), std::string::npos);
  EXPECT_NE(text.find("l_k0"), std::string::npos);
}

TEST(Link, LinkerFailureIsAnInternalErrorWithItsMessage) {
  ir::Bytes not_an_object = {'n', 'o', 'p', 'e'};
  try {
    link_cpu_library({not_an_object}, Options{});
    FAIL() << "expected the link to fail";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("ld.lld failed"), std::string::npos);
  }
}

}  // namespace
}  // namespace aotrace::lowering
