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

namespace fs = std::filesystem;
using namespace aotrace;

namespace {

const fs::path kCases = fs::path(AOTRACE_SOURCE_DIR) / "tests" / "capture" / "cases";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Header {
  std::string call;
  std::vector<embed::CaptureInput> inputs;
};

Header parse_header(const fs::path& script) {
  std::smatch m;
  const std::string text = read(script);
  static const std::regex header(R"(# capture: call=(\S+) inputs=(\S*))");
  if (!std::regex_search(text, m, header)) throw std::runtime_error(script.string() + ": no '# capture:' header");
  Header h;
  h.call = m[1];
  std::string inputs = m[2];
  static const std::regex one(R"((\w+):(\w+)\[([0-9,]*)\])");
  for (std::sregex_iterator it(inputs.begin(), inputs.end(), one), end; it != end; ++it) {
    embed::CaptureInput in;
    in.name = (*it)[1];
    in.dtype = *ir::parse_dtype((*it)[2].str());
    std::stringstream dims((*it)[3].str());
    for (std::string d; std::getline(dims, d, ',');) in.shape.push_back(std::stoll(d));
    h.inputs.push_back(in);
  }
  return h;
}

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

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kCases))
    if (e.path().extension() == ".py") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class CaptureCase : public ::testing::TestWithParam<std::string> {};

TEST_P(CaptureCase, MatchesGolden) {
  const fs::path script = kCases / (GetParam() + ".py");
  const fs::path golden = kCases / (GetParam() + ".expected");
  Header h = parse_header(script);
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
  EXPECT_EQ(read(golden), got) << "capture of " << script << " changed";
}

INSTANTIATE_TEST_SUITE_P(Cases, CaptureCase, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
