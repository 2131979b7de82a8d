// `aotrace profiles` (issue 15): authoring shape-profile YAML.
//   schema             the JSON Schema (draft 2020-12) of the YAML, for editors and validators;
//   check SPEC         everything compile would reject, without lowering: the YAML and its
//                      schema, capture of every profile with its graph breaks, the planned
//                      variants against max_variants; exit 1 on the first class of error (with
//                      file:line:col), else a summary of entries, variants, guards and
//                      assumptions (--json: one object).
// Test: errors_tests Profiles.*, profiles_schema_test.py (every example spec validates).
#include <chrono>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "embed/embed.h"

namespace aotrace::cli {

int profiles_schema_command() {
  std::cout << shape_profiles::profile_json_schema();
  return 0;
}

int profiles_check_command(const std::filesystem::path& yaml, bool as_json) {
  const auto start = std::chrono::steady_clock::now();
  const auto spec = shape_profiles::parse_profile_file(yaml);
  check_targets(spec);
  if (as_json) embed::Interpreter::instance().send_prints_to_stderr();  // stdout is the report
  const auto captures = capture_all(spec);
  refuse_graph_breaks(captures);
  check_max_variants(spec, captures);
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& entry : spec.entries) {
    const std::vector<PlannedVariant> plan = plan_variants(captures, entry);
    size_t guards = 0, assumptions = 0, profiles = 0;
    for (const auto& v : plan) {
      const auto& first = captures[v.captures.front()].capture;
      guards += first.guards.size();
      assumptions += first.assumptions.size();
      profiles += v.captures.size();
    }
    // Padding buckets: proved safe in eager as compile does (a UserError when not).
    nlohmann::json buckets = nlohmann::json::array();
    for (const artifacts::BucketSpec& b : check_padding_buckets(spec, entry, captures))
      buckets.push_back({{"dim", b.dim}, {"sizes", b.sizes}, {"padded_inputs", b.inputs.size()},
                         {"cut_outputs", b.outputs.size()}});
    entries.push_back({{"name", entry.name}, {"profiles", profiles}, {"variants", plan.size()},
                       {"guards", guards}, {"assumptions", assumptions}, {"buckets", buckets},
                       {"plan", variant_plan_text(captures, plan)}});
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (as_json) {
    std::cout << nlohmann::json{{"spec", yaml.string()}, {"ok", true}, {"max_variants", spec.max_variants},
                                {"entries", entries}, {"seconds", seconds}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << yaml.string() << ": ok (" << entries.size() << " entr" << (entries.size() == 1 ? "y" : "ies")
            << ", checked in " << static_cast<int>(seconds * 1000) << " ms; nothing lowered)\n";
  for (const auto& e : entries) {
    std::cout << "  entry " << e["name"].get<std::string>() << ": " << e["profiles"] << " profile(s) in "
              << e["variants"] << " variant(s) (max_variants " << spec.max_variants << "), " << e["guards"]
              << " guards, " << e["assumptions"] << " assumptions\n";
    for (const auto& b : e["buckets"])
      std::cout << "    dim " << b["dim"].get<std::string>() << ": buckets " << b["sizes"].dump()
                << ", padding checked in eager below every bucket\n";
    const std::string text = e["plan"];
    for (size_t at = 0; at < text.size();) {
      const size_t end = text.find('\n', at);
      std::cout << "    " << text.substr(at, end - at) << "\n";
      at = end + 1;
    }
  }
  return 0;
}

}  // namespace aotrace::cli
