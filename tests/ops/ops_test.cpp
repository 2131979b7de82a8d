// Op tests (DESIGN §8, issue 4): every case of tests/ops/cases.py is captured with zero graph
// breaks, its graph run by ir::evaluate (the reference implementations and decompositions),
// and each output compared with torch eager on the same inputs, under the tolerances of
// op_harness.h. The cases cover dtypes, broadcasting, negative dims, size-0 and size-1 dims.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/ops/op_harness.h"

namespace fs = std::filesystem;
using namespace aotrace;

namespace {

const fs::path kCases = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "ops" / "cases.py";

struct Case {
  std::string name;
  std::string inputs;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " (" << c.inputs << ")"; }

std::vector<Case> cases() {
  std::ifstream in(kCases);
  std::stringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  static const std::regex header(R"(# case: (\w+) inputs=(\S*))");
  std::vector<Case> out;
  for (std::sregex_iterator it(text.begin(), text.end(), header), end; it != end; ++it)
    out.push_back({(*it)[1], (*it)[2]});
  return out;
}

std::string breaks_str(const embed::Capture& c) {
  std::string s;
  for (const auto& b : c.breaks) s += "  [" + b.category + "] " + b.reason + " (hint: " + b.hint + ")\n";
  return s;
}

class OpCase : public ::testing::TestWithParam<Case> {};

TEST_P(OpCase, EvaluateMatchesTorchEager) {
  const Case& c = GetParam();
  auto specs = aotrace::testing::parse_inputs(c.inputs);
  auto& interp = embed::Interpreter::instance();
  interp.run_script(kCases);
  std::vector<embed::CaptureInput> inputs;
  std::vector<ir::HostTensor> values;
  for (size_t i = 0; i < specs.size(); ++i) {
    inputs.push_back(specs[i].input);
    values.push_back(aotrace::testing::random_input(specs[i], std::hash<std::string>{}(c.name) + i));
  }
  embed::Capture capture = interp.capture(c.name, inputs);
  ASSERT_TRUE(capture.breaks.empty()) << c.name << " has graph breaks:\n" << breaks_str(capture);
  ir::verify(capture.graph);
  std::vector<ir::HostTensor> got = ir::evaluate(capture.graph, values);
  std::vector<ir::HostTensor> want = interp.run_eager(c.name, values);
  ASSERT_EQ(got.size(), want.size()) << "output count";
  for (size_t i = 0; i < got.size(); ++i) {
    std::string diff = aotrace::testing::compare(got[i], want[i]);
    EXPECT_TRUE(diff.empty()) << c.name << " output " << i << ": " << diff << "graph:\n"
                              << (got.size() < 4 ? capture.graph.str() : "");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OpCase, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
