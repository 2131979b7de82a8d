// `aotrace explain SPEC [--json] [--graph]`: what capture makes of every profile (its graphs,
// breaks, guards) and the variants compile would build from them (driver/compile.h).
#include <iostream>

#include "cli/commands.h"

namespace aotrace::cli {

using nlohmann::json;

int explain_command(const std::filesystem::path& yaml, bool as_json, bool graph) {
  auto spec = shape_profiles::parse_profile_file(yaml);
  embed::Interpreter::instance().send_prints_to_stderr();  // stdout is the report
  auto captures = capture_all(spec);
  // JSON: one object per profile, each naming the variant it would compile into.
  std::vector<std::string> variant_of(captures.size());
  std::vector<size_t> planned_of(captures.size());
  std::vector<std::vector<PlannedVariant>> plans;  // per entry
  for (const auto& entry : spec.entries) {
    const std::vector<PlannedVariant>& plan = plans.emplace_back(plan_variants(captures, entry));
    for (size_t v = 0; v < plan.size(); ++v)
      for (size_t i : plan[v].captures) {
        variant_of[i] = "v" + std::to_string(v);
        planned_of[i] = plan.size();
      }
  }
  for (size_t i = 0; i < captures.size(); ++i) {
    if (!as_json) {
      std::cout << explain_text(captures[i], graph);
      continue;
    }
    json j = explain_json(captures[i], graph);
    j["variant"] = variant_of[i];
    j["planned_variants"] = planned_of[i];
    j["max_variants"] = spec.max_variants;
    std::cout << j.dump() << "\n";
  }
  for (size_t e = 0; e < spec.entries.size(); ++e) {
    const shape_profiles::EntrySpec& entry = spec.entries[e];
    const std::vector<PlannedVariant>& plan = plans[e];
    const bool too_many = static_cast<int>(plan.size()) > spec.max_variants;
    if (!as_json) {
      std::cout << "entry " << entry.name << ": " << plan.size() << " variant(s) planned (max_variants " << spec.max_variants
                << ")\n";
      std::string text = variant_plan_text(captures, plan);
      for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        std::cout << "  " << text.substr(at, end - at) << "\n";
        at = end + 1;
      }
    }
    if (too_many)
      std::cerr << "aotrace: warning: entry '" << entry.name << "' needs " << plan.size()
                << " variants, more than max_variants = " << spec.max_variants << ": compile will refuse it\n";
  }
  return 0;
}

}  // namespace aotrace::cli
