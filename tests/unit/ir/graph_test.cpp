// Graph construction, the text dump (golden), attributes, guards and verify().
#include <gtest/gtest.h>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

SymExpr s0 = SymExpr::symbol("s0");

TensorType f32(Shape shape) { return {DType::f32, Device{}, std::move(shape)}; }

std::shared_ptr<const Bytes> zero_bytes(size_t n) { return std::make_shared<Bytes>(n, 0); }

// A two-layer MLP head as the Translator would build it.
Graph small_mlp() {
  Graph g;
  g.symbols["s0"] = SymRange{1, 64, 1};
  ValueId x = g.add_input("x", f32({s0, 4}), "L['x']");
  ValueId w = g.add_weight("fc1.weight", f32({3, 4}), "L['self'].fc1.weight", zero_bytes(48));
  ValueId b = g.add_weight("fc1.bias", f32({3}), "L['self'].fc1.bias", zero_bytes(12));
  ValueId h = g.add(OpKind::Linear, {x, w, b}, {}, SourceLoc{"/home/u/mlp.py", 12, 0, "forward"});
  ValueId r = g.add(OpKind::Relu, {h}, {}, SourceLoc{"/home/u/mlp.py", 13, 0, ""});
  Attrs sum;
  sum.set("axes", std::vector<int64_t>{1}).set("keepdim", int64_t{0});
  ValueId s = g.add(OpKind::ReduceSum, {r}, sum);
  ValueId half = g.constant(0.5, DType::f32);
  ValueId y = g.add(OpKind::Mul, {s, half});
  g.set_outputs({y, r}, OutputTree{OutputTree::Kind::Tuple, 0,
                                   {{OutputTree::Kind::Leaf, 0, {}, {}},
                                    {OutputTree::Kind::Leaf, 1, {}, {}}},
                                   {}});
  return g;
}

TEST(GraphStr, Golden) {
  const char* expected =
      "graph(%x: f32[s0, 4] = L['x']):\n"
      "  symbol s0 in [1, 64]\n"
      "  %fc1.weight: f32[3, 4] = weight L['self'].fc1.weight\n"
      "  %fc1.bias: f32[3] = weight L['self'].fc1.bias\n"
      "  %3: f32[s0, 3] = linear(%x, %fc1.weight, %fc1.bias)   # mlp.py:12\n"
      "  %4: f32[s0, 3] = relu(%3)   # mlp.py:13\n"
      "  %5: f32[s0] = reduce_sum(%4) {axes=[1], keepdim=0}\n"
      "  %6: f32[] = full() {dtype=f32, shape=[], value=0.5}\n"
      "  %7: f32[s0] = mul(%5, %6)\n"
      "  return (%7, %4)\n";
  EXPECT_EQ(small_mlp().str(), expected);
}

TEST(GraphStr, DuplicateNamesFallBackToNumbers) {
  Graph g;
  ValueId a = g.add_input("x", f32({2}), "L['x']");
  ValueId b = g.add_weight("x", f32({2}), "L['self'].x", nullptr);
  g.set_outputs({g.add(OpKind::Add, {a, b})}, {});
  EXPECT_EQ(g.str(),
            "graph(%0: f32[2] = L['x']):\n"
            "  %1: f32[2] = weight L['self'].x\n"
            "  %2: f32[2] = add(%0, %1)\n"
            "  return %2\n");
}

// Graph::cast adds a Cast node only where the dtype changes.
TEST(Graph, CastAddsANodeOnlyForAnotherDtype) {
  Graph g;
  TensorType half = f32({2, 3});
  half.dtype = DType::f16;
  ValueId x = g.add_input("x", half, "L['x']");
  EXPECT_EQ(g.cast(x, DType::f16), x);
  EXPECT_EQ(g.nodes.size(), 0u);
  ValueId y = g.cast(x, DType::f32);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Cast);
  EXPECT_EQ(g.type(y).dtype, DType::f32);
  EXPECT_EQ(g.type(y).shape, (Shape{2, 3}));
}

TEST(OutputTree, Str) {
  using K = OutputTree::Kind;
  OutputTree leaf0{K::Leaf, 0, {}, {}}, leaf1{K::Leaf, 1, {}, {}}, leaf2{K::Leaf, 2, {}, {}};
  OutputTree list{K::List, 0, {leaf1, leaf2}, {}};
  EXPECT_EQ((OutputTree{K::Tuple, 0, {leaf0, list}, {}}.str()), "(0, [1, 2])");
  EXPECT_EQ((OutputTree{K::Tuple, 0, {leaf0}, {}}.str()), "(0,)");
  EXPECT_EQ((OutputTree{K::Dict, 0, {leaf0, leaf1}, {"logits", "loss"}}.str()),
            "{'logits': 0, 'loss': 1}");
}

TEST(Attrs, AccessorsAndStr) {
  Attrs a;
  a.set("perm", std::vector<int64_t>{1, 0})
      .set("value", 2.0)
      .set("dtype", DType::i64)
      .set("name", std::string("gelu"))
      .set("shape", Shape{s0, 3})
      .set("axis", int64_t{-1});
  EXPECT_EQ(a.i("axis"), -1);
  EXPECT_EQ(a.f("value"), 2.0);
  EXPECT_EQ(a.f("axis"), -1.0);  // an int is accepted as a float
  EXPECT_EQ(a.ints("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(a.s("name"), "gelu");
  EXPECT_EQ(a.dtype("dtype"), DType::i64);
  EXPECT_EQ(shape_str(a.shape("shape")), "[s0, 3]");
  EXPECT_EQ(a.str(),
            "{axis=-1, dtype=i64, name='gelu', perm=[1, 0], shape=[s0, 3], value=2.0}");
  EXPECT_THROW(a.i("missing"), InternalError);
  EXPECT_THROW(a.i("value"), InternalError);
  EXPECT_THROW(a.ints("shape"), InternalError);
  Attrs f;
  f.set("v", 0.1).set("w", 1e-30);
  EXPECT_EQ(f.str(), "{v=0.1, w=1e-30}");
}

TEST(TensorType, Helpers) {
  TensorType t = f32({s0, 28, 28});
  EXPECT_EQ(t.numel().str(), "784*s0");
  EXPECT_EQ(t.static_shape(), std::nullopt);
  EXPECT_EQ(f32({2, 3}).static_shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f32({}).numel().constant(), 1);
  TensorType c{DType::bf16, Device{Device::Kind::cuda, 0}, {2}};
  EXPECT_EQ(c.str(), "bf16[2]@cuda:0");
  EXPECT_FALSE(c == f32({2}));
  EXPECT_TRUE(f32({s0 + 1}) == f32({1 + s0}));
}

TEST(Guard, Str) {
  Guard g;
  g.source = "L['x']";
  g.kind = Guard::Kind::DimEq;
  g.dim = 0;
  g.value = 8;
  EXPECT_EQ(g.str(), "L['x'].size()[0] == 8");
  g.kind = Guard::Kind::Rank;
  g.value = 2;
  EXPECT_EQ(g.str(), "L['x'].dim() == 2");
  g.kind = Guard::Kind::DType;
  g.dtype = DType::f32;
  EXPECT_EQ(g.str(), "L['x'].dtype == torch.float32");
  g.kind = Guard::Kind::DimRange;
  g.dim = 1;
  g.value = 16;
  g.value2 = 512;
  EXPECT_EQ(g.str(), "16 <= L['x'].size()[1] <= 512");
  g.kind = Guard::Kind::DimMultiple;
  g.value = 8;
  EXPECT_EQ(g.str(), "L['x'].size()[1] % 8 == 0");
  g.kind = Guard::Kind::DimsEqual;
  g.dim = 0;
  g.other_source = "L['y']";
  g.other_dim = 0;
  EXPECT_EQ(g.str(), "L['x'].size()[0] == L['y'].size()[0]");
  g.kind = Guard::Kind::Contiguous;
  EXPECT_EQ(g.str(), "L['x'].is_contiguous()");
  g.kind = Guard::Kind::Device;
  EXPECT_EQ(g.str(), "L['x'].device == torch.device('cpu')");
}

TEST(Verify, AcceptsAWellFormedGraph) { EXPECT_NO_THROW(verify(small_mlp())); }

TEST(Verify, CatchesAWrongRecordedType) {
  Graph g = small_mlp();
  g.nodes[1].results = {g.new_value(f32({s0, 4}))};  // relu of f32[s0, 3] recorded as [s0, 4]
  g.nodes[2].operands = {g.nodes[1].results[0]};
  try {
    verify(g);
    FAIL() << "verify accepted a wrong type";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 (relu) result %8 is recorded as f32[s0, 4] but "
                                         "its rule gives f32[s0, 3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Verify, CatchesUseBeforeDefinition) {
  Graph g = small_mlp();
  std::swap(g.nodes[0], g.nodes[1]);  // relu now reads linear's result before it exists
  try {
    verify(g);
    FAIL() << "verify accepted a use before definition";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("uses %3 before it is defined"), std::string::npos);
  }
}

TEST(Verify, CatchesRedefinitionArityAndOutputs) {
  Graph g = small_mlp();
  g.nodes[4].results = g.nodes[3].results;
  EXPECT_THROW(verify(g), InternalError);
  g = small_mlp();
  g.nodes[1].operands.push_back(g.inputs[0].value);
  EXPECT_THROW(verify(g), InternalError);
  g = small_mlp();
  g.outputs.push_back(g.new_value(f32({1})));
  EXPECT_THROW(verify(g), InternalError);
}

}  // namespace
}  // namespace aotrace::ir
