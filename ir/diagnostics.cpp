#include "ir/diagnostics.h"

namespace aotrace {

std::string SourceLoc::str() const {
  if (file.empty()) return "<unknown>";
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line);
  if (line > 0 && col > 0) s += ":" + std::to_string(col);
  return s;
}

UserError::UserError(std::string what, SourceLoc loc, std::string hint,
                     std::vector<std::string> notes)
    : std::runtime_error(std::move(what)),
      loc_(std::move(loc)),
      hint_(std::move(hint)),
      notes_(std::move(notes)) {}

std::string UserError::render() const {
  std::string s = "aotrace: error: " + std::string(what()) + "\n";
  if (loc_.known()) {
    s += "  --> " + loc_.str();
    if (!loc_.function.empty()) s += " in " + loc_.function;
    s += "\n";
  }
  for (const auto& n : notes_) s += "  note: " + n + "\n";
  if (!hint_.empty()) s += "  hint: " + hint_ + "\n";
  return s;
}

std::string InternalError::render() const {
  return "aotrace: internal error (this is a bug in aotrace): " + std::string(what()) +
         "\n  hint: please report it with the spec, the script and the output of "
         "`aotrace compile SPEC.yaml --dump all`\n";
}

void user_error(std::string what, SourceLoc loc, std::string hint) {
  throw UserError(std::move(what), std::move(loc), std::move(hint));
}

void internal_error(std::string what) { throw InternalError(what); }

}  // namespace aotrace
