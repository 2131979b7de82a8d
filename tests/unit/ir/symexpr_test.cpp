#include <gtest/gtest.h>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

SymExpr s0 = SymExpr::symbol("s0");
SymExpr s1 = SymExpr::symbol("s1");
SymExpr s2 = SymExpr::symbol("s2");

TEST(SymExpr, ConstantsFold) {
  EXPECT_EQ((SymExpr(3) + 4).str(), "7");
  EXPECT_EQ((SymExpr(3) * 4 - 2).constant(), 10);
  EXPECT_EQ(floordiv(SymExpr(7), 2).constant(), 3);
  EXPECT_EQ(mod(SymExpr(7), 3).constant(), 1);
  EXPECT_EQ(min(SymExpr(7), 3).constant(), 3);
  EXPECT_EQ(max(SymExpr(7), 3).constant(), 7);
}

TEST(SymExpr, FloorDivAndModFollowPython) {
  EXPECT_EQ(floordiv(SymExpr(-7), 2).constant(), -4);
  EXPECT_EQ(mod(SymExpr(-7), 3).constant(), 2);
  EXPECT_EQ(mod(SymExpr(7), -3).constant(), -2);
}

TEST(SymExpr, LikeTermsCombine) {
  EXPECT_EQ((s0 + s0).str(), "2*s0");
  EXPECT_EQ((s0 + 1 + s0).str(), "2*s0 + 1");
  EXPECT_EQ((s0 - s0).str(), "0");
  EXPECT_TRUE((s0 - s0).is_constant());
  EXPECT_EQ((s0 * 3 - s0 * 3 + 5).constant(), 5);
}

TEST(SymExpr, AddIsOrderIndependent) {
  EXPECT_EQ(s1 + s0 + 2, 2 + s0 + s1);
  EXPECT_EQ((s1 + s0 + 2).str(), "s0 + s1 + 2");
  EXPECT_EQ((s0 + 1) + (s1 + 2), s1 + (s0 + 3));
}

TEST(SymExpr, SubtractionPrints) {
  EXPECT_EQ((s0 - 1).str(), "s0 - 1");
  EXPECT_EQ((s0 - s1 * 2).str(), "s0 - 2*s1");
  EXPECT_EQ((SymExpr(0) - s0).str(), "-s0");
  EXPECT_EQ((SymExpr(1) - s0).str(), "-s0 + 1");
}

TEST(SymExpr, MulFlattensAndFolds) {
  EXPECT_EQ((s0 * 0).constant(), 0);
  EXPECT_EQ(s0 * 1, s0);
  EXPECT_EQ((2 * s0 * 3).str(), "6*s0");
  EXPECT_EQ(s1 * s0, s0 * s1);
  EXPECT_EQ((s1 * 2 * s0).str(), "2*s0*s1");
}

TEST(SymExpr, ConstantDistributesOverSum) {
  EXPECT_EQ((2 * (s0 + 1)).str(), "2*s0 + 2");
  EXPECT_EQ(2 * (s0 + 1) - 2, 2 * s0);
}

TEST(SymExpr, FloorDivSimplifies) {
  EXPECT_EQ(floordiv(s0, 1), s0);
  EXPECT_EQ(floordiv(s0 * 4, 4), s0);
  EXPECT_EQ(floordiv(s0 * 8 + 4, 4), 2 * s0 + 1);
  EXPECT_EQ(floordiv(s0 * 8 + 7, 4), 2 * s0 + 1);
  EXPECT_EQ(floordiv(s0 * 4 + s1 - 1, 4), s0 - 1 + floordiv(s1 + 3, 4));
  EXPECT_EQ(floordiv(floordiv(s0, 2), 3), floordiv(s0, 6));
  EXPECT_EQ(floordiv(s0, 2).str(), "s0//2");
  EXPECT_EQ(floordiv(s0 + 1, 2).str(), "(s0 + 1)//2");
  EXPECT_EQ(floordiv(SymExpr(0), s0).constant(), 0);
}

TEST(SymExpr, ModSimplifies) {
  EXPECT_EQ(mod(s0, 1).constant(), 0);
  EXPECT_EQ(mod(s0 * 8, 4).constant(), 0);
  EXPECT_EQ(mod(s0 * 8 + s1 + 9, 4), mod(s1 + 1, 4));
  EXPECT_EQ(mod(s0, 8).str(), "s0%8");
  EXPECT_EQ(mod(s0 - 1, 4).str(), "(s0 + 3)%4");
}

TEST(SymExpr, MinMax) {
  EXPECT_EQ(min(s0, s0), s0);
  EXPECT_EQ(max(s1, s1), s1);
  EXPECT_EQ(min(s1, s0), min(s0, s1));
  EXPECT_EQ(min(s0, 4).str(), "min(s0, 4)");
  EXPECT_EQ(max(s0 + 1, s1).str(), "max(s1, s0 + 1)");
}

TEST(SymExpr, ParenthesesKeepMeaning) {
  EXPECT_EQ((2 * floordiv(s0, 2)).str(), "2*(s0//2)");
  EXPECT_EQ((s1 * (s0 + 1)).str(), "s1*(s0 + 1)");
  EXPECT_EQ(floordiv(s0, s1 * 2).str(), "s0//(2*s1)");
}

TEST(SymExpr, Evaluate) {
  SymBindings b{{"s0", 10}, {"s1", 3}};
  EXPECT_EQ((2 * s0 + s1).evaluate(b), 23);
  EXPECT_EQ(floordiv(s0, s1).evaluate(b), 3);
  EXPECT_EQ(mod(s0, s1).evaluate(b), 1);
  EXPECT_EQ(min(s0, s1).evaluate(b), 3);
  EXPECT_EQ(max(s0, s1 * 5).evaluate(b), 15);
  EXPECT_EQ((s0 * s2).evaluate(b), std::nullopt);
  EXPECT_EQ(floordiv(s0, s1 - 3).evaluate(b), std::nullopt);  // division by zero
  // Simplified forms agree with Python semantics on negative values too.
  for (int64_t v = -9; v <= 9; ++v) {
    SymBindings n{{"s0", v}, {"s1", 2 * v + 1}};
    EXPECT_EQ(floordiv(s0 * 4 + s1 - 1, 4).evaluate(n), (4 * v + 2 * v + 1 - 1 + 400) / 4 - 100);
    EXPECT_EQ(mod(s0 * 6 + s1, 4).evaluate(n), ((6 * v + 2 * v + 1) % 4 + 4) % 4);
    EXPECT_EQ(floordiv(floordiv(s0, 2), 3).evaluate(n), floordiv(floordiv(SymExpr(v), 2), 3).constant());
  }
}

TEST(SymExpr, SubstituteResimplifies) {
  std::map<std::string, SymExpr> m{{"s1", s0}};
  EXPECT_EQ((s0 + s1).substitute(m).str(), "2*s0");
  EXPECT_EQ(floordiv(s1 * 4, 2).substitute({{"s1", SymExpr(3)}}).constant(), 6);
  EXPECT_EQ(max(s0, s1).substitute(m), s0);
}

TEST(SymExpr, SymbolsSortedAndUnique) {
  SymExpr s10 = SymExpr::symbol("s10");
  auto syms = (s10 * s1 + s2 + floordiv(s1, s10)).symbols();
  EXPECT_EQ(syms, (std::vector<std::string>{"s1", "s2", "s10"}));
  EXPECT_TRUE(SymExpr(5).symbols().empty());
}

TEST(SymExpr, ConstantAccess) {
  EXPECT_TRUE(SymExpr(4).is_constant());
  EXPECT_EQ(SymExpr(4).as_constant(), 4);
  EXPECT_EQ(s0.as_constant(), std::nullopt);
  EXPECT_THROW(s0.constant(), InternalError);
}

TEST(SymExpr, StructuralEquality) {
  EXPECT_EQ(s0, SymExpr::symbol("s0"));
  EXPECT_NE(s0, s1);
  EXPECT_NE(s0 + 1, s0 + 2);
  EXPECT_NE(floordiv(s0, 2), mod(s0, 2));
  EXPECT_EQ(s0 * s1 + s0, s0 + s1 * s0);
}

}  // namespace
}  // namespace aotrace::ir
