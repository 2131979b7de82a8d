// `aotrace explain` continues past graph breaks (issue 3): a program with two breaks reports
// three graphs and two breaks, each with its category, hint and file:line, in JSON and text.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/subprocess.h"

namespace fs = std::filesystem;
using aotrace::test::quote;
using aotrace::test::run_command;

namespace {

const fs::path kExplain = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "capture" / "explain";

TEST(Explain, TwoBreaksGiveThreeGraphsInJson) {
  // stdout only: the subshell drops stderr before run_command merges the streams.
  auto r = run_command("(" + quote(AOTRACE_CLI) + " explain --json --graph " +
                       quote((kExplain / "two_breaks.yaml").string()) + " 2>/dev/null)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // One JSON object per line; the model's print() goes to stderr, never into the report.
  std::istringstream lines(r.output);
  std::string line;
  int objects = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    ++objects;
    EXPECT_EQ(j["graph_count"], 3);
    EXPECT_EQ(j["graph_break_count"], 2);
    ASSERT_EQ(j["break_reasons"].size(), 2u);
    EXPECT_EQ(j["break_reasons"][0]["category"], "side effect");
    EXPECT_EQ(j["break_reasons"][1]["category"], "data-dependent control flow");
    const auto& s0 = j["break_reasons"][0]["user_stack"].back();
    const auto& s1 = j["break_reasons"][1]["user_stack"].back();
    EXPECT_EQ(s0["line"], 6);
    EXPECT_EQ(s1["line"], 8);
    EXPECT_EQ(fs::path(s0["file"].get<std::string>()).filename(), "two_breaks.py");
    EXPECT_EQ(s0["function"], "f");
    EXPECT_FALSE(j["break_reasons"][1]["hint"].get<std::string>().empty());
    ASSERT_EQ(j["ops_per_graph"].size(), 3u);
    EXPECT_EQ(j["ops_per_graph"][0]["relu"], 1);
    EXPECT_EQ(j["ops_per_graph"][1]["exp"], 1);
    EXPECT_EQ(j["ops_per_graph"][2]["add"], 1);
    ASSERT_EQ(j["graphs"].size(), 3u);
    EXPECT_TRUE(j.contains("guards") && j.contains("assumptions") && j.contains("compile_times"));
  }
  EXPECT_EQ(objects, 1);
}

TEST(Explain, TextFormShowsEveryBreak) {
  auto r = run_command(quote(AOTRACE_CLI) + " explain " + quote((kExplain / "two_breaks.yaml").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("graphs: 3, graph breaks: 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("two_breaks.py:6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("two_breaks.py:8"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ops of graph 3:"), std::string::npos) << r.output;
}

}  // namespace
