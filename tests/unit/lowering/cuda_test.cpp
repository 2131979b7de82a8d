// The CUDA backend without a GPU (lowering/cuda/):
//   Cuda.Emulated*   each kernel's grid function (the IR the PTX entry calls) compiled for this
//                    CPU and run over every block and thread of its launch (grid emulation),
//                    against the reference interpreter;
//   Cuda.Ptxas*      the same kernels through LLVM's NVPTX backend and the toolkit's ptxas into
//                    cubins for sm_80 and sm_90;
//   Cuda.Toolkit*    a missing toolkit or a bad arch is a user error that says what to do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "lowering/cuda/cuda_backend.h"
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

Options for_gpu() {
  Options o;
  o.device = Options::Device::cuda;
  return o;
}

ir::Attrs conv_attrs(Ints stride, Ints pad, int64_t groups = 1) {
  return attrs({{"stride", stride}, {"dilation", Ints{1, 1}}, {"pad_low", pad}, {"pad_high", pad}, {"groups", groups}});
}

// Elementwise chains with broadcasting, math that the GPU takes from libdevice (tanh, erf, pow,
// exp, log), compares and casts: fused kernels, one thread per output element.
ir::Graph elementwise_graph() {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 300}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({300}), "L['y']");
  ir::ValueId s = g.add(OpKind::Add, {g.add(OpKind::Mul, {x, y}), g.constant(0.5, DType::f32)});
  ir::Attrs to_i64;
  to_i64.set("dtype", DType::i64);
  set_outputs(g, {s, g.add(OpKind::Tanh, {s}), g.add(OpKind::Gelu, {x}, attrs({{"approximate", std::string("none")}})),
                  g.add(OpKind::Pow, {g.add(OpKind::Abs, {x}), y}), g.add(OpKind::Log, {g.add(OpKind::Exp, {y})}),
                  g.add(OpKind::Where, {g.add(OpKind::Gt, {x, y}), x, y}),
                  g.add(OpKind::Cast, {g.add(OpKind::Mul, {x, g.constant(10, DType::f32)})}, to_i64)});
  return g;
}

// Reductions over every axis position, softmax and layer norm (a reduction feeding an
// elementwise epilogue in one kernel).
ir::Graph reduction_graph() {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 40, 37}), "L['x']");
  ir::ValueId w = weight(g, "ln.weight", {37}, 1), b = weight(g, "ln.bias", {37}, 2);
  set_outputs(g, {g.add(OpKind::ReduceSum, {x}, reduce_attrs({2}, false)),
                  g.add(OpKind::Mean, {x}, reduce_attrs({1}, true)),
                  g.add(OpKind::ReduceMax, {x}, reduce_attrs({0, 2}, false)),
                  g.add(OpKind::Softmax, {x}, attrs({{"axis", int64_t{2}}})),
                  g.add(OpKind::LogSoftmax, {x}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::LayerNorm, {x, w, b}, attrs({{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}))});
  return g;
}

// Matmuls (batched, broadcast, a transposed weight with bias and relu), and convs: 3×3 padded,
// strided, 1×1, depthwise, and a max pool.
ir::Graph matmul_conv_graph() {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({2, 17, 33}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({2, 33, 9}), "L['b']");
  ir::ValueId x = g.add_input("x", f32({1, 8, 13, 11}), "L['x']");
  ir::ValueId w = weight(g, "w", {24, 33}, 3), bias = weight(g, "bias", {24}, 4);
  ir::ValueId pool = g.add(OpKind::Pool, {x}, attrs({{"kind", std::string("max")}, {"kernel", Ints{3, 3}},
                                                     {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}, {"dilation", Ints{1, 1}},
                                                     {"ceil_mode", int64_t{0}}}));
  set_outputs(g, {g.add(OpKind::Matmul, {a, b}),
                  g.add(OpKind::Relu, {g.add(OpKind::Linear, {a, w, bias})}),
                  g.add(OpKind::Conv, {x, weight(g, "c3", {16, 8, 3, 3}, 5)}, conv_attrs({1, 1}, {1, 1})),
                  g.add(OpKind::Conv, {x, weight(g, "c3s", {16, 8, 3, 3}, 6)}, conv_attrs({2, 2}, {1, 1})),
                  g.add(OpKind::Conv, {x, weight(g, "c1", {12, 8, 1, 1}, 7)}, conv_attrs({1, 1}, {0, 0})),
                  g.add(OpKind::Conv, {x, weight(g, "dw", {8, 1, 3, 3}, 8)}, conv_attrs({1, 1}, {1, 1}, 8)),
                  pool});
  return g;
}

// Symbolic batch and sequence: lowered once, launched at several sizes.
ir::Graph dynamic_graph() {
  ir::Graph g;
  const SymExpr B = SymExpr::symbol("B"), T = SymExpr::symbol("T");
  g.symbols["B"] = {2, 5, 1};
  g.symbols["T"] = {2, 300, 1};
  ir::ValueId x = g.add_input("x", ir::TensorType{DType::f32, ir::Device{}, ir::Shape{B, T, 16}}, "L['x']");
  ir::ValueId w = weight(g, "w", {8, 16}, 1);
  ir::ValueId h = g.add(OpKind::Linear, {x, w});
  set_outputs(g, {g.add(OpKind::Softmax, {h}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::ReduceSum, {g.add(OpKind::Exp, {x})}, reduce_attrs({1}, false))});
  return g;
}

ir::Graph half_graph() {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", typed(DType::f16, {4, 70}), "L['x']");
  ir::ValueId y = g.add_input("y", typed(DType::bf16, {70}), "L['y']");
  ir::Attrs to_f16;
  to_f16.set("dtype", DType::f16);
  set_outputs(g, {g.add(OpKind::Sigmoid, {x}), g.add(OpKind::Softmax, {x}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::Add, {x, g.add(OpKind::Cast, {y}, to_f16)}), g.add(OpKind::Mul, {y, y})});
  return g;
}

TEST(Cuda, EmulatedElementwiseAndBroadcast) {
  LoweredVariant v = expect_matches_reference_in(elementwise_graph(), -2, 2, 1, std::nullopt, cuda_emulation());
  // Each launch covers its kernel's output elements, in blocks of 256 threads.
  ASSERT_FALSE(v.plan.calls.empty());
  for (const ir::KernelCall& call : v.plan.calls) {
    EXPECT_EQ(call.block, 256);
    EXPECT_TRUE(call.threads.is_constant());
  }
  EXPECT_EQ(v.plan.calls[0].threads.constant(), 3 * 300 / 4) << "4 elements per thread (300 is a multiple of 4)";
}

// The PTX of kernel `symbol` (from its .entry to the next one).
std::string kernel_ptx(const std::string& ptx, const std::string& symbol) {
  const size_t from = ptx.find(".entry " + symbol + "(");
  if (from == std::string::npos) return "";
  const size_t to = ptx.find(".entry ", from + 1);
  return ptx.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// Elementwise kernels whose innermost extent is static and a multiple of 4 take 4 neighbouring
// elements per thread (CpuPlan::row_chunk 4): their loads and stores of them become one vector
// access each (ld.global.nc.v4.f32: buffers 16-byte aligned, read-only data path; st.global.v4),
// also for a rank-1 root and a symbolic outer dim; a strided read (a transpose) stays scalar
// loads under vector stores; an innermost extent of 70 keeps a thread per element; f16 moves
// 8 bytes a thread and converts in hardware; the generator state's two words are never joined
// (the runtime puts it at any 8-byte word).
TEST(Cuda, ElementwiseKernelsMoveFourElementsPerVectorAccess) {
  ir::Graph g;
  const SymExpr B = SymExpr::symbol("B");
  g.symbols["B"] = {2, 9, 1};
  ir::ValueId x = g.add_input("x", f32({6, 64}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({64}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({48, 6}), "L['z']");
  ir::ValueId w = g.add_input("w", f32({5, 70}), "L['w']");
  ir::ValueId v = g.add_input("v", f32({1000}), "L['v']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {8, 32}), "L['h']");
  ir::ValueId rng = g.add_input("rng", typed(DType::i64, {2}), "L['rng']");
  ir::ValueId d = g.add_input("d", ir::TensorType{DType::f32, ir::Device{}, ir::Shape{B, 64}}, "L['d']");
  ir::Attrs random = attrs({{"distribution", std::string("uniform")}, {"stream", int64_t{0}}});
  random.set("shape", ir::Shape{8, 64});
  random.set("dtype", DType::f32);
  set_outputs(g, {g.add(OpKind::Tanh, {g.add(OpKind::Add, {g.add(OpKind::Mul, {x, y}), g.constant(0.5, DType::f32)})}),
                  g.add(OpKind::Mul, {transpose(g, z), g.constant(2, DType::f32)}),
                  g.add(OpKind::Add, {w, g.constant(1, DType::f32)}),
                  g.add(OpKind::Mul, {v, g.constant(3, DType::f32)}),
                  g.add(OpKind::Sigmoid, {h}),
                  g.add(OpKind::Random, {rng}, random),
                  g.add(OpKind::Relu, {d})});
  const LoweredVariant gpu = lower_graph(g, "vec_", for_gpu());
  std::map<std::string, std::string> by_threads;  // each launch's size → its kernel
  for (const ir::KernelCall& call : gpu.plan.calls) by_threads[call.threads.str()] = call.symbol;
  for (const char* threads : {"96", "72", "350", "250", "64", "128", (SymExpr(16) * B).str().c_str()})
    EXPECT_EQ(by_threads.count(threads), 1u) << "no launch of " << threads << " threads";
  const std::string ptx = link_cuda_kernels({gpu.object}, for_gpu()).ptx;
  auto kernel = [&](const std::string& threads) { return kernel_ptx(ptx, by_threads[threads]); };
  auto has = [](const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; };
  // tanh(x·y + 0.5): x and y as vectors, the result as one.
  EXPECT_TRUE(has(kernel("96"), "ld.global.nc.v4.f32")) << kernel("96");
  EXPECT_TRUE(has(kernel("96"), "st.global.v4.f32")) << kernel("96");
  EXPECT_FALSE(has(kernel("96"), "ld.global.nc.f32")) << kernel("96");
  // zᵀ · 2: four strided loads, one vector store.
  EXPECT_TRUE(has(kernel("72"), "ld.global.nc.f32"));
  EXPECT_TRUE(has(kernel("72"), "st.global.v4.f32"));
  // w + 1 (rows of 70): scalar.
  EXPECT_TRUE(has(kernel("350"), "st.global.f32"));
  EXPECT_FALSE(has(kernel("350"), "st.global.v"));
  // v · 3 (rank 1), relu(d) (a symbolic batch of rows of 64), sigmoid of f16 (8 bytes a thread).
  EXPECT_TRUE(has(kernel("250"), "ld.global.nc.v4.f32") && has(kernel("250"), "st.global.v4.f32"));
  EXPECT_TRUE(has(kernel((SymExpr(16) * B).str()), "ld.global.nc.v4.f32"));
  EXPECT_TRUE(has(kernel("64"), "ld.global.nc.v4.b16") && has(kernel("64"), "st.global.v4.b16")) << kernel("64");
  EXPECT_TRUE(has(kernel("64"), "cvt.f32.f16") && has(kernel("64"), "cvt.rn.f16.f32")) << "f16 converted in hardware";
  // The random numbers: stored as vectors, the (seed, offset) words read one by one.
  EXPECT_TRUE(has(kernel("128"), "st.global.v4.f32"));
  EXPECT_FALSE(has(kernel("128"), ".v2.u64") || has(kernel("128"), ".v2.b64")) << kernel("128");
  // Fewer elements per thread (hidden `compile --cuda-vector-elements`, for measuring): 2 gives
  // 8-byte vectors, 1 a thread per element and scalar accesses.
  for (const auto& [elements, access] : {std::pair<int64_t, const char*>{2, "ld.global.nc.v2.f32"}, {1, "ld.global.nc.f32"}}) {
    Options options = for_gpu();
    options.cuda_vector_elements = elements;
    const LoweredVariant narrow = lower_graph(g, "vec_", options);
    std::string tanh_kernel;
    for (const ir::KernelCall& call : narrow.plan.calls)
      if (call.threads.str() == std::to_string(384 / elements)) tanh_kernel = call.symbol;
    ASSERT_FALSE(tanh_kernel.empty()) << elements << " element(s) per thread";
    const std::string text = kernel_ptx(link_cuda_kernels({narrow.object}, options).ptx, tanh_kernel);
    EXPECT_TRUE(has(text, access)) << text;
    EXPECT_FALSE(has(text, ".v4.")) << text;
  }
  // Every element computed, under grid emulation too (the symbolic batch at its range's ends).
  LoweredVariant emulated = lower_graph(g, "vec_", cuda_emulation());
  LoadedLibrary lib(link_cpu_library({emulated.object}, cuda_emulation()));
  for (int64_t batch : {2, 9}) {
    SCOPED_TRACE("B=" + std::to_string(batch));
    std::vector<ir::HostTensor> inputs = {random_tensor({6, 64}, 1),  random_tensor({64}, 2),
                                          random_tensor({48, 6}, 3),  random_tensor({5, 70}, 4),
                                          random_tensor({1000}, 5),   random_tensor({8, 32}, 6, -2, 2, DType::f16),
                                          random_tensor({2}, 7, 0, 1000, DType::i64), random_tensor({batch, 64}, 8)};
    std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
    std::vector<ir::HostTensor> actual = run_plan(lib, emulated.plan, emulated.graph, inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      const Tolerance t = tolerance_for(expected[i].dtype);
      EXPECT_EQ(compare(actual[i], expected[i], t.rtol, t.atol), "") << "output " << i;
    }
  }
}

TEST(Cuda, EmulatedReductionsSoftmaxAndLayerNorm) {
  expect_matches_reference_in(reduction_graph(), -2, 2, 1, std::nullopt, cuda_emulation());
}

TEST(Cuda, EmulatedMatmulsConvsAndPool) {
  expect_matches_reference_in(matmul_conv_graph(), -1, 1, 1, Tolerance{1e-4, 1e-4}, cuda_emulation());
}

TEST(Cuda, EmulatedHalfPrecision) {
  expect_matches_reference_in(half_graph(), -2, 2, 1, std::nullopt, cuda_emulation());
}

// One library, several sizes: the launch's thread count is a formula of the symbols, and the
// last block's threads past it do nothing.
TEST(Cuda, EmulatedDynamicDims) {
  ir::Graph g = dynamic_graph();
  LoweredVariant lowered = lower_graph(g, "dyn_", cuda_emulation());
  bool symbolic = false;
  for (const ir::KernelCall& call : lowered.plan.calls) symbolic |= !call.threads.is_constant();
  EXPECT_TRUE(symbolic);
  LoadedLibrary lib(link_cpu_library({lowered.object}, cuda_emulation()));
  for (auto [b, t] : {std::pair<int64_t, int64_t>{2, 2}, {3, 257}, {5, 300}}) {
    SCOPED_TRACE("B=" + std::to_string(b) + " T=" + std::to_string(t));
    std::vector<ir::HostTensor> inputs = {random_tensor({b, t, 16}, 3)};
    std::vector<ir::HostTensor> expected = ir::evaluate(g, inputs);
    std::vector<ir::HostTensor> actual = run_plan(lib, lowered.plan, lowered.graph, inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) EXPECT_EQ(compare(actual[i], expected[i], 1e-4, 1e-5), "") << "output " << i;
  }
}

// Every kernel of every graph above, in one library as a bundle links them: PTX with an entry per
// kernel, and a cubin per arch (ELF, for the NVIDIA machine type).
TEST(Cuda, PtxasAssemblesEveryKernelForSm80AndSm90) {
  std::vector<ir::Bytes> bitcode;
  std::set<std::string> symbols;
  int prefix = 0;
  for (const ir::Graph& g : {elementwise_graph(), reduction_graph(), matmul_conv_graph(), dynamic_graph(), half_graph()}) {
    LoweredVariant v = lower_graph(g, "v" + std::to_string(prefix++) + "_", for_gpu());
    ASSERT_GE(v.object.size(), 4u);
    EXPECT_EQ(std::string(v.object.begin(), v.object.begin() + 2), "BC");  // LLVM bitcode
    for (const ir::KernelCall& call : v.plan.calls) symbols.insert(call.symbol);
    bitcode.push_back(std::move(v.object));
  }
  CudaLibrary lib = link_cuda_kernels(bitcode, for_gpu());
  EXPECT_EQ(lib.ptx_arch, "sm_80");
  EXPECT_NE(lib.ptx.find(".target sm_80"), std::string::npos);
  for (const std::string& s : symbols) EXPECT_NE(lib.ptx.find(".entry " + s + "("), std::string::npos) << s;
  // No call is left to a function the GPU does not have: libdevice's math was linked in.
  EXPECT_EQ(lib.ptx.find(".extern .func"), std::string::npos);
  ASSERT_EQ(lib.cubins.size(), 2u);
  EXPECT_EQ(lib.cubins[0].first, "sm_80");
  EXPECT_EQ(lib.cubins[1].first, "sm_90");
  for (const auto& [arch, cubin] : lib.cubins) {
    ASSERT_GT(cubin.size(), 64u) << arch;
    EXPECT_EQ(std::string(cubin.begin(), cubin.begin() + 4), "\x7f" "ELF") << arch;
    const uint16_t machine = static_cast<uint16_t>(cubin[18] | (cubin[19] << 8));
    EXPECT_EQ(machine, 190) << arch;  // EM_CUDA
  }
}

// The PTX is written once, for the oldest arch asked for whatever the order, and ptxas
// assembles it for each arch (cubins in the order asked).
TEST(Cuda, ThePtxIsForTheOldestArch) {
  Options o = for_gpu();
  o.cuda_archs = {"sm_90", "sm_80"};
  LoweredVariant v = lower_graph(elementwise_graph(), "old_", o);
  CudaLibrary lib = link_cuda_kernels({v.object}, o);
  EXPECT_EQ(lib.ptx_arch, "sm_80");
  EXPECT_NE(lib.ptx.find(".target sm_80"), std::string::npos);
  ASSERT_EQ(lib.cubins.size(), 2u);
  EXPECT_EQ(lib.cubins[0].first, "sm_90");
  EXPECT_EQ(lib.cubins[1].first, "sm_80");
  for (const auto& [arch, cubin] : lib.cubins) EXPECT_EQ(std::string(cubin.begin(), cubin.begin() + 4), "\x7f" "ELF") << arch;
}

// A variant lowered for the GPU has the same plan (kernels, buffers, arena) as its emulation.
TEST(Cuda, EmulationRunsTheGpuPlan) {
  ir::Graph g = reduction_graph();
  LoweredVariant gpu = lower_graph(g, "p_", for_gpu()), emu = lower_graph(g, "p_", cuda_emulation());
  ASSERT_EQ(gpu.plan.calls.size(), emu.plan.calls.size());
  EXPECT_EQ(gpu.plan.arena_bytes, emu.plan.arena_bytes);
  for (size_t i = 0; i < gpu.plan.calls.size(); ++i) {
    EXPECT_EQ(gpu.plan.calls[i].symbol, emu.plan.calls[i].symbol);
    EXPECT_EQ(gpu.plan.calls[i].threads.str(), emu.plan.calls[i].threads.str());
  }
}

// cuda-weight-layout: a linear layer's weight (and slices of it, as attention's in_proj) is read
// by its matmul as a new [K, N] weight holding the transposed values; the [N, K] original is no
// longer read by the plan; an activation operand and an unpermuted weight are left alone.
TEST(Cuda, LinearWeightsAreStoredKByN) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({5, 6}), "L['x']");
  ir::ValueId w = weight(g, "w", {12, 6}, 1);  // Linear's [N, K]
  ir::ValueId k = weight(g, "k", {6, 4}, 2);   // already [K, N]
  ir::ValueId top = g.add(OpKind::Slice, {w}, attrs({{"axis", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{4}},
                                                     {"step", int64_t{1}}}));
  ir::ValueId top_t = g.add(OpKind::Permute, {top}, attrs({{"perm", Ints{1, 0}}}));
  set_outputs(g, {g.add(OpKind::Linear, {x, w}), g.add(OpKind::Matmul, {x, top_t}), g.add(OpKind::Matmul, {x, k})});
  const ir::Graph laid_out = cuda::cuda_weight_layout(decompose(g));
  std::vector<const ir::Node*> matmuls;
  for (const ir::Node& n : laid_out.nodes)
    if (n.op == OpKind::Matmul) matmuls.push_back(&n);
  ASSERT_EQ(matmuls.size(), 3u);
  const std::vector<int> weights = weight_indices(laid_out);
  auto weight_of = [&](ir::ValueId v) -> const ir::Graph::Weight* {
    const int i = weights[static_cast<size_t>(v)];
    return i < 0 ? nullptr : &laid_out.weights[static_cast<size_t>(i)];
  };
  const float* w_data = reinterpret_cast<const float*>(g.weights[0].data->data());
  for (size_t m = 0; m < 2; ++m) {  // the linear layer, then the slice of rows 0..3
    const ir::Graph::Weight* b = weight_of(matmuls[m]->operands[1]);
    ASSERT_NE(b, nullptr) << "matmul " << m << " reads its B through a view, not a laid-out weight";
    const int64_t n_out = m == 0 ? 12 : 4;
    EXPECT_EQ(laid_out.type(b->value).str(), "f32[6, " + std::to_string(n_out) + "]");
    const float* got = reinterpret_cast<const float*>(b->data->data());
    for (int64_t kk = 0; kk < 6; ++kk)
      for (int64_t n = 0; n < n_out; ++n) ASSERT_EQ(got[kk * n_out + n], w_data[n * 6 + kk]) << kk << ", " << n;
    EXPECT_NE(b->source.find("cuda_layout("), std::string::npos) << b->source;
  }
  EXPECT_EQ(matmuls[2]->operands[1], laid_out.weights[1].value);  // k as it was
  for (const ir::Node& n : laid_out.nodes) EXPECT_NE(n.op, OpKind::Permute) << "a view left computed in a kernel";
  // The whole graph still computes what it did (the CPU plan and the emulated GPU kernels).
  expect_matches_reference_in(g, -1, 1);
}

// Warp matmuls: a long K (>= 256) with few outputs takes a warp per output (lanes striding K, a
// shuffle butterfly): 32 threads per output element, `shfl.sync.bfly` in the PTX, Linear's weight
// kept [N, K] (no laid-out copy), and the emulated lanes (each computing every partial and the
// butterfly) match the reference, with a fused bias + relu epilogue; long f32 sums (a layer
// norm's rows) the same way.
TEST(Cuda, WarpMatmulsShareAnOutputAcrossALongK) {
  ir::Graph g;
  const SymExpr B = SymExpr::symbol("B");
  g.symbols["B"] = {2, 6, 1};
  ir::ValueId x = g.add_input("x", ir::TensorType{DType::f32, ir::Device{}, ir::Shape{B, 300}}, "L['x']");
  ir::ValueId a = g.add_input("a", f32({3, 5, 257}), "L['a']");
  ir::ValueId c = g.add_input("c", f32({3, 257, 7}), "L['c']");
  ir::ValueId w = weight(g, "w", {20, 300}, 1), bias = weight(g, "bias", {20}, 2);
  set_outputs(g, {g.add(OpKind::Relu, {g.add(OpKind::Linear, {x, w, bias})}), g.add(OpKind::Matmul, {a, c})});
  LoweredVariant gpu = lower_graph(g, "warp_", for_gpu());
  std::vector<std::string> launches;
  for (const auto& call : gpu.plan.calls) launches.push_back(call.threads.str());
  EXPECT_NE(std::find(launches.begin(), launches.end(), (SymExpr(640) * B).str()), launches.end())
      << "the linear layer's kernel: 20 outputs per row × 32 lanes";
  EXPECT_NE(std::find(launches.begin(), launches.end(), "3360"), launches.end()) << "3·5·7 outputs × 32 lanes";
  for (const auto& weight : gpu.graph.weights) EXPECT_EQ(weight.name.find(".cuda_"), std::string::npos) << weight.name;
  const CudaLibrary linked = link_cuda_kernels({gpu.object}, for_gpu());
  EXPECT_NE(linked.ptx.find("shfl.sync.bfly.b32"), std::string::npos);
  // The CPU plan and the emulated warps against the reference, at the three sizes' extremes and
  // between (dynamic_test.cpp: Dynamic.WarpMatmulOverASymbolicBatch runs the sizes).
  ir::Graph fixed;
  ir::ValueId fx = fixed.add_input("x", f32({4, 300}), "L['x']");
  ir::ValueId fa = fixed.add_input("a", f32({3, 5, 257}), "L['a']");
  ir::ValueId fc = fixed.add_input("c", f32({3, 257, 7}), "L['c']");
  ir::ValueId fw = weight(fixed, "w", {20, 300}, 1), fb = weight(fixed, "bias", {20}, 2);
  ir::ValueId ln_w = weight(fixed, "ln.weight", {300}, 3), ln_b = weight(fixed, "ln.bias", {300}, 4);
  set_outputs(fixed, {fixed.add(OpKind::Relu, {fixed.add(OpKind::Linear, {fx, fw, fb})}), fixed.add(OpKind::Matmul, {fa, fc}),
                      fixed.add(OpKind::LayerNorm, {fx, ln_w, ln_b}, attrs({{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}})),
                      fixed.add(OpKind::ReduceSum, {fa}, reduce_attrs({2}, false))});
  expect_matches_reference_in(fixed, -1, 1);
  // Warp sums too: the layer norm's row sums over 300 (4 rows × 32 lanes), a sum over 257.
  LoweredVariant fixed_gpu = lower_graph(fixed, "warpsum_", for_gpu());
  std::vector<std::string> fixed_launches;
  for (const auto& call : fixed_gpu.plan.calls) fixed_launches.push_back(call.threads.str());
  EXPECT_NE(std::find(fixed_launches.begin(), fixed_launches.end(), "128"), fixed_launches.end());
  EXPECT_NE(std::find(fixed_launches.begin(), fixed_launches.end(), "480"), fixed_launches.end()) << "3·5 sums × 32 lanes";
}

// Warp maxima and minima (emit_reductions.cpp through warp_combine): f32 max/min over at least
// Options::cuda_warp_reduce_min positions take a warp per output, the lanes' order-preserving
// keys meeting by shfl.sync max/min and their NaN flags by or. Rows of 300 (a softmax's max and
// sum, max, min, a max down columns) with NaN, -0 and infinities among the values; rows of 100
// become warps when the threshold is 64. Reductions to a 1-D or 0-D output are warps too (a
// total over all of x: one warp).
TEST(Cuda, WarpMaximaAndMinimaPropagateNaNAcrossLanes) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({40, 300}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({2, 300, 9}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({30, 100}), "L['z']");
  set_outputs(g, {g.add(OpKind::ReduceMax, {x}, reduce_attrs({1}, false)), g.add(OpKind::ReduceMin, {x}, reduce_attrs({1}, true)),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({0, 1}, false)), g.add(OpKind::ReduceMax, {x}, reduce_attrs({0, 1}, false)),
                  g.add(OpKind::Softmax, {x}, attrs({{"axis", int64_t{1}}})),
                  g.add(OpKind::ReduceMax, {y}, reduce_attrs({1}, false)), g.add(OpKind::ReduceMin, {z}, reduce_attrs({1}, true))});
  std::vector<ir::HostTensor> inputs = random_inputs(g, 1, -1, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  inputs[0].set(3 * 300 + 77, nan);     // row 3: NaN at lane 13's position
  inputs[0].set(5 * 300 + 299, nan);    // row 5: NaN in the last position (lane 11)
  inputs[0].set(7 * 300 + 31, inf);     // row 7: +inf is the max
  inputs[0].set(8 * 300 + 200, -inf);   // row 8: -inf is the min
  for (int64_t i = 0; i < 300; ++i) {   // row 9: all zeros of both signs
    inputs[0].set(9 * 300 + i, i % 3 == 0 ? -0.0 : 0.0);
  }
  inputs[1].set(300 * 9 + 150 * 9 + 4, nan);  // column 4 of y's second matrix
  inputs[2].set(2 * 100 + 50, nan);     // row 2 of z
  const std::multiset<std::string> launches = launches_of(lower_graph(g, "wmax_", for_gpu()));
  EXPECT_EQ(launches.count("1280"), 4u) << "the rows of x (max, min, the softmax's max and sum): 40 outputs × 32 lanes";
  EXPECT_EQ(launches.count("32"), 2u) << "x's total and maximum: a warp each";
  EXPECT_EQ(launches.count("576"), 1u) << "the columns of y: 2 × 9 × 32 lanes";
  EXPECT_EQ(launches.count("30"), 1u) << "the rows of z (100 < 256): a thread each";
  Options low = for_gpu();
  low.cuda_warp_reduce_min = 64;
  LoweredVariant lowered = lower_graph(g, "wmax64_", low);
  EXPECT_EQ(launches_of(lowered).count("960"), 1u) << "the rows of z at threshold 64: 30 × 32 lanes";
  const CudaLibrary linked = link_cuda_kernels({lowered.object}, low);
  EXPECT_NE(linked.ptx.find("shfl.sync.bfly.b32"), std::string::npos);
  EXPECT_NE(linked.ptx.find("max.s32"), std::string::npos) << "the lanes' keys meet by integer max";
  EXPECT_NE(linked.ptx.find("min.s32"), std::string::npos);
  // The CPU and the emulated warps against the reference (NaN rows NaN, -0/+0, infinities).
  expect_outputs_match(g, inputs);
  expect_outputs_match(g, inputs, std::nullopt, cuda_emulation(low));
}

// Argmax and argmin of f32 as warp (and block) reductions: a lane keeps its first best of the
// positions it scans, the lanes' (value, index) pairs meet by value, ties by the smaller index,
// so the result is the first position of the extreme, NaN first of all, as torch's. Rows of
// 300 (a warp each) with ties in one lane and across lanes, NaNs, infinities, all-equal rows;
// columns of 300 (a warp per column, strided), of 12 (a thread each); rows of 20000 (a block
// each, ties across warps) and a vocabulary of 50257 (greedy decoding's argmax: a block).
TEST(Cuda, WarpArgmaxAndArgminTakeTheFirstExtreme) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({12, 300}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({2, 20000}), "L['y']");
  ir::ValueId v = g.add_input("v", f32({1, 50257}), "L['v']");
  ir::ValueId z = g.add_input("z", f32({300, 7}), "L['z']");
  set_outputs(g, {g.add(OpKind::ArgMax, {x}, reduce_attrs({1}, false)), g.add(OpKind::ArgMin, {x}, reduce_attrs({1}, true)),
                  g.add(OpKind::ArgMax, {x}, reduce_attrs({0}, false)), g.add(OpKind::ArgMin, {y}, reduce_attrs({1}, false)),
                  g.add(OpKind::ArgMax, {v}, reduce_attrs({1}, false)), g.add(OpKind::ArgMax, {z}, reduce_attrs({0}, true))});
  std::vector<ir::HostTensor> inputs = random_inputs(g, 5, -1, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  auto at = [&](int64_t row, int64_t i, double value) { inputs[0].set(row * 300 + i, value); };
  at(0, 200, 5), at(0, 37, 5);                      // a tie across lanes (8 and 5): 37
  at(1, 10, 5), at(1, 42, 5), at(1, 10 + 64, -5);   // a tie in lane 10: 10; its min there too
  at(2, 48, nan), at(2, 33, nan);                   // NaN wins both, the first of two: 33 (lane 1
                                                    // meets lane 16's NaN last in lane 0's butterfly)
  at(3, 299, inf), at(3, 0, -inf);                  // the last position; the first
  for (int64_t i = 0; i < 300; ++i) at(4, i, -inf);  // all -inf: 0 (both)
  for (int64_t i = 0; i < 300; ++i) at(5, i, i % 2 == 0 ? 0.0 : -0.0);  // zeros of both signs: 0
  at(6, 31, 7), at(6, 32, 7);                       // neighbours in lanes 31 and 0: 31
  inputs[3].set(7 * 7 + 5, 9), inputs[3].set(11 * 7 + 5, 9), inputs[3].set(299 * 7 + 5, 9);  // z's column 5: 7
  inputs[1].set(19999, -3), inputs[1].set(300, -3), inputs[1].set(12345, -3);  // across warps: 300
  inputs[1].set(20000 + 7000, nan);                 // row 1: NaN
  inputs[2].set(50256, 4), inputs[2].set(25000, 4);  // the vocabulary's max, tied: 25000
  const LoweredVariant gpu = lower_graph(g, "argx_", for_gpu());
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("384"), 2u) << "x's rows: 12 × 32 lanes";
  EXPECT_EQ(launches.count("300"), 1u) << "x's columns of 12: a thread each";
  EXPECT_EQ(launches.count("224"), 1u) << "z's columns of 300: 7 × 32 lanes";
  EXPECT_EQ(launches.count("512"), 1u) << "y's rows: a block each";
  EXPECT_EQ(launches.count("256"), 1u) << "the vocabulary: a block";
  const std::string ptx = link_cuda_kernels({gpu.object}, for_gpu()).ptx;  // and ptxas for sm_80, sm_90
  EXPECT_NE(ptx.find("shfl.sync.bfly.b32"), std::string::npos);
  EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
  expect_outputs_match(g, inputs);  // the CPU, then the emulated warps and blocks
}

// Shared-memory reductions: sums, maxima and minima of at least 16384 positions into at most 64
// outputs take a thread block per output (256 threads: a shuffle butterfly per warp, then the
// 8 warps' totals through shared memory between barriers). A sum and a max with NaN of rows of
// 20000, and a whole-tensor sum and min (40000 positions: too few to split across the grid).
TEST(Cuda, BlockReductionsMeetInSharedMemory) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 20000}), "L['x']");
  set_outputs(g, {g.add(OpKind::ReduceSum, {x}, reduce_attrs({1}, true)), g.add(OpKind::ReduceMax, {x}, reduce_attrs({1}, false)),
                  g.add(OpKind::ReduceSum, {x}, reduce_attrs({0, 1}, false)), g.add(OpKind::ReduceMin, {x}, reduce_attrs({0, 1}, false))});
  std::vector<ir::HostTensor> inputs = random_inputs(g, 1, -1, 1);
  inputs[0].set(1 * 20000 + 12345, std::numeric_limits<double>::quiet_NaN());  // row 1's max is NaN
  LoweredVariant gpu = lower_graph(g, "block_", for_gpu());
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("512"), 2u) << "the rows' sum and max: 2 blocks of 256";
  EXPECT_EQ(launches.count("256"), 2u) << "the total and the minimum: a block each";
  const CudaLibrary linked = link_cuda_kernels({gpu.object}, for_gpu());
  EXPECT_NE(linked.ptx.find("bar.sync"), std::string::npos);
  EXPECT_NE(linked.ptx.find("st.shared"), std::string::npos);
  expect_outputs_match(g, inputs);  // the CPU, then the emulated blocks
}

// f16 and bf16 reductions (a half model's softmax and layer norm, a total) take warps and blocks
// as f32 ones do, computed in f32 and rounded once; f16 and bf16 GEMMs take the tiled GEMM on
// their own type's tensor cores (mma m16n8k16 with f32 sums: their operands are exact in it),
// unless an arch lacks them (sm_75: the f32 FMA tile); a matrix-vector product over a long K
// takes a warp per output. Rows of 300 with a NaN, a softmax and a layer norm over 768, a total
// of 20000 positions, a linear layer of 64 × 96 × 80, one token's 768 by 768 × 50; sums of 2^17
// positions split across the grid with f32 partials.
TEST(Cuda, HalfReductionsTakeWarpsAndHalfGemmsTensorCores) {
  for (ir::DType t : {ir::DType::f16, ir::DType::bf16}) {
    SCOPED_TRACE(ir::dtype_name(t));
    ir::Graph g;
    ir::ValueId x = g.add_input("x", typed(t, {40, 300}), "L['x']");
    ir::ValueId h = g.add_input("h", typed(t, {8, 768}), "L['h']");
    ir::ValueId y = g.add_input("y", typed(t, {1, 20000}), "L['y']");
    ir::ValueId a = g.add_input("a", typed(t, {64, 80}), "L['a']");
    ir::ValueId w = typed_weight(g, t, "w", {96, 80}, 3);
    ir::ValueId ln = g.add(OpKind::LayerNorm, {h, typed_weight(g, t, "lw", {768}, 4), typed_weight(g, t, "lb", {768}, 5)},
                           attrs({{"eps", 1e-5}, {"normalized_ndim", int64_t{1}}}));
    ir::ValueId token = g.add(OpKind::Reshape, {slice(g, h, 0, 0, 1)}, shape_attrs({1, 768}));  // decoding: one row
    set_outputs(g, {g.add(OpKind::ReduceMax, {x}, reduce_attrs({1}, false)), g.add(OpKind::ReduceSum, {x}, reduce_attrs({1}, true)),
                    g.add(OpKind::Softmax, {h}, attrs({{"axis", int64_t{1}}})), ln,
                    g.add(OpKind::ReduceSum, {y}, reduce_attrs({0, 1}, false)),
                    g.add(OpKind::Matmul, {a, transpose(g, w)}),
                    g.add(OpKind::Matmul, {token, transpose(g, typed_weight(g, t, "wv", {50, 768}, 6))})});
    std::vector<ir::HostTensor> inputs = random_inputs(g, 1, -1, 1);
    inputs[0].set(3 * 300 + 77, std::numeric_limits<double>::quiet_NaN());
    const LoweredVariant gpu = lower_graph(g, "half_", for_gpu());
    const std::multiset<std::string> launches = launches_of(gpu);
    EXPECT_EQ(launches.count("1280"), 2u) << "x's rows: 40 × 32 lanes";
    EXPECT_EQ(launches.count("1600"), 1u) << "the matrix-vector product: a warp per output, 50 × 32 lanes";
    EXPECT_EQ(launches.count("256"), 5u) << "the total (a block), the softmax's and the layer norm's rows (8 × 32), "
                                         << "the GEMM's block of 4 tiles: " << ::testing::PrintToString(launches);
    auto cuda_plans = [&](const std::vector<std::string>& archs) {
      Options o = for_gpu();
      o.cuda_archs = archs;
      o.dump = {"cuda-plan"};
      ::testing::internal::CaptureStderr();
      lower_graph(g, "half_plan_", o);
      return ::testing::internal::GetCapturedStderr();
    };
    const std::string plans = cuda_plans({"sm_80", "sm_90"}), old = cuda_plans({"sm_75", "sm_90"});
    EXPECT_NE(plans.find(std::string("tile 64x64x32 ") + (t == ir::DType::f16 ? "f16" : "bf16") + " mma m16n8k16"),
              std::string::npos) << plans;
    EXPECT_NE(old.find("tile 64x64x"), std::string::npos) << old;
    EXPECT_EQ(old.find("mma"), std::string::npos) << old;
    link_cuda_kernels({gpu.object}, for_gpu());  // ptxas for sm_80 and sm_90
    expect_outputs_match(g, inputs);  // the CPU, then the emulated warps, blocks and mma

    // A total of 2^18 positions splits across the grid (cuda-split-reductions) with f32
    // partials, rounded to the type once, at the end.
    ir::Graph big;
    ir::ValueId v = big.add_input("v", typed(t, {2, 131072}), "L['v']");
    set_outputs(big, {big.add(OpKind::ReduceSum, {v}, reduce_attrs({1}, false))});
    const LoweredVariant split = lower_graph(big, "half_split_", for_gpu());
    std::vector<ir::DType> sums;
    for (const ir::Node& n : split.graph.nodes)
      if (n.op == OpKind::ReduceSum) sums.push_back(split.graph.type(n.results[0]).dtype);
    EXPECT_EQ(sums, (std::vector<ir::DType>{ir::DType::f32, ir::DType::f32}));
    EXPECT_EQ(split.graph.type(split.graph.outputs[0]).dtype, t);
    expect_outputs_match(big, random_inputs(big, 2, -1, 1));
  }
}

// Sorts of at least 256 positions (topk_as_heap over a whole static axis) take a thread block
// per row: a bitonic network in the indices' output, tiles of 2048 in shared memory
// (emit_topk_block_sort). Rows of 9001 (padded to 16384: passes in global memory at distances
// 8192 down to 2048, mirror and plain), largest and smallest, in 50 value levels (ties: the
// lower index first) with NaNs of either sign and -0/+0; a sort of a computed x; f64 rows
// (slots of indices alone, compares reading x) over 2600 (a global pass); i32 rows of 700 (one
// tile of 1024, partly past the row); f16 rows of exactly two tiles; u8 rows of 513; the top
// 8000 of x's rows (cuda-sort-wide-topks: the rows sorted whole, sliced). The CPU and the
// emulated blocks against the reference.
TEST(Cuda, BlockSortsSortLongRowsThroughSharedMemoryTiles) {
  const int64_t n = 9001;
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, n}), "L['x']");
  ir::ValueId d = g.add_input("d", typed(DType::f64, {2, 2600}), "L['d']");
  ir::ValueId i = g.add_input("i", typed(DType::i32, {1, 700}), "L['i']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {1, 4096}), "L['h']");
  ir::ValueId u = g.add_input("u", typed(DType::u8, {2, 513}), "L['u']");
  ir::ValueId computed = g.add(OpKind::Add, {g.add(OpKind::Mul, {x, g.constant(-2, DType::f32)}), g.constant(1, DType::f32)});
  auto sort = [&](ir::ValueId v, int64_t k, bool largest) { return topk_of(g, v, k, 1, largest); };
  std::vector<ir::ValueId> a = sort(x, n, true), b = sort(x, n, false), c = sort(computed, n, false);
  std::vector<ir::ValueId> e = sort(d, 2600, true), f = sort(i, 700, false), p = sort(h, 4096, true), q = sort(u, 513, true);
  std::vector<ir::ValueId> short_of_row = sort(x, 8000, true);
  set_outputs(g, {a[0], a[1], b[0], b[1], c[1], e[0], e[1], f[0], f[1], p[1], q[0], q[1], short_of_row[1]});
  std::vector<ir::HostTensor> in = random_inputs(g, 11, -3, 3);
  for (int64_t v = 0; v < 3 * n; ++v) in[0].set(v, static_cast<double>(v * 7919 % 50) / 8 - 3);
  for (int64_t v : {int64_t{3}, int64_t{4096}, n + 8999, 2 * n + 2048}) in[0].set(v, v % 2 ? -NAN : NAN);
  for (int64_t v : {20, 21, 22}) in[0].set(v, v == 21 ? -0.0 : 0.0);
  for (int64_t v = 0; v < 5200; v += 3) in[1].set(v, static_cast<double>(v % 7));  // ties
  in[1].set(1000, NAN);
  for (int64_t v = 0; v < 700; ++v) in[2].set(v, static_cast<double>(v * 31 % 97) - 48);
  for (int64_t v = 0; v < 4096; v += 5) in[3].set(v, static_cast<double>(v % 3));
  for (int64_t v = 0; v < 1026; ++v) in[4].set(v, static_cast<double>(v * 37 % 256));
  LoweredVariant gpu = lower_graph(g, "bsort_", for_gpu());
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("768"), 4u) << "x's sorts and its top 8000 (its rows sorted whole): 3 rows × 256 threads";
  EXPECT_EQ(launches.count("512"), 2u) << "d's and u's: 2 rows × 256 threads";
  EXPECT_EQ(launches.count("256"), 2u) << "i's and h's: a row × 256 threads";
  const CudaLibrary linked = link_cuda_kernels({gpu.object}, for_gpu());  // ptxas for sm_80 and sm_90
  EXPECT_NE(linked.ptx.find("bar.sync"), std::string::npos);
  EXPECT_NE(linked.ptx.find("st.shared.u64"), std::string::npos);
  expect_outputs_match(g, in);  // the CPU, then the emulated blocks
}

// cumsums along an innermost axis of at least 256 take a thread block per row, 2048 positions a
// tile, 8 a thread (emit_scan_block): rows of 5000 (three tiles, the last partial) of eighths
// (exact sums in any order: any misplaced term shows) and of an exp computed in the kernel
// (rounding in the block's order of sums); i32 rows of 300 into i64 (one partial tile, threads
// past the row); f16 rows of 2100. A cumsum along a leading axis or of short rows stays a
// thread per row. The CPU and the emulated blocks against the reference.
TEST(Cuda, BlockScansSumLongRowsTileByTile) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({3, 5000}), "L['x']");
  ir::ValueId i = g.add_input("i", typed(DType::i32, {2, 300}), "L['i']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {1, 2100}), "L['h']");
  ir::ValueId y = g.add_input("y", f32({300, 4}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({5, 100}), "L['z']");
  auto cumsum = [&](ir::ValueId v, int64_t axis) { return g.add(OpKind::CumSum, {v}, attrs({{"axis", axis}})); };
  ir::ValueId probabilities = g.add(OpKind::Exp, {g.add(OpKind::Mul, {x, g.constant(-1, DType::f32)})});
  set_outputs(g, {cumsum(x, 1), cumsum(probabilities, 1), cumsum(i, 1), cumsum(h, 1), cumsum(y, 0), cumsum(z, 1)});
  std::vector<ir::HostTensor> in = random_inputs(g, 5, 0, 3);
  for (int64_t v = 0; v < 15000; ++v) in[0].set(v, static_cast<double>(v * 7919 % 49 - 24) / 8);
  for (int64_t v = 0; v < 2100; ++v) in[2].set(v, static_cast<double>(v % 5) / 64);  // sums exact in f32
  LoweredVariant gpu = lower_graph(g, "bscan_", for_gpu());
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("768"), 2u) << "x's cumsums: 3 rows × 256 threads";
  EXPECT_EQ(launches.count("512"), 1u) << "i's: 2 rows × 256 threads";
  EXPECT_EQ(launches.count("256"), 1u) << "h's: a row × 256 threads";
  EXPECT_EQ(launches.count("4"), 1u) << "y's columns: a thread each";
  EXPECT_EQ(launches.count("5"), 1u) << "z's rows of 100: a thread each";
  const CudaLibrary linked = link_cuda_kernels({gpu.object}, for_gpu());  // ptxas for sm_80 and sm_90
  EXPECT_NE(linked.ptx.find("bar.sync"), std::string::npos);
  expect_outputs_match(g, in);  // the CPU, then the emulated blocks
}

// Scatters along an innermost axis of at least 256 take a thread block per row, the index's row
// a chunk of 256 at a time (emit_scatter_block): rows of 700 written from 600 positions in 40
// targets (repeats within a chunk and across chunks: the last write wins; accumulating, sums in
// order); f16 sums from more index positions than the row has (rounded after each add); an index
// with fewer rows than self (the rows past it keep self); i32 indices into i64 sums; a bool
// permutation over 5003 (top-p sampling's mask put back). A scatter along a leading axis stays a
// thread per row. The CPU and the emulated blocks against the reference; then out-of-range
// targets (negative, past the row), which write nothing, by hand.
TEST(Cuda, BlockScattersKeepTheLastWriteAndSumInOrder) {
  ir::Graph g;
  auto scatter = [&](ir::ValueId self, ir::ValueId index, ir::ValueId src, int64_t axis, bool accumulate) {
    return g.add(OpKind::Scatter, {self, index, src}, attrs({{"axis", axis}, {"accumulate", int64_t{accumulate}}}));
  };
  ir::ValueId x = g.add_input("x", f32({3, 700}), "L['x']");
  ir::ValueId xi = g.add_input("xi", typed(DType::i64, {3, 600}), "L['xi']");
  ir::ValueId xs = g.add_input("xs", f32({3, 600}), "L['xs']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {2, 300}), "L['h']");
  ir::ValueId hi = g.add_input("hi", typed(DType::i64, {2, 500}), "L['hi']");
  ir::ValueId hs = g.add_input("hs", typed(DType::f16, {2, 500}), "L['hs']");
  ir::ValueId l = g.add_input("l", typed(DType::i64, {4, 300}), "L['l']");
  ir::ValueId li = g.add_input("li", typed(DType::i32, {2, 280}), "L['li']");
  ir::ValueId m = g.add_input("m", typed(DType::b8, {1, 5003}), "L['m']");
  ir::ValueId p = g.add_input("p", typed(DType::i64, {1, 5003}), "L['p']");
  ir::ValueId y = g.add_input("y", f32({300, 4}), "L['y']");
  ir::ValueId yi = g.add_input("yi", typed(DType::i64, {200, 4}), "L['yi']");
  set_outputs(g, {scatter(x, xi, xs, 1, false), scatter(x, xi, g.add(OpKind::Neg, {xs}), 1, true), scatter(h, hi, hs, 1, true),
                  scatter(l, li, l, 1, true), scatter(l, li, l, 1, false), scatter(m, p, g.add(OpKind::Not, {m}), 1, false),
                  scatter(y, yi, y, 0, false)});
  std::vector<ir::HostTensor> in = random_inputs(g, 9, -3, 3);
  for (int64_t v = 0; v < 1800; ++v) in[1].set(v, static_cast<double>((v * 7 + v / 300) % 40 * 17));  // 40 targets
  for (int64_t v = 0; v < 1000; ++v) in[4].set(v, static_cast<double>(v * 13 % 300));
  for (int64_t v = 0; v < 560; ++v) in[7].set(v, static_cast<double>(v * 11 % 31 * 9));
  for (int64_t v = 0; v < 5003; ++v) in[8].set(v, static_cast<double>(v % 3 == 0));
  for (int64_t v = 0; v < 5003; ++v) in[9].set(v, static_cast<double>(v * 2011 % 5003));  // a permutation
  for (int64_t v = 0; v < 800; ++v) in[11].set(v, static_cast<double>(v * 7 % 300));
  LoweredVariant gpu = lower_graph(g, "bscatter_", for_gpu());
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("768"), 2u) << "x's scatters: 3 rows × 256 threads";
  EXPECT_EQ(launches.count("512"), 1u) << "h's: 2 rows × 256 threads";
  EXPECT_EQ(launches.count("1024"), 2u) << "l's: 4 rows × 256 threads";
  EXPECT_EQ(launches.count("256"), 1u) << "m's: a row × 256 threads";
  EXPECT_EQ(launches.count("4"), 1u) << "y's along its leading axis: a thread per column";
  const CudaLibrary linked = link_cuda_kernels({gpu.object}, for_gpu());  // ptxas for sm_80 and sm_90
  EXPECT_NE(linked.ptx.find("bar.sync"), std::string::npos);
  expect_outputs_match(g, in);  // the CPU, then the emulated blocks

  // Out of range: nothing written (torch raises; the reference too, so by hand).
  ir::Graph r;
  ir::ValueId rx = r.add_input("x", f32({1, 300}), "L['x']");
  ir::ValueId ri = r.add_input("i", typed(DType::i64, {1, 260}), "L['i']");
  ir::ValueId rs = r.add_input("s", f32({1, 260}), "L['s']");
  set_outputs(r, {r.add(OpKind::Scatter, {rx, ri, rs}, attrs({{"axis", int64_t{1}}, {"accumulate", int64_t{0}}}))});
  std::vector<ir::HostTensor> rin = random_inputs(r, 3, 1, 2);
  for (int64_t v = 0; v < 260; ++v) rin[1].set(v, v % 3 == 0 ? static_cast<double>(v) : v % 3 == 1 ? -1.0 - v : 300.0 + v);
  std::vector<ir::HostTensor> out = compile_and_run(r, rin, nullptr, cuda_emulation(Options{}));
  for (int64_t q = 0; q < 300; ++q)
    EXPECT_EQ(out[0].get(q), q < 260 && q % 3 == 0 ? rin[2].get(q) : rin[0].get(q)) << q;
}

// cuda-sort-wide-topks: a topk of k < n over a static axis of at least 256 (and shorter than
// 4096, or k past 1024, or integer: not by chunks) sorts its rows whole (a thread block per row),
// slices the first k indices and gathers the values: top-200 and bottom-5 of 3000 with ties and
// NaNs of either sign, f16 rows of 700, a leading axis of 3000. A symbolic axis, a short one
// and one whose sorted indices would pass 2^22 slots stay topks.
TEST(Cuda, WideTopksSortTheirRows) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 3000}), "L['x']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {1, 700}), "L['h']");
  ir::ValueId y = g.add_input("y", f32({3000, 2}), "L['y']");
  std::vector<ir::ValueId> a = topk_of(g, x, 200, 1, true), b = topk_of(g, x, 5, 1, false);
  std::vector<ir::ValueId> c = topk_of(g, h, 10, 1, true), d = topk_of(g, y, 7, 0, false);
  set_outputs(g, {a[0], a[1], b[0], b[1], c[0], c[1], d[0], d[1]});
  std::vector<ir::HostTensor> in = random_inputs(g, 13, -3, 3);
  for (int64_t v = 0; v < 6000; ++v) in[0].set(v, static_cast<double>(v * 7919 % 300) / 50 - 3);
  for (int64_t v : {int64_t{7}, int64_t{2999}, int64_t{3100}}) in[0].set(v, v % 2 ? -NAN : NAN);
  for (int64_t v = 0; v < 6000; v += 4) in[2].set(v, static_cast<double>(v % 5));
  LoweredVariant gpu = lower_graph(g, "wtopk_", for_gpu());
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("512"), 3u) << "x's two sorts and y's: 2 rows × 256 threads";
  EXPECT_EQ(launches.count("256"), 1u) << "h's sort: a row × 256 threads";
  expect_outputs_match(g, in);  // the CPU, then the emulated blocks

  ir::Graph stays;
  stays.symbols["T"] = {600, 5000, 1};
  ir::ValueId s = stays.add_input("s", ir::TensorType{DType::f32, ir::Device{}, ir::Shape{SymExpr(2), SymExpr::symbol("T")}}, "L['s']");
  ir::ValueId shorter = stays.add_input("short", f32({8, 255}), "L['short']");
  ir::ValueId many = stays.add_input("many", f32({4097, 1024}), "L['many']");
  ir::ValueId fits = stays.add_input("fits", f32({4096, 1024}), "L['fits']");
  set_outputs(stays, {topk_of(stays, s, 10, 1, true)[1], topk_of(stays, shorter, 10, 1, true)[1],
                      topk_of(stays, many, 10, 1, true)[1], topk_of(stays, fits, 10, 1, true)[1]});
  std::vector<int64_t> ks;
  const ir::Graph rewritten = cuda::cuda_sort_wide_topks(stays, Options{}.cuda_block_row_min);
  for (const ir::Node& n : rewritten.nodes)
    if (n.op == OpKind::TopK) ks.push_back(n.attrs.i("k"));
  EXPECT_EQ(ks, (std::vector<int64_t>{10, 10, 10, 1024})) << "only fits' rows sorted whole";
}

// A floating topk of k <= 1024 over 4096 or more positions goes by chunks of 2048 (padded with
// what loses to every element), a block sorting each, the chunks' k best the candidates of a
// topk of k again: top-k sampling's top-200 of 50257 (25 chunks, then 3, then a sort of 600);
// the bottom 100 of 9001 with NaNs of either sign (last) and ties across chunks (the lower index
// first); f16 rows of 5000; f64 with k = 1024 (the largest by chunks); rows mostly NaN (smallest:
// the NaNs come before the padding) and mostly -inf (largest: ties with the padding by index).
// k = 1025 and i32 rows sort whole instead.
TEST(Cuda, NarrowTopksOfLongRowsGoByChunks) {
  ir::Graph g;
  ir::ValueId v = g.add_input("v", f32({1, 50257}), "L['v']");
  ir::ValueId x = g.add_input("x", f32({3, 9001}), "L['x']");
  ir::ValueId h = g.add_input("h", typed(DType::f16, {2, 5000}), "L['h']");
  ir::ValueId d = g.add_input("d", typed(DType::f64, {1, 4500}), "L['d']");
  ir::ValueId i = g.add_input("i", typed(DType::i32, {1, 5000}), "L['i']");
  ir::ValueId w = g.add_input("w", f32({2, 4500}), "L['w']");
  std::vector<ir::ValueId> a = topk_of(g, v, 200, 1, true), b = topk_of(g, x, 100, 1, false), c = topk_of(g, h, 10, 1, true);
  std::vector<ir::ValueId> e = topk_of(g, d, 1024, 1, true), f = topk_of(g, x, 1025, 1, true), j = topk_of(g, i, 10, 1, false);
  // w's rows mostly NaN (row 0) and -inf (row 1): the k reach them, never the padding.
  std::vector<ir::ValueId> m = topk_of(g, w, 1000, 1, false), l = topk_of(g, w, 1000, 1, true);
  set_outputs(g, {a[0], a[1], b[0], b[1], c[0], c[1], e[0], e[1], f[0], f[1], j[0], j[1], m[0], m[1], l[0], l[1]});
  std::vector<ir::HostTensor> in = random_inputs(g, 17, -3, 3);
  for (int64_t p = 0; p < 3 * 9001; ++p) in[1].set(p, static_cast<double>(p * 7919 % 200) / 40 - 2.5);  // ties everywhere
  for (int64_t p : {int64_t{5}, int64_t{4000}, int64_t{9000}, int64_t{9001 + 2047}, int64_t{2 * 9001 + 8999}}) in[1].set(p, p % 2 ? -NAN : NAN);
  for (int64_t p = 0; p < 10000; p += 3) in[2].set(p, 2.5);  // f16 ties across chunks
  for (int64_t p = 0; p < 9000; ++p)
    if (p % 9 != 0) in[5].set(p, p < 4500 ? NAN : -INFINITY);
  std::vector<int64_t> ks;
  for (const ir::Node& n : cuda::cuda_sort_wide_topks(g, Options{}.cuda_block_row_min).nodes)
    if (n.op == OpKind::TopK) ks.push_back(n.attrs.i("k"));
  std::sort(ks.begin(), ks.end());
  // Chunks sorted whole (2048 each) for v (twice), x, h, d and w's two; the last stages: v 600,
  // x 500, w's 3000 sorted whole, h a topk of 10 of 30, d 3072 sorted whole; x's 1025 and i's
  // sorted whole.
  EXPECT_EQ(ks, (std::vector<int64_t>{10, 500, 600, 2048, 2048, 2048, 2048, 2048, 2048, 2048, 3000, 3000, 3072, 5000, 9001}));
  expect_outputs_match(g, in);  // the CPU, then the emulated blocks
}

// cuda-split-reductions: sums, maxima and minima of at least 32 × 2048 positions into few
// outputs are two reductions, the first a warp per chunk of the positions (the whole grid), the
// second over the partials. A whole-tensor sum of squares (its prologue fused into the first),
// a keepdim max over consecutive trailing axes (NaN and -inf in it), a sum over a leading axis
// (the kept axis innermost), a min over two axes that are not neighbours, and a sum of a prime
// count of positions that cannot split (a block, as before).
TEST(Cuda, HugeReductionsSplitAcrossTheGrid) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({2, 128, 1024}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({65536, 4}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({64, 4, 1024}), "L['z']");
  ir::ValueId w = g.add_input("w", f32({65537}), "L['w']");
  ir::ValueId squares = g.add(OpKind::Mul, {x, x});
  set_outputs(g, {g.add(OpKind::ReduceSum, {squares}, reduce_attrs({0, 1, 2}, false)),
                  g.add(OpKind::ReduceMax, {x}, reduce_attrs({1, 2}, true)), g.add(OpKind::ReduceSum, {y}, reduce_attrs({0}, false)),
                  g.add(OpKind::ReduceMin, {z}, reduce_attrs({0, 2}, false)), g.add(OpKind::ReduceSum, {w}, reduce_attrs({0}, false))});
  std::vector<ir::HostTensor> inputs = random_inputs(g, 3, 0.5, 1.5);
  inputs[0].set(1 * 131072 + 77 * 1024 + 5, std::numeric_limits<double>::quiet_NaN());  // batch 1's max is NaN
  inputs[0].set(0 * 131072 + 3 * 1024 + 1000, 1e30);                                     // batch 0's max
  inputs[2].set(40 * 4096 + 2 * 1024 + 999, -std::numeric_limits<double>::infinity());  // z's third min
  const LoweredVariant gpu = lower_graph(g, "split_", for_gpu());
  size_t reductions = 0;
  for (const ir::Node& n : gpu.graph.nodes) reductions += ir::op_info(n.op).category == ir::OpCategory::Reduce;
  EXPECT_EQ(reductions, 9u) << "four reductions in two, the prime count's one";
  std::multiset<std::string> views;  // the split inputs: [parts, chunk] where the run of reduced axes was
  for (const ir::Node& n : gpu.graph.nodes)
    if (n.op == OpKind::Reshape) views.insert(ir::shape_str(gpu.graph.type(n.results[0]).shape));
  EXPECT_EQ(views, (std::multiset<std::string>{"[128, 2048]", "[2, 64, 2048]", "[2, 64, 1, 1]", "[32, 2048, 4]", "[64, 4, 32, 32]"}))
      << "the max's partials viewed as [2, 1, 1] with the parts after the batch";
  EXPECT_EQ(gpu.plan.calls.size(), 9u) << "a kernel per reduction: the squares and the views inlined";
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("4096"), 4u) << "the first reductions: 128 chunks of 2048 (1 × 128, 2 × 64, 4 × 32, 4 × 32) × 32 lanes";
  EXPECT_EQ(launches.count("1"), 1u) << "the total's 128 partials: one thread";
  EXPECT_EQ(launches.count("2"), 1u) << "the max's 2 × 64 partials: a thread per batch";
  EXPECT_EQ(launches.count("4"), 2u) << "y's and z's 4 × 32 partials: a thread per output";
  EXPECT_EQ(launches.count("256"), 1u) << "w's 65537 positions do not split: a block";
  const Options never = [] {
    Options o = for_gpu();
    o.cuda_split_reduce_chunk = int64_t{1} << 40;
    return o;
  }();
  const std::multiset<std::string> unsplit = launches_of(lower_graph(g, "unsplit_", never));
  EXPECT_EQ(unsplit.count("256"), 2u) << "unsplit: the total and w's sum, a block each";
  EXPECT_EQ(unsplit.count("512"), 1u) << "the max: a block per batch";
  EXPECT_EQ(unsplit.count("1024"), 2u) << "y's and z's sums: a block per output";
  const std::string ptx = link_cuda_kernels({gpu.object}, for_gpu()).ptx;
  EXPECT_NE(ptx.find("shfl.sync.bfly.b32"), std::string::npos);
  // A lane's loop over its 64 positions unrolled by 4 (lane_loop): four loads in flight a lane.
  for (const ir::KernelCall& call : gpu.plan.calls) {
    if (call.threads.str() != "4096") continue;
    const std::string text = kernel_ptx(ptx, call.symbol);
    size_t loads = 0;
    for (size_t at = text.find("ld.global.nc.f32"); at != std::string::npos; at = text.find("ld.global.nc.f32", at + 1)) ++loads;
    EXPECT_GE(loads, 4u) << text;
  }
  expect_outputs_match(g, inputs);  // the CPU, then the emulated split reductions
}

// Argmax and argmin of as many positions split too (split_arg_reduction): each chunk's first
// extreme, those extremes gathered, the first chunk holding the overall one, its start plus the
// index within it. A whole-tensor argmax whose max is tied within a chunk and across chunks, an
// argmin of the same tensor, rows with two NaNs in different chunks (the argmin is the first NaN)
// and with a min of -inf tied across neighbouring chunks, columns (a strided split) with a tied
// max and NaNs, and a prime count of positions that does not split.
TEST(Cuda, HugeArgReductionsSplitAcrossTheGrid) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", f32({262144}), "L['x']");
  ir::ValueId y = g.add_input("y", f32({2, 65536}), "L['y']");
  ir::ValueId z = g.add_input("z", f32({65536, 3}), "L['z']");
  ir::ValueId w = g.add_input("w", f32({65537}), "L['w']");
  set_outputs(g, {g.add(OpKind::ArgMax, {x}, reduce_attrs({0}, false)), g.add(OpKind::ArgMin, {x}, reduce_attrs({0}, false)),
                  g.add(OpKind::ArgMin, {y}, reduce_attrs({1}, true)), g.add(OpKind::ArgMax, {z}, reduce_attrs({0}, false)),
                  g.add(OpKind::ArgMax, {w}, reduce_attrs({0}, true))});
  std::vector<ir::HostTensor> inputs = random_inputs(g, 4, -1, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  inputs[0].set(200000, 7), inputs[0].set(5000, 7), inputs[0].set(4100, 7);  // chunk 2's 4100 first
  inputs[0].set(262143, -3), inputs[0].set(131072, -3);                       // the min: 131072
  inputs[1].set(50000, nan), inputs[1].set(3000, nan), inputs[1].set(2, -9);  // row 0: NaN at 3000
  inputs[1].set(65536 + 60000, -inf), inputs[1].set(65536 + 2047, -inf);      // row 1: 2047, the end of
  inputs[1].set(65536 + 2048, -inf);                                          // chunk 0 (2048 ties it)
  inputs[2].set(64000 * 3 + 1, 9), inputs[2].set(33000 * 3 + 1, 9);            // column 1: 33000
  inputs[2].set(40000 * 3, nan), inputs[2].set(65535 * 3, nan);                // column 0: 40000
  inputs[3].set(65536, 5), inputs[3].set(7, 5);                                // w: 7
  const LoweredVariant gpu = lower_graph(g, "argsplit_", for_gpu());
  size_t arg_reductions = 0, gathers = 0;
  for (const ir::Node& n : gpu.graph.nodes) {
    arg_reductions += n.op == OpKind::ArgMax || n.op == OpKind::ArgMin;
    gathers += n.op == OpKind::Gather;
  }
  EXPECT_EQ(arg_reductions, 9u) << "four in two, the prime count's one";
  EXPECT_EQ(gathers, 8u) << "the chunks' extremes and the chosen chunk's index, per split";
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("4096"), 2u) << "x's argmax and argmin: 128 chunks of 2048 × 32 lanes";
  EXPECT_EQ(launches.count("2048"), 1u) << "y's rows: 2 × 32 chunks × 32 lanes";
  EXPECT_EQ(launches.count("3072"), 1u) << "z's columns: 3 × 32 chunks × 32 lanes";
  EXPECT_EQ(launches.count("256"), 1u) << "w's 65537 positions do not split: a block";
  link_cuda_kernels({gpu.object}, for_gpu());  // ptxas for sm_80 and sm_90
  expect_outputs_match(g, inputs);             // the CPU, then the emulated split arg-reductions
}

// Tiled GEMMs (emit_tiled_gemm.cpp): matmuls and convs that are not warp matmuls take a thread
// block per 64×64 tile of C, staging A's and B's slices in shared memory between barriers. Edges
// in every dim (K not a multiple of the step), a batch broadcast against a weight, A transposed
// (loaded along M), B as [N, K] (loaded along K), a residual add, and a strided, padded conv with
// bias and relu as epilogues; emulated (each phase a loop over the block's threads) against the
// reference, and the PTX has the barriers and the shared-memory vector loads.
// Matmuls and a conv with edges in M, N and K (K = 37, not a multiple of a step), a batch
// broadcast against a weight with bias + GELU, A transposed, B as [N, K], a residual add, a
// strided padded conv with bias + ReLU. `weight_of` makes the weights.
ir::Graph tiled_gemm_graph(const std::function<ir::ValueId(ir::Graph&, const std::string&, Ints, uint32_t)>& weight_of) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({3, 70, 37}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({3, 37, 67}), "L['b']");
  ir::ValueId at = g.add_input("at", f32({37, 70}), "L['at']");
  ir::ValueId bt = g.add_input("bt", f32({67, 37}), "L['bt']");
  ir::ValueId r = g.add_input("r", f32({70, 67}), "L['r']");
  ir::ValueId x = g.add_input("x", f32({2, 8, 13, 11}), "L['x']");
  ir::ValueId w = weight_of(g, "w", {20, 37}, 1), bias = weight_of(g, "bias", {20}, 2);
  ir::ValueId cw = weight_of(g, "cw", {24, 8, 3, 3}, 3), cb = weight_of(g, "cb", {24}, 4);
  ir::ValueId c = g.add_input("c", f32({37, 67}), "L['c']");
  ir::ValueId a2 = g.add(OpKind::Reshape, {slice(g, a, 0, 1, 2)}, shape_attrs({70, 37}));
  set_outputs(g, {g.add(OpKind::Matmul, {a, b}),
                  g.add(OpKind::Gelu, {g.add(OpKind::Linear, {a, w, bias})}, attrs({{"approximate", std::string("none")}})),
                  g.add(OpKind::Matmul, {transpose(g, at), c}),
                  g.add(OpKind::Add, {g.add(OpKind::Matmul, {a2, transpose(g, bt)}), r}),
                  g.add(OpKind::Relu, {g.add(OpKind::Conv, {x, cw, cb}, conv_attrs({2, 2}, {1, 1}))})});
  return g;
}

// The launches of tiled_gemm_graph: a block of 256 threads per 64 × 64 tile.
void expect_tiled_launches(const LoweredVariant& gpu) {
  const std::multiset<std::string> launches = launches_of(gpu);
  EXPECT_EQ(launches.count("3072"), 1u) << "a @ b: 3 batches × 2 × 2 tiles × 256 threads";
  EXPECT_EQ(launches.count("1536"), 1u) << "the linear layer: 3 × 2 × 1 tiles";
  EXPECT_EQ(launches.count("1024"), 2u) << "the two 70 × 67 matmuls: 2 × 2 tiles each";
  EXPECT_EQ(launches.count("512"), 1u) << "the conv: 2 images × 1 × 1 tiles (24 channels, 7·6 columns)";
}

TEST(Cuda, TiledGemmsStageTilesInSharedMemory) {
  const ir::Graph g = tiled_gemm_graph(weight);
  LoweredVariant gpu = lower_graph(g, "tiled_", for_gpu());
  expect_tiled_launches(gpu);
  const CudaLibrary linked = link_cuda_kernels({gpu.object}, for_gpu());
  EXPECT_NE(linked.ptx.find("bar.sync"), std::string::npos);
  EXPECT_NE(linked.ptx.find("ld.shared.v4.f32"), std::string::npos);
  EXPECT_NE(linked.ptx.find("st.shared.f32"), std::string::npos);
  EXPECT_EQ(linked.ptx.find("mma.sync"), std::string::npos) << "f32 unless cuda_math says otherwise";
  expect_matches_reference_in(g, -1, 1);
}

// `x` rounded to a multiple of 1/128: at most 7 significant bits in [-1, 1), exact in TF32,
// f16 and bf16, so tensor-core products of such values are exact and their f32 sums match the
// reference's as f32 do.
float mma_exact(double x) { return static_cast<float>(std::round(x * 128) / 128); }

ir::ValueId mma_exact_weight(ir::Graph& g, const std::string& name, Ints dims, uint32_t seed) {
  ir::HostTensor t = random_tensor(dims, seed, -1, 1, DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, mma_exact(t.get(i)));
  return g.add_weight(name, f32(dims), "L['self']." + name, std::make_shared<const ir::Bytes>(t.data));
}

Options gpu_with(Options::CudaMath math) {
  Options o = for_gpu();
  o.cuda_math = math;
  return o;
}

// Per tensor-core math: the mma it issues, the conversion that rounds its operands.
struct MmaCase {
  Options::CudaMath math;
  const char* mma;
  const char* rounding;  // in the PTX
};
const MmaCase kMmaCases[] = {
    {Options::CudaMath::tf32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32"},
    {Options::CudaMath::f16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "cvt.rn.f16.f32"},
    {Options::CudaMath::bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "cvt.rn.bf16.f32"}};

TEST(Cuda, TensorCoreTiledGemmsMatchOnExactOperands) {
  const ir::Graph g = tiled_gemm_graph(mma_exact_weight);
  std::vector<ir::HostTensor> inputs = random_inputs(g, 1, -1, 1);
  for (ir::HostTensor& t : inputs)
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, mma_exact(t.get(i)));
  for (const MmaCase& m : kMmaCases) {
    SCOPED_TRACE(cuda_math_name(m.math));
    LoweredVariant gpu = lower_graph(g, "mma_", gpu_with(m.math));
    expect_tiled_launches(gpu);
    const CudaLibrary linked = link_cuda_kernels({gpu.object}, gpu_with(m.math));
    EXPECT_NE(linked.ptx.find(m.mma), std::string::npos);
    EXPECT_NE(linked.ptx.find(m.rounding), std::string::npos);
    EXPECT_NE(linked.ptx.find("bar.sync"), std::string::npos);
    EXPECT_EQ(linked.cubins.size(), 2u) << "ptxas assembles the mma for sm_80 and sm_90";
    // Emulated (the fragments through the PTX ISA's tables both ways) on exact operands: the f32
    // tolerance of every other reference check.
    expect_outputs_match(g, inputs, std::nullopt, cuda_emulation(gpu_with(m.math)));
  }
}

// Two stages (hidden `compile --cuda-gemm-stages 2`): the tiles double-buffered, a step's global
// loads in registers while the other stage's products are computed. The tiled graph (K = 37: 5
// steps of 8, 2 of 32; the conv's 72: 9 and 3) and a matmul of one step (K = 8 for f32, 20 for
// the mma's 32), per math, emulated against the reference: the emulation stores the next step's
// tiles before this step's products (nothing on the GPU orders the two), so reading the stage
// being written, writing the one being read, or one stage for both is a wrong number there.
// ptxas builds them, with both stages' tiles in static shared memory. (Barriers themselves are
// for compute-sanitizer's synccheck/racecheck on a GPU: tools/gpu/device_check.sh.)
TEST(Cuda, TwoStageTiledGemmsLoadTheNextStepDuringThisOne) {
  ir::Graph one_step;
  ir::ValueId a = one_step.add_input("a", f32({40, 20}), "L['a']");
  ir::ValueId b = one_step.add_input("b", f32({20, 33}), "L['b']");
  ir::ValueId a8 = one_step.add(OpKind::Reshape, {slice(one_step, a, 1, 0, 8)}, shape_attrs({40, 8}));
  ir::ValueId b8 = one_step.add(OpKind::Reshape, {slice(one_step, b, 0, 0, 8)}, shape_attrs({8, 33}));
  set_outputs(one_step, {one_step.add(OpKind::Matmul, {a, b}), one_step.add(OpKind::Matmul, {a8, b8})});
  for (Options::CudaMath math :
       {Options::CudaMath::f32, Options::CudaMath::tf32, Options::CudaMath::f16, Options::CudaMath::bf16}) {
    SCOPED_TRACE(cuda_math_name(math));
    Options o = gpu_with(math);
    o.cuda_gemm_stages = 2;
    const ir::Graph g = tiled_gemm_graph(math == Options::CudaMath::f32 ? weight : mma_exact_weight);
    Options dumped = o;
    dumped.dump = {"cuda-plan"};
    ::testing::internal::CaptureStderr();
    LoweredVariant gpu = lower_graph(g, "stages_", dumped);
    const std::string plans = ::testing::internal::GetCapturedStderr();
    expect_tiled_launches(gpu);
    size_t staged = 0;
    for (size_t at = plans.find(" 2 stages"); at != std::string::npos; at = plans.find(" 2 stages", at + 1)) ++staged;
    EXPECT_EQ(staged, 5u) << "every tiled kernel has two stages:\n" << plans;
    ::testing::internal::CaptureStderr();
    lower_graph(one_step, "one_step_", dumped);
    const std::string one_step_plans = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(one_step_plans.find("k 20 | tile 64x64x"), std::string::npos) << one_step_plans;
    EXPECT_NE(one_step_plans.find("k 8 | tile 64x64x"), std::string::npos) << one_step_plans;
    const CudaLibrary linked = link_cuda_kernels({gpu.object}, o);
    EXPECT_EQ(linked.cubins.size(), 2u);
    // Both stages' tiles (2 × bk × (64 + 64 + 2·pad) floats) or the C tile (64 × (64 + pad)),
    // whichever is larger, in bytes: f32 max(2·8·136, 64·68)·4, TF32 2·32·144·4, bf16 2·32·136·4.
    // (f32's C tile is the larger: this checks the mma's stages only.)
    const char* tiles = math == Options::CudaMath::f32 ? "_tiles[17408]" : math == Options::CudaMath::tf32 ? "_tiles[36864]" : "_tiles[34816]";
    EXPECT_NE(linked.ptx.find(tiles), std::string::npos) << tiles;
    std::vector<ir::HostTensor> inputs = random_inputs(g, 1, -1, 1);
    if (math != Options::CudaMath::f32)
      for (ir::HostTensor& t : inputs)
        for (int64_t i = 0; i < t.numel(); ++i) t.set(i, mma_exact(t.get(i)));
    expect_outputs_match(g, inputs, std::nullopt, cuda_emulation(o));
    std::vector<ir::HostTensor> small = random_inputs(one_step, 2, -1, 1);
    for (ir::HostTensor& t : small)
      for (int64_t i = 0; i < t.numel(); ++i) t.set(i, mma_exact(t.get(i)));
    expect_outputs_match(one_step, small, std::nullopt, cuda_emulation(o));
  }
}

// The rounding of operands: TF32 to nearest with ties away from zero (cvt.rna), f16 and bf16 to
// nearest even, f16 to infinity past 65504; as the emulation does it.
TEST(Cuda, TensorCoreOperandsRoundAsTheirTypes) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", f32({16, 24}), "L['a']");
  ir::ValueId b = g.add_input("b", f32({24, 16}), "L['b']");
  set_outputs(g, {g.add(OpKind::Matmul, {a, b})});
  // Row r of A holds one value in column r (else 0); B is all ones: C[r][c] is that value as
  // the operand type (ulp: the spacing above 1: 2^-10 for TF32 and f16, 2^-7 for bf16).
  const double inf = std::numeric_limits<double>::infinity();
  auto cases_for = [&](Options::CudaMath math) {
    const double ulp = std::ldexp(1.0, math == Options::CudaMath::bf16 ? -7 : -10);
    const bool away = math == Options::CudaMath::tf32;
    return std::vector<std::pair<double, double>>{
        {1 + ulp / 2, away ? 1 + ulp : 1},                 // a tie at an even value
        {-(1 + ulp / 2), away ? -(1 + ulp) : -1},          // below zero too
        {1 + ulp / 2 - std::ldexp(1.0, -20), 1},           // just under a tie: down
        {1 + 3 * ulp / 2, 1 + 2 * ulp},                    // a tie at an odd value: up both ways
        {1 + 5 * ulp / 2, away ? 1 + 3 * ulp : 1 + 2 * ulp},
        {1 + ulp / 4, 1},
        {3.0, 3.0},
        {70000, math == Options::CudaMath::f16 ? inf : math == Options::CudaMath::bf16 ? 70144 : 70016}};  // range
  };
  for (const MmaCase& m : kMmaCases) {
    SCOPED_TRACE(cuda_math_name(m.math));
    const auto cases = cases_for(m.math);
    ir::HostTensor av = ir::HostTensor::zeros(DType::f32, {16, 24}), bv = ir::HostTensor::zeros(DType::f32, {24, 16});
    for (size_t r = 0; r < cases.size(); ++r) av.set(static_cast<int64_t>(r * 24 + r), cases[r].first);
    for (int64_t i = 0; i < bv.numel(); ++i) bv.set(i, 1);
    LoweredVariant lowered;
    std::vector<ir::HostTensor> out = compile_and_run(g, {av, bv}, &lowered, cuda_emulation(gpu_with(m.math)));
    ASSERT_EQ(out.size(), 1u);
    for (size_t r = 0; r < cases.size(); ++r)
      for (int64_t c = 0; c < 16; ++c)
        EXPECT_EQ(out[0].get(static_cast<int64_t>(r) * 16 + c), static_cast<double>(static_cast<float>(cases[r].second)))
            << "row " << r << " column " << c << " (" << cases[r].first << ")";
  }
  // f32 keeps them: the same graph without cuda_math.
  ir::HostTensor av = ir::HostTensor::zeros(DType::f32, {16, 24}), bv = ir::HostTensor::zeros(DType::f32, {24, 16});
  av.set(0, 1 + std::ldexp(1.0, -11));
  for (int64_t i = 0; i < bv.numel(); ++i) bv.set(i, 1);
  LoweredVariant lowered;
  std::vector<ir::HostTensor> exact = compile_and_run(g, {av, bv}, &lowered, cuda_emulation(for_gpu()));
  EXPECT_EQ(exact[0].get(0), 1 + std::ldexp(1.0, -11));
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.render();
  }
  return "(no user error)";
}

TEST(Cuda, ToolkitRefusesArchsItCannotBuild) {
  EXPECT_NE(user_error_of([] {
              Options o = for_gpu();
              o.cuda_archs = {"sm_61"};
              check_cuda_toolkit(o);
            }).find("sm_75 or newer"),
            std::string::npos);
  for (const char* arch : {"sm_61", "compute_90", "90", "sm_9x"}) {
    Options o = for_gpu();
    o.cuda_archs = {"sm_90", arch};
    std::string e = user_error_of([&] { check_cuda_toolkit(o); });
    EXPECT_NE(e.find(arch), std::string::npos) << e;
    EXPECT_NE(e.find("hint: "), std::string::npos) << e;
  }
  Options twice = for_gpu();
  twice.cuda_archs = {"sm_80", "sm_90", "sm_80"};
  EXPECT_NE(user_error_of([&] { check_cuda_toolkit(twice); }).find("sm_80 is given twice"), std::string::npos);
  Options tf32 = gpu_with(Options::CudaMath::tf32);
  tf32.cuda_archs = {"sm_90", "sm_75"};
  const std::string no_tf32 = user_error_of([&] { check_cuda_toolkit(tf32); });
  EXPECT_NE(no_tf32.find("sm_75"), std::string::npos) << no_tf32;
  EXPECT_NE(no_tf32.find("tf32"), std::string::npos) << no_tf32;
  Options none = for_gpu();
  none.cuda_archs = {};
  EXPECT_NE(user_error_of([&] { check_cuda_toolkit(none); }), "(no user error)");
}

TEST(Cuda, ToolkitMissingNamesCudaHome) {
  const char* old = std::getenv("CUDA_HOME");
  const std::string saved = old != nullptr ? old : "";
  setenv("CUDA_HOME", "/nonexistent/cuda", 1);
  std::string e = user_error_of([&] { check_cuda_toolkit(for_gpu()); });
  std::string link = user_error_of([&] { link_cuda_kernels({}, for_gpu()); });
  if (old != nullptr) setenv("CUDA_HOME", saved.c_str(), 1);
  else unsetenv("CUDA_HOME");
  EXPECT_NE(e.find("/nonexistent/cuda"), std::string::npos) << e;
  EXPECT_NE(e.find("CUDA_HOME"), std::string::npos) << e;
  EXPECT_NE(link.find("CUDA_HOME"), std::string::npos) << link;
}

}  // namespace
}  // namespace aotrace::lowering
