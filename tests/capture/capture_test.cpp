// Capture tests (STYLE 13): each tests/capture/cases/NAME.py is a small program with a header
//   # capture: call=EXPR inputs=x:f32[4,8],y:i64[3]
// and NAME.expected holds its golden graph, guards, assumptions and breaks. Regenerate the
// goldens with AOTRACE_UPDATE_GOLDEN=1 after checking the difference by eye.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "embed/embed.h"
#include "tests/capture/case_header.h"

namespace fs = std::filesystem;
using namespace aotrace;

namespace {

const fs::path kCases = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "capture" / "cases";

// The golden text: graph, guards, assumptions, breaks; file paths as basenames.
std::string describe(const embed::Capture& c) {
  std::ostringstream s;
  if (c.graphs.size() <= 1) {
    s << c.graph.str() << "\n";
  } else {
    for (size_t i = 0; i < c.graphs.size(); ++i)
      s << "graph " << i + 1 << " of " << c.graphs.size() << ":\n" << c.graphs[i].str() << "\n";
  }
  s << "guards:\n";
  for (const auto& g : c.guards)
    s << "  " << g.str() << (g.origin.known() ? "  # " + fs::path(g.origin.file).filename().string() + ":" + std::to_string(g.origin.line) : "") << "\n";
  s << "assumptions:\n";
  for (const auto& a : c.assumptions) s << "  " << a.text << "\n";
  s << "breaks:\n";
  for (const auto& b : c.breaks) {
    s << "  [" << b.category << "] " << b.reason << "\n";
    for (const auto& l : b.user_stack)
      s << "    at " << fs::path(l.file).filename().string() << ":" << l.line << " in " << l.function << "\n";
    s << "    hint: " << b.hint << "\n";
  }
  return s.str();
}

class CaptureCase : public ::testing::TestWithParam<std::string> {};

TEST_P(CaptureCase, MatchesGolden) {
  const fs::path script = kCases / (GetParam() + ".py");
  const fs::path golden = kCases / (GetParam() + ".expected");
  test::CaseHeader h = test::parse_case_header(script);
  auto& interp = embed::Interpreter::instance();
  interp.run_script(script);
  std::string got;
  try {
    got = describe(interp.capture(h.call, h.inputs));
  } catch (const UserError& e) {
    got = "user error: " + std::string(e.what()) + " at " + fs::path(e.loc().file).filename().string() + ":" +
          std::to_string(e.loc().line) + "\n";
  }
  if (std::getenv("AOTRACE_UPDATE_GOLDEN")) {
    std::ofstream(golden) << got;
    GTEST_SKIP() << "golden updated: " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << "missing golden " << golden << "; got:\n" << got;
  EXPECT_EQ(test::read_file(golden), got) << "capture of " << script << " changed";
}

// Every torch call binds its arguments through torch's own signatures, except the few that
// torch parses by hand too; a new op-table entry without a signature shows up here.
TEST(TorchSignatures, EveryTableCallableBindsThroughTorchExceptTheHandParsedOnes) {
  const std::vector<std::string> expected = {
      "Tensor.__getitem__", "Tensor.__setitem__", "Tensor.to", "Tensor.type",
      "torch.Tensor.__getitem__", "torch.Tensor.__setitem__", "torch.Tensor.to", "torch.Tensor.type",
      "torch.overrides.has_torch_function", "torch.overrides.has_torch_function_unary",
      "torch.overrides.has_torch_function_variadic"};
  EXPECT_EQ(embed::Interpreter::instance().torch_callables_parsed_by_hand(), expected);
}

INSTANTIATE_TEST_SUITE_P(Cases, CaptureCase, ::testing::ValuesIn(test::case_names(kCases)),
                         [](const auto& info) { return info.param; });

}  // namespace
