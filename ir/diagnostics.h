// Diagnostics shared by every layer of the compiler (not the runtime, which returns Status).
//
// Two channels (STYLE 9):
//   user_error     — the user's input is wrong or unsupported: what, where, how to fix. Exit 1.
//   internal_error — a bug in aotrace. Exit 3.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace aotrace {

// A place in the user's input: a YAML file:line:col or a Python file:line (col 0 = unknown).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  std::string function;  // Python function name, when known

  bool known() const { return !file.empty(); }
  std::string str() const;  // "file:line:col", "file:line" or "<unknown>"
};

class UserError : public std::runtime_error {
 public:
  UserError(std::string what, SourceLoc loc = {}, std::string hint = {},
            std::vector<std::string> notes = {});
  const SourceLoc& loc() const { return loc_; }
  const std::string& hint() const { return hint_; }
  const std::vector<std::string>& notes() const { return notes_; }
  // "aotrace: error: WHAT\n  --> file:line:col\n  note: …\n  hint: …\n" (DESIGN §7).
  std::string render() const;

 private:
  SourceLoc loc_;
  std::string hint_;
  std::vector<std::string> notes_;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
  std::string render() const;  // says it is a bug and how to report it
};

[[noreturn]] void user_error(std::string what, SourceLoc loc = {}, std::string hint = {});
[[noreturn]] void internal_error(std::string what);

}  // namespace aotrace

// Cheap when it holds: the message is only built on failure.
#define AOT_CHECK(cond, msg)                                                        \
  do {                                                                              \
    if (!(cond))                                                                    \
      ::aotrace::internal_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                ": check failed: " #cond ": " + (msg));             \
  } while (0)
