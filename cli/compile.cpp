// `aotrace compile`: capture every profile, refuse graph breaks, group profiles into variants,
// lower each variant, link the CPU library and write the bundle.
#include <chrono>
#include <iostream>
#include <map>

#include "artifacts/artifacts.h"
#include "artifacts/runtime/aotrace_runtime.h"
#include "cli/commands.h"
#include "lowering/lowering.h"

namespace aotrace::cli {

using nlohmann::json;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<int64_t> static_dims(const ir::TensorType& t) {
  auto s = t.static_shape();
  AOT_CHECK(s.has_value(), "a variant with dynamic dims reached the bundle writer");
  return *s;
}

// Profiles whose graphs and guards come out the same share one variant (DESIGN §2).
std::string variant_key(const embed::Capture& c) {
  std::string key = c.graph.str();
  for (const auto& g : c.guards) key += "\n" + g.str();
  for (const auto& a : c.assumptions) key += "\n" + a.text;
  return key;
}

json graph_json(const ir::Graph& g, const std::string& entry, const std::string& variant) {
  json inputs = json::array(), weights = json::array(), outputs = json::array();
  for (const auto& in : g.inputs) inputs.push_back({{"name", in.name}, {"type", g.type(in.value).str()}, {"source", in.source}});
  for (const auto& w : g.weights) weights.push_back({{"name", w.name}, {"type", g.type(w.value).str()}, {"source", w.source}});
  for (auto v : g.outputs) outputs.push_back(g.type(v).str());
  return {{"entry", entry}, {"variant", variant}, {"inputs", inputs}, {"weights", weights},
          {"outputs", outputs}, {"output_tree", g.output_tree.str()}, {"nodes", g.nodes.size()},
          {"text", g.str()}};
}

// Adds the graph's weights to the bundle's table (each tensor once) and remaps the plan.
void add_weights(const ir::Graph& g, ir::ExecutionPlan& plan, artifacts::BundleSpec& bundle,
                 std::map<std::string, int64_t>& index_by_source) {
  std::vector<int64_t> global(g.weights.size());
  for (size_t i = 0; i < g.weights.size(); ++i) {
    const auto& w = g.weights[i];
    // Without a source (a tensor constant of the trace) only the same data is the same weight.
    const std::string key = (w.source.empty() ? "data@" + std::to_string(reinterpret_cast<uintptr_t>(w.data.get()))
                                              : w.source) + "|" + g.type(w.value).str();
    auto it = index_by_source.find(key);
    if (it == index_by_source.end()) {
      artifacts::WeightSpec ws{w.name, g.type(w.value).dtype, static_dims(g.type(w.value)), w.data};
      bundle.weights.push_back(std::move(ws));
      it = index_by_source.emplace(key, static_cast<int64_t>(bundle.weights.size() - 1)).first;
    }
    global[i] = it->second;
  }
  for (auto& b : plan.buffers)
    if (b.kind == ir::PlanBuffer::Kind::Weight) b.index = global.at(static_cast<size_t>(b.index));
}

artifacts::VariantSpec variant_spec(const ProfileCapture& pc, const std::string& name) {
  const ir::Graph& g = pc.capture.graph;
  artifacts::VariantSpec v;
  v.name = name;
  v.profiles = {pc.profile->name};
  for (const auto& in : g.inputs)
    v.inputs.push_back({in.name, g.type(in.value).dtype, static_dims(g.type(in.value)), in.source});
  for (size_t i = 0; i < g.outputs.size(); ++i)
    v.outputs.push_back({"out" + std::to_string(i), g.type(g.outputs[i]).dtype,
                         static_dims(g.type(g.outputs[i])), ""});
  v.output_tree = g.output_tree;
  v.guards = pc.capture.guards;
  v.assumptions = pc.capture.assumptions;
  v.graph_json = graph_json(g, pc.entry->name, name).dump(1);
  return v;
}

}  // namespace

int compile_command(const std::filesystem::path& yaml, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto spec = shape_profiles::parse_profile_file(yaml);
  auto captures = capture_all(spec);
  refuse_graph_breaks(captures);

  lowering::Options lo;
  lo.triple = options.triple;
  lo.cpu = options.cpu;
  artifacts::BundleSpec bundle;
  bundle.name = spec.name;
  bundle.triple = lowering::resolved_triple(lo);
  bundle.toolchain = "LLVM 16";
  bundle.cpu = lowering::resolved_cpu(lo);
  // The preflight lists the features the runtime can check on the device.
  for (const auto& f : lowering::target_cpu_features(lo))
    if (rt::cpu_feature_known(f)) bundle.cpu_features.push_back(f);
  std::map<std::string, int64_t> weight_index;
  std::vector<ir::Bytes> objects;
  json report_profiles = json::array();
  struct VariantTiming {
    std::string entry, profile;
    double capture_seconds, lowering_seconds;
  };
  std::vector<VariantTiming> timings;
  int kernels = 0;

  for (const auto& entry : spec.entries) {
    artifacts::EntrySpec es;
    es.name = entry.name;
    std::map<std::string, size_t> variant_of_key;
    for (const auto& pc : captures) {
      if (pc.entry != &entry) continue;
      json rp = explain_json(pc, false);
      const std::string key = variant_key(pc.capture);
      auto found = variant_of_key.find(key);
      if (found != variant_of_key.end()) {
        es.variants[found->second].profiles.push_back(pc.profile->name);
        rp["variant"] = es.variants[found->second].name;
        rp.erase("compile_times");  // wall-clock: kept out of the bundle, which is deterministic
        report_profiles.push_back(rp);
        continue;
      }
      const std::string vname = "v" + std::to_string(es.variants.size());
      if (static_cast<int>(es.variants.size()) >= spec.max_variants)
        user_error("entry '" + entry.name + "' needs more than max_variants = " +
                       std::to_string(spec.max_variants) + " variants",
                   entry.loc, "raise options.max_variants in the YAML, or declare fewer profiles");
      const auto lower_start = std::chrono::steady_clock::now();
      lowering::LoweredVariant lv = lowering::lower_graph(pc.capture.graph, entry.name + "_" + vname + "_", lo);
      artifacts::VariantSpec vs = variant_spec(pc, vname);
      vs.golden = artifacts::make_golden(pc.capture.graph);
      vs.plan = std::move(lv.plan);
      add_weights(pc.capture.graph, vs.plan, bundle, weight_index);
      objects.push_back(std::move(lv.object));
      kernels += static_cast<int>(vs.plan.calls.size());
      rp["variant"] = vname;
      // Timings are printed, not stored: the same inputs must give a byte-identical bundle.
      timings.push_back({entry.name, pc.profile->name, pc.capture.seconds, seconds_since(lower_start)});
      rp.erase("compile_times");
      report_profiles.push_back(rp);
      variant_of_key.emplace(key, es.variants.size());
      es.variants.push_back(std::move(vs));
    }
    bundle.entries.push_back(std::move(es));
  }
  bundle.cpu_library = lowering::link_cpu_library(objects, lo);
  json entries = json::array();
  for (const auto& e : spec.entries) {
    json inputs = json::array();
    for (const auto& in : e.inputs) inputs.push_back({{"name", in.name}, {"dtype", ir::dtype_torch_name(in.dtype)}});
    entries.push_back({{"name", e.name}, {"call", e.call}, {"inputs", inputs}});
  }
  json report = {{"name", spec.name},
                 {"script", spec.script.string()},
                 {"entries", entries},
                 {"tool", std::string("aotrace ") + AOTRACE_VERSION},
                 {"spec", std::filesystem::absolute(yaml).lexically_normal().string()},
                 {"triple", bundle.triple},
                 {"profiles", report_profiles}};
  bundle.report_json = report.dump(2);

  std::filesystem::path out = options.output.empty() ? std::filesystem::path(spec.name + ".aot") : options.output;
  artifacts::write_bundle(bundle, out);
  size_t variants = 0;
  for (const auto& e : bundle.entries) variants += e.variants.size();
  std::cerr << "aotrace: compiled " << spec.profiles.size() * spec.entries.size() << " profile(s) into "
            << variants << " variant(s), " << kernels << " kernel(s), " << bundle.weights.size()
            << " weight(s) -> " << out.string() << " in " << seconds_since(start) << " s\n";
  for (const auto& t : timings)
    std::cerr << "  " << t.entry << ", profile " << t.profile << ": capture " << t.capture_seconds
              << " s, lowering " << t.lowering_seconds << " s\n";
  return 0;
}

}  // namespace aotrace::cli
