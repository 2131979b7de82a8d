// `aotrace compile SPEC`: the options as main.cpp parsed them, --dump's pass names checked here
// (a typo gets the closest name), then driver::compile does the work.
#include <algorithm>

#include "cli/commands.h"

namespace aotrace::cli {

int compile_command(const std::filesystem::path& yaml, const CompileOptions& options) {
  CompileOptions checked = options;
  checked.dump.clear();
  const std::vector<std::string>& names = lowering::pass_names();
  for (const std::string& pass : options.dump) {
    const std::string name = pass.rfind("after-", 0) == 0 ? pass.substr(6) : pass;
    if (name != "all" && std::find(names.begin(), names.end(), name) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      const std::string close = closest_name(name, names);
      user_error("--dump: unknown pass '" + pass + "'" + (close.empty() ? "" : "; did you mean '" + close + "'?"), {},
                 "the passes are " + list + ", or all");
    }
    checked.dump.push_back(name);
  }
  return driver::compile(yaml, checked);
}

}  // namespace aotrace::cli
