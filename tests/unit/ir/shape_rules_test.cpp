// The ops' shape and type rules, through Graph::add (as the Translator calls them).
#include <gtest/gtest.h>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

SymExpr s0 = SymExpr::symbol("s0");
SymExpr s1 = SymExpr::symbol("s1");

TensorType f32(Shape shape) { return {DType::f32, Device{}, std::move(shape)}; }
TensorType of(DType dtype, Shape shape) { return {dtype, Device{}, std::move(shape)}; }

// Applies op to fresh inputs of the given types and returns the result type.
TensorType result(OpKind op, std::vector<TensorType> operands, Attrs attrs = {}) {
  Graph g;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < operands.size(); ++i)
    ids.push_back(g.add_input("x" + std::to_string(i), operands[i], ""));
  return g.type(g.add(op, ids, attrs));
}

std::string error_of(OpKind op, std::vector<TensorType> operands, Attrs attrs = {}) {
  try {
    result(op, operands, attrs);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

Attrs with(const std::string& key, AttrValue v) {
  Attrs a;
  a.set(key, std::move(v));
  return a;
}

TEST(ShapeRules, BroadcastStatic) {
  EXPECT_EQ(result(OpKind::Add, {f32({8, 3}), f32({3})}).str(), "f32[8, 3]");
  EXPECT_EQ(result(OpKind::Mul, {f32({8, 1, 5}), f32({4, 1})}).str(), "f32[8, 4, 5]");
  EXPECT_EQ(result(OpKind::Sub, {f32({}), f32({2, 2})}).str(), "f32[2, 2]");
}

TEST(ShapeRules, BroadcastSymbolic) {
  EXPECT_EQ(result(OpKind::Add, {f32({s0, 3}), f32({1, 3})}).str(), "f32[s0, 3]");
  EXPECT_EQ(result(OpKind::Add, {f32({s0, 1}), f32({s0, s1})}).str(), "f32[s0, s1]");
  EXPECT_EQ(result(OpKind::Add, {f32({s0 * 2}), f32({2 * s0})}).str(), "f32[2*s0]");
}

TEST(ShapeRules, BroadcastErrors) {
  EXPECT_EQ(error_of(OpKind::Add, {f32({8, 3}), f32({4})}),
            "add: shapes f32[8, 3] and f32[4] cannot broadcast (dim -1: 3 vs 4)");
  EXPECT_EQ(error_of(OpKind::Mul, {f32({s0, 3}), f32({s1, 3})}),
            "mul: shapes f32[s0, 3] and f32[s1, 3] cannot broadcast (dim -2: s0 vs s1)");
}

TEST(ShapeRules, ErrorsCarryTheCallersLocation) {
  Graph g;
  ValueId a = g.add_input("a", f32({8, 3}), "L['a']");
  ValueId b = g.add_input("b", f32({4}), "L['b']");
  SourceLoc loc{"model.py", 12, 0, "forward"};
  try {
    g.add(OpKind::Add, {a, b}, {}, loc);
    FAIL() << "expected a user error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().str(), "model.py:12");
    EXPECT_NE(e.render().find("--> model.py:12 in forward"), std::string::npos);
  }
  EXPECT_TRUE(g.nodes.empty());
}

TEST(ShapeRules, Promotion) {
  EXPECT_EQ(result(OpKind::Add, {of(DType::i64, {2}), f32({2})}).dtype, DType::f32);
  EXPECT_EQ(result(OpKind::Div, {of(DType::i64, {2}), of(DType::i32, {2})}).dtype, DType::f32);
  EXPECT_EQ(result(OpKind::Mul, {of(DType::i64, {2}), of(DType::i32, {2})}).dtype, DType::i64);
  // 0-dim operands (torch.result_type): only a higher category promotes.
  EXPECT_EQ(result(OpKind::Add, {of(DType::f16, {2}), of(DType::f32, {})}).dtype, DType::f16);
  EXPECT_EQ(result(OpKind::Add, {of(DType::i32, {2}), of(DType::i64, {})}).dtype, DType::i32);
  EXPECT_EQ(result(OpKind::Mul, {of(DType::i32, {2}), of(DType::f16, {})}).dtype, DType::f16);
  EXPECT_EQ(result(OpKind::Add, {of(DType::b8, {2}), of(DType::i64, {})}).dtype, DType::i64);
  EXPECT_EQ(result(OpKind::Add, {of(DType::f16, {}), of(DType::f32, {})}).dtype, DType::f32);
  EXPECT_EQ(result(OpKind::Lt, {f32({2, 1}), f32({3})}).str(), "bool[2, 3]");
  EXPECT_EQ(result(OpKind::Exp, {of(DType::f16, {s0})}).str(), "f16[s0]");
}

TEST(ShapeRules, Where) {
  // A 0-dim operand of the same category does not widen a dimensioned one (torch.result_type).
  EXPECT_EQ(result(OpKind::Where, {of(DType::b8, {4, 1}), f32({3}), of(DType::f64, {})}).str(),
            "f32[4, 3]");
  EXPECT_EQ(result(OpKind::Where, {of(DType::b8, {4, 1}), f32({3}), of(DType::f64, {1})}).str(),
            "f64[4, 3]");
  EXPECT_EQ(error_of(OpKind::Where, {f32({3}), f32({3}), f32({3})}),
            "where: the condition must be bool, got f32[3]");
}

TEST(ShapeRules, CastAndFull) {
  EXPECT_EQ(result(OpKind::Cast, {f32({s0})}, with("dtype", DType::bf16)).str(), "bf16[s0]");
  Attrs full;
  full.set("shape", Shape{2, s0}).set("value", 0.5).set("dtype", DType::i32);
  EXPECT_EQ(result(OpKind::Full, {}, full).str(), "i32[2, s0]");
  Graph g;
  EXPECT_EQ(g.type(g.constant(2.0, DType::f64)).str(), "f64[]");
}

TEST(ShapeRules, Reduce) {
  Attrs a;
  a.set("axes", std::vector<int64_t>{1}).set("keepdim", int64_t{0});
  EXPECT_EQ(result(OpKind::ReduceSum, {f32({s0, 5, 7})}, a).str(), "f32[s0, 7]");
  a.set("keepdim", int64_t{1});
  EXPECT_EQ(result(OpKind::ReduceMax, {f32({s0, 5, 7})}, a).str(), "f32[s0, 1, 7]");
  a.set("axes", std::vector<int64_t>{0, 2});
  EXPECT_EQ(result(OpKind::ReduceSum, {of(DType::b8, {4, 5, 7})}, a).str(), "i64[1, 5, 1]");
  EXPECT_EQ(result(OpKind::Mean, {f32({4, 5, 7})}, a).str(), "f32[1, 5, 1]");
  a.set("axes", std::vector<int64_t>{3});
  EXPECT_EQ(error_of(OpKind::ReduceSum, {f32({4, 5, 7})}, a),
            "reduce_sum: axis 3 is out of range for f32[4, 5, 7]");
  a.set("axes", std::vector<int64_t>{0});
  EXPECT_EQ(error_of(OpKind::Mean, {of(DType::i64, {4})}, a),
            "mean: needs a floating point operand, got i64[4]");
}

TEST(ShapeRules, Matmul) {
  EXPECT_EQ(result(OpKind::Matmul, {f32({s0, 784}), f32({784, 512})}).str(), "f32[s0, 512]");
  EXPECT_EQ(result(OpKind::Matmul, {f32({3}), f32({3})}).str(), "f32[]");
  EXPECT_EQ(result(OpKind::Matmul, {f32({3}), f32({2, 3, 4})}).str(), "f32[2, 4]");
  EXPECT_EQ(result(OpKind::Matmul, {f32({2, 5, 3}), f32({3})}).str(), "f32[2, 5]");
  EXPECT_EQ(result(OpKind::Matmul, {f32({7, 1, 5, 3}), f32({4, 3, 2})}).str(),
            "f32[7, 4, 5, 2]");
  EXPECT_EQ(error_of(OpKind::Matmul, {f32({2, 3}), f32({4, 5})}),
            "matmul: shapes f32[2, 3] and f32[4, 5] do not match (inner dims 3 vs 4)");
  EXPECT_EQ(error_of(OpKind::Matmul, {f32({}), f32({4})}).rfind("matmul: both operands", 0), 0u);
  // out_dtype: a half matmul's f32 sums (decompositions only; anything else is our bug).
  EXPECT_EQ(result(OpKind::Matmul, {of(DType::bf16, {2, 3}), of(DType::bf16, {3, 4})}, with("out_dtype", DType::f32)).str(),
            "f32[2, 4]");
  EXPECT_THROW(result(OpKind::Matmul, {f32({2, 3}), f32({3, 4})}, with("out_dtype", DType::f32)), InternalError);
  EXPECT_THROW(result(OpKind::Matmul, {of(DType::f16, {2, 3}), of(DType::f16, {3, 4})}, with("out_dtype", DType::f64)),
               InternalError);
}

TEST(ShapeRules, Movement) {
  EXPECT_EQ(result(OpKind::Reshape, {f32({s0, 28, 28})}, with("shape", Shape{s0, 784})).str(),
            "f32[s0, 784]");
  EXPECT_EQ(result(OpKind::Reshape, {f32({6})}, with("shape", std::vector<int64_t>{2, 3})).str(),
            "f32[2, 3]");
  EXPECT_EQ(error_of(OpKind::Reshape, {f32({6})}, with("shape", Shape{4})),
            "reshape: cannot reshape f32[6] (6 elements) to [4] (4 elements)");
  EXPECT_EQ(result(OpKind::Permute, {f32({s0, 3, 5})}, with("perm", std::vector<int64_t>{2, 0, 1}))
                .str(),
            "f32[5, s0, 3]");
  EXPECT_EQ(error_of(OpKind::Permute, {f32({2, 3})}, with("perm", std::vector<int64_t>{0, 0})),
            "permute: [0, 0] is not a permutation of the dims of f32[2, 3]");
  EXPECT_EQ(result(OpKind::Expand, {f32({3, 1})}, with("shape", Shape{2, 3, s0})).str(),
            "f32[2, 3, s0]");
  EXPECT_EQ(error_of(OpKind::Expand, {f32({3, 2})}, with("shape", Shape{3, 4})),
            "expand: cannot expand f32[3, 2] to [3, 4] (dim 1: 2 vs 4)");
}

TEST(ShapeRules, Composites) {
  EXPECT_EQ(result(OpKind::Linear, {f32({s0, 784}), f32({512, 784}), f32({512})}).str(),
            "f32[s0, 512]");
  EXPECT_EQ(result(OpKind::Linear, {f32({2, 4, 8}), f32({3, 8})}).str(), "f32[2, 4, 3]");
  EXPECT_EQ(error_of(OpKind::Linear, {f32({2, 8}), f32({3, 7})}),
            "linear: input features 8 do not match weight f32[3, 7]");
  EXPECT_EQ(result(OpKind::Softmax, {f32({s0, 10})}, with("axis", int64_t{1})).str(),
            "f32[s0, 10]");
  EXPECT_EQ(error_of(OpKind::LogSoftmax, {f32({4})}, with("axis", int64_t{1})),
            "log_softmax: axis 1 is out of range for f32[4]");
}

TEST(OpTable, NamesAndCategories) {
  EXPECT_EQ(op_name(OpKind::ReduceSum), "reduce_sum");
  EXPECT_EQ(op_by_name("log_softmax"), OpKind::LogSoftmax);
  EXPECT_EQ(op_by_name("conv9d"), std::nullopt);
  EXPECT_EQ(op_info(OpKind::Where).arity, 3);
  EXPECT_TRUE(is_elementwise(op_info(OpKind::Cast).category));
  EXPECT_FALSE(is_elementwise(op_info(OpKind::Matmul).category));
  for (int k = 0; k <= static_cast<int>(OpKind::LogSoftmax); ++k) {
    const OpInfo& info = op_info(static_cast<OpKind>(k));
    EXPECT_EQ(static_cast<int>(info.kind), k);
    EXPECT_EQ(op_by_name(info.name), info.kind);
    EXPECT_EQ(info.category == OpCategory::Composite, info.reference == nullptr) << info.name;
  }
}

}  // namespace
}  // namespace aotrace::ir
