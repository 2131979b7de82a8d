// Capture of every profile, and the explain report (text and JSON) built from it.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "driver/compile.h"

namespace aotrace::driver {

using nlohmann::json;

embed::CaptureArg capture_arg(const shape_profiles::ArgSpec& a, const shape_profiles::EntrySpec& entry) {
  using Kind = shape_profiles::ArgSpec::Kind;
  embed::CaptureArg c;
  c.key = a.key;
  c.input = a.input;
  switch (a.kind) {
    case Kind::Input:
      c.kind = entry.inputs.at(static_cast<size_t>(a.input)).is_scalar() ? embed::CaptureArg::Kind::Scalar
                                                                          : embed::CaptureArg::Kind::Tensor;
      break;
    case Kind::Tuple: c.kind = embed::CaptureArg::Kind::Tuple; break;
    case Kind::List: c.kind = embed::CaptureArg::Kind::List; break;
    case Kind::Dict: c.kind = embed::CaptureArg::Kind::Dict; break;
  }
  for (const auto& item : a.items) c.items.push_back(capture_arg(item, entry));
  return c;
}

namespace {

// The inputs of `entry` under `profile`: example shapes, and the dims traced as symbols.
std::vector<embed::CaptureInput> capture_inputs(const shape_profiles::ProfileSet& spec,
                                                const shape_profiles::EntrySpec& entry,
                                                const shape_profiles::Profile& profile) {
  std::vector<embed::CaptureInput> inputs;
  for (const auto& in : entry.inputs) {
    embed::CaptureInput c{in.name, in.dtype, spec.concrete_shape(in, profile), in.loc, in.is_scalar(), in.value, {}};
    c.on_cuda = in.on_cuda;
    c.device_origin = in.device_loc;
    for (size_t d = 0; d < in.shape.size(); ++d) {
      const shape_profiles::DimRef& ref = in.shape[d];
      if (!ref.is_named) continue;
      auto range = profile.ranges.find(ref.name);
      if (range == profile.ranges.end()) continue;
      const shape_profiles::DimSpec* dim = spec.find_dim(ref.name);
      c.dynamic.push_back({static_cast<int>(d), ref.name, range->second, dim ? dim->loc : ref.loc});
    }
    inputs.push_back(std::move(c));
  }
  return inputs;
}

// `profile` restricted to the dims `entry` uses: an entry is not captured once per size of a
// dim it never sees.
shape_profiles::Profile entry_profile(const shape_profiles::ProfileSet& spec, const shape_profiles::EntrySpec& entry,
                                      const shape_profiles::Profile& profile) {
  std::set<std::string> used;
  for (const auto& in : entry.inputs)
    for (const auto& ref : in.shape)
      if (ref.is_named) used.insert(ref.name);
  shape_profiles::Profile p = profile;
  const bool generated = profile.name == shape_profiles::profile_name(profile, spec.dims);
  std::erase_if(p.dims, [&](const auto& kv) { return !used.count(kv.first); });
  std::erase_if(p.ranges, [&](const auto& kv) { return !used.count(kv.first); });
  std::erase_if(p.notes, [&](const std::string& n) {
    const size_t eq = n.find('=');
    return eq != std::string::npos && !used.count(n.substr(0, eq));
  });
  if (generated) p.name = shape_profiles::profile_name(p, spec.dims);
  return p;
}

}  // namespace

std::vector<ProfileCapture> capture_all(const shape_profiles::ProfileSet& spec,
                                        const std::function<void(const ProfileCapture&)>& on_captured) {
  auto& interp = embed::Interpreter::instance();
  interp.run_script(spec.script);
  std::vector<ProfileCapture> out;
  for (const auto& entry : spec.entries) {
    // Profiles to capture, in order; a branch on a dynamic dim replaces its profile by the
    // parts of its range (RangeSplit), captured in its place.
    std::vector<shape_profiles::Profile> pending;
    std::set<std::string> seen;
    for (const auto& profile : spec.profiles) {
      shape_profiles::Profile p = entry_profile(spec, entry, profile);
      if (seen.insert(p.name).second) pending.push_back(std::move(p));
    }
    std::vector<std::shared_ptr<const shape_profiles::Profile>> done;
    size_t captured = 0;
    while (!pending.empty()) {
      shape_profiles::Profile profile = std::move(pending.front());
      pending.erase(pending.begin());
      ProfileCapture pc;
      pc.entry = &entry;
      pc.inputs = capture_inputs(spec, entry, profile);
      std::vector<embed::CaptureArg> arguments;
      for (const auto& a : entry.args) arguments.push_back(capture_arg(a, entry));
      try {
        pc.capture = interp.capture(entry.call, pc.inputs, std::move(arguments));
      } catch (const embed::RangeSplit& split) {
        // Every variant a split adds counts against max_variants: stop before it runs away.
        if (captured + pending.size() + split.parts.size() > static_cast<size_t>(spec.max_variants) * 4)
          user_error("the branch on " + split.condition + " splits dim '" + split.symbol + "' into " +
                         std::to_string(split.parts.size()) + " ranges, more variants than max_variants = " +
                         std::to_string(spec.max_variants) + " allows",
                     split.loc, "declare " + split.symbol + " static, or list its sizes");
        std::vector<shape_profiles::Profile> parts = shape_profiles::split_profile(
            profile, spec.dims, split.symbol, split.parts, "the range splits at `" + split.condition + "` (" + split.loc.str() + ")");
        pending.insert(pending.begin(), parts.begin(), parts.end());
        continue;
      }
      ++captured;
      pc.owned_profile = std::make_shared<const shape_profiles::Profile>(std::move(profile));
      pc.profile = pc.owned_profile.get();
      if (on_captured) on_captured(pc);
      out.push_back(std::move(pc));
    }
  }
  return out;
}

namespace {

json loc_json(const SourceLoc& l) {
  return json{{"file", l.file}, {"line", l.line}, {"function", l.function}};
}

std::map<std::string, int> op_counts(const ir::Graph& g) {
  std::map<std::string, int> counts;
  for (const auto& n : g.nodes) counts[std::string(ir::op_name(n.op))]++;
  return counts;
}

// The captured graphs: one per region between breaks (at least the first).
const std::vector<ir::Graph>& graphs_of(const embed::Capture& c) {
  static const std::vector<ir::Graph> none;
  return c.graphs.empty() ? none : c.graphs;
}

size_t graph_count(const embed::Capture& c) { return std::max<size_t>(1, c.graphs.size()); }

}  // namespace

json explain_json(const ProfileCapture& pc, bool with_graph) {
  const auto& c = pc.capture;
  json breaks = json::array();
  for (const auto& b : c.breaks) {
    json stack = json::array();
    for (const auto& l : b.user_stack) stack.push_back(loc_json(l));
    breaks.push_back({{"category", b.category}, {"reason", b.reason}, {"hint", b.hint}, {"user_stack", stack}});
  }
  json guards = json::array();
  for (const auto& g : c.guards)
    guards.push_back({{"guard", g.str()}, {"origin", g.origin.known() ? g.origin.str() : ""}});
  json assumptions = json::array();
  for (const auto& a : c.assumptions)
    assumptions.push_back({{"assumption", a.text}, {"origin", a.origin.known() ? a.origin.str() : ""}});
  json ops_per_graph = json::array();
  for (const auto& g : graphs_of(c)) {
    json ops = json::object();
    for (const auto& [op, n] : op_counts(g)) ops[op] = n;
    ops_per_graph.push_back(ops);
  }
  if (c.graphs.empty()) {
    json ops = json::object();
    for (const auto& [op, n] : op_counts(c.graph)) ops[op] = n;
    ops_per_graph.push_back(ops);
  }
  json j = {{"entry", pc.entry->name},
            {"profile", pc.profile->name},
            {"graph_count", graph_count(c)},
            {"graph_break_count", c.breaks.size()},
            {"break_reasons", breaks},
            {"ops_per_graph", ops_per_graph},
            {"guards", guards},
            {"assumptions", assumptions},
            {"compile_times", {{"capture_seconds", c.seconds}}}};
  json dynamic = json::object();
  for (const auto& [dim, r] : pc.profile->ranges)
    dynamic[dim] = {{"min", r.min}, {"max", r.max}, {"multiple_of", r.multiple_of}};
  j["dynamic_dims"] = dynamic;
  j["notes"] = pc.profile->notes;
  if (with_graph) {
    json dumps = json::array();
    for (const auto& g : graphs_of(c)) dumps.push_back(g.str());
    if (c.graphs.empty()) dumps.push_back(c.graph.str());
    j["graphs"] = dumps;
  }
  return j;
}

std::string explain_text(const ProfileCapture& pc, bool with_graph) {
  const auto& c = pc.capture;
  std::ostringstream s;
  s << "entry " << pc.entry->name << ", profile " << pc.profile->name << "\n";
  for (const auto& [dim, r] : pc.profile->ranges)
    s << "  dynamic dim " << dim << " in [" << r.min << ", " << r.max << "]"
      << (r.multiple_of > 1 ? " (multiples of " + std::to_string(r.multiple_of) + ")" : "") << ": one symbol\n";
  for (const std::string& n : pc.profile->notes) s << "  profile " << n << "\n";
  s << "  graphs: " << graph_count(c) << ", graph breaks: " << c.breaks.size() << "\n";
  for (const auto& b : c.breaks) {
    const SourceLoc at = b.user_stack.empty() ? SourceLoc{} : b.user_stack.back();
    s << "  break [" << b.category << "] at " << at.str() << ": " << b.reason << "\n";
    for (auto it = b.user_stack.rbegin(); it != b.user_stack.rend(); ++it)
      s << "      in " << it->function << " at " << it->str() << "\n";
    if (!b.hint.empty()) s << "      hint: " << b.hint << "\n";
  }
  const std::vector<ir::Graph> single = {c.graph};
  const auto& graphs = c.graphs.empty() ? single : c.graphs;
  for (size_t i = 0; i < graphs.size(); ++i) {
    s << "  ops of graph " << i + 1 << ":";
    for (const auto& [op, n] : op_counts(graphs[i])) s << " " << op << "=" << n;
    s << "\n";
  }
  s << "  guards:\n";
  for (const auto& g : c.guards)
    s << "    " << g.str() << (g.origin.known() ? "   # " + g.origin.str() : "") << "\n";
  s << "  assumptions:\n";
  for (const auto& a : c.assumptions)
    s << "    " << a.text << (a.origin.known() ? "   # " + a.origin.str() : "") << "\n";
  s << "  capture time: " << c.seconds << " s\n";
  if (with_graph)
    for (size_t i = 0; i < graphs.size(); ++i)
      s << "graph " << i + 1 << " of " << graphs.size() << ":\n" << graphs[i].str() << "\n";
  return s.str();
}

std::string variant_key(const embed::Capture& c) {
  std::string key = c.graph.str();
  for (const auto& g : c.guards) key += "\n" + g.str();
  for (const auto& a : c.assumptions) key += "\n" + a.text;
  return key;
}

std::vector<PlannedVariant> plan_variants(const std::vector<ProfileCapture>& captures,
                                          const shape_profiles::EntrySpec& entry) {
  std::vector<PlannedVariant> variants;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < captures.size(); ++i) {
    if (captures[i].entry != &entry) continue;
    auto [it, fresh] = by_key.emplace(variant_key(captures[i].capture), variants.size());
    if (fresh) variants.emplace_back();
    variants[it->second].captures.push_back(i);
  }
  // Most specific first: dispatch takes the first variant whose guards accept the inputs.
  std::stable_sort(variants.begin(), variants.end(), [&](const PlannedVariant& a, const PlannedVariant& b) {
    return captures[a.captures.front()].profile->ranges.size() < captures[b.captures.front()].profile->ranges.size();
  });
  return variants;
}

std::string variant_plan_text(const std::vector<ProfileCapture>& captures, const std::vector<PlannedVariant>& plan) {
  std::string s;
  for (size_t v = 0; v < plan.size(); ++v) {
    const ProfileCapture& first = captures[plan[v].captures.front()];
    s += "v" + std::to_string(v) + ": profile";
    s += plan[v].captures.size() == 1 ? " " : "s ";
    for (size_t k = 0; k < plan[v].captures.size(); ++k)
      s += (k ? ", " : "") + captures[plan[v].captures[k]].profile->name;
    std::string sizes;
    for (const auto& [dim, r] : first.profile->ranges)
      sizes += (sizes.empty() ? "" : ", ") + dim + " in [" + std::to_string(r.min) + ", " + std::to_string(r.max) + "]" +
               (r.multiple_of > 1 ? " (multiples of " + std::to_string(r.multiple_of) + ")" : "");
    s += sizes.empty() ? " (static)" : " (dynamic: " + sizes + ")";
    for (const std::string& n : first.profile->notes) s += "\n    " + n;
    s += "\n";
  }
  return s;
}

void check_max_variants(const shape_profiles::ProfileSet& spec, const std::vector<ProfileCapture>& captures) {
  for (const auto& entry : spec.entries) {
    std::vector<PlannedVariant> plan = plan_variants(captures, entry);
    if (static_cast<int>(plan.size()) <= spec.max_variants) continue;
    throw UserError("entry '" + entry.name + "' needs " + std::to_string(plan.size()) + " variants, more than max_variants = " +
                        std::to_string(spec.max_variants),
                    entry.loc,
                    "raise options.max_variants to " + std::to_string(plan.size()) +
                        " in the YAML, declare fewer static sizes, or use a dynamic range ({min, max}) for a dim",
                    {"the planned variants (nothing was lowered):\n" + variant_plan_text(captures, plan)});
  }
}

void refuse_graph_breaks(const std::vector<ProfileCapture>& captures) {
  for (const auto& pc : captures) {
    if (pc.capture.breaks.empty()) continue;
    const auto& b = pc.capture.breaks.front();
    std::vector<std::string> notes;
    notes.push_back("entry '" + pc.entry->name + "', profile " + pc.profile->name +
                    ": graph break [" + b.category + "]");
    for (auto it = b.user_stack.rbegin(); it != b.user_stack.rend(); ++it)
      notes.push_back("in " + it->function + " at " + it->str());
    notes.push_back("a bundle holds one graph per variant; run `aotrace explain` for every break");
    SourceLoc at = b.user_stack.empty() ? SourceLoc{} : b.user_stack.back();
    throw UserError("graph break: " + b.reason, at, b.hint, notes);
  }
}

}  // namespace aotrace::driver
