// Test support for tests/capture/cases: each NAME.py starts with a header
//   # capture: call=EXPR inputs=x:f32[4,8],y:i64[3]
// naming the entry to capture and its inputs.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "embed/embed.h"

namespace aotrace::test {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CaseHeader {
  std::string call;
  std::vector<embed::CaptureInput> inputs;
};

inline CaseHeader parse_case_header(const std::filesystem::path& script) {
  std::smatch m;
  const std::string text = read_file(script);
  static const std::regex header(R"(# capture: call=(\S+) inputs=(\S*))");
  if (!std::regex_search(text, m, header)) throw std::runtime_error(script.string() + ": no '# capture:' header");
  CaseHeader h;
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

// The names of the cases (NAME of every NAME.py in `dir`), sorted.
inline std::vector<std::string> case_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".py") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace aotrace::test
