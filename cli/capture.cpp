// Capture of every profile, and the explain report (text and JSON) built from it.
#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/commands.h"

namespace aotrace::cli {

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

std::vector<ProfileCapture> capture_all(const shape_profiles::ProfileSet& spec) {
  for (const auto& d : spec.dims)
    if (d.is_dynamic)
      user_error("dim '" + d.name + "' is dynamic ({min, max}); dynamic dims are not supported yet",
                 d.loc, "list the sizes to support instead, e.g. " + d.name + ": [16, 64, 256]");
  auto& interp = embed::Interpreter::instance();
  interp.run_script(spec.script);
  std::vector<ProfileCapture> out;
  for (const auto& entry : spec.entries) {
    for (const auto& profile : spec.profiles) {
      ProfileCapture pc;
      pc.entry = &entry;
      pc.profile = &profile;
      for (const auto& in : entry.inputs)
        pc.inputs.push_back(embed::CaptureInput{in.name, in.dtype, spec.concrete_shape(in, profile), in.loc,
                                                in.is_scalar(), in.value});
      std::vector<embed::CaptureArg> arguments;
      for (const auto& a : entry.args) arguments.push_back(capture_arg(a, entry));
      pc.capture = interp.capture(entry.call, pc.inputs, std::move(arguments));
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

int explain_command(const std::filesystem::path& yaml, bool as_json, bool graph) {
  auto spec = shape_profiles::parse_profile_file(yaml);
  auto captures = capture_all(spec);
  for (const auto& pc : captures) {
    if (as_json) std::cout << explain_json(pc, graph).dump() << "\n";
    else std::cout << explain_text(pc, graph);
  }
  return 0;
}

}  // namespace aotrace::cli
