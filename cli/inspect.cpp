// `aotrace inspect BUNDLE [--json]`: what a bundle holds, read from its bundle.fb (verified
// first) without loading its kernels, so bundles for other machines can be inspected too.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

#include <flatbuffers/flatbuffers.h>

#include "artifacts/runtime/aotrace_runtime.h"
#include "bundle_generated.h"
#include "cli/commands.h"

namespace aotrace::cli {

using nlohmann::json;

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

json strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  json out = json::array();
  if (v) for (const auto* s : *v) out.push_back(str(s));
  return out;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

const char* dtype_name(fb::DType d) {
  return static_cast<uint8_t>(d) <= static_cast<uint8_t>(fb::DType::b8)
             ? rt::dtype_name(static_cast<rt::DType>(d))
             : "unknown";
}

// A shape: sizes, and a dynamic dim (format 1.5, code < 0) as its expression ("seq").
json tensors(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>>* v, const fb::Variant& variant) {
  json out = json::array();
  if (!v) return out;
  for (const auto* t : *v) {
    json shape = json::array();
    if (t->shape())
      for (int64_t d : *t->shape()) {
        const uint64_t k = d < 0 ? static_cast<uint64_t>(-(d + 1)) : 0;
        if (d >= 0) shape.push_back(d);
        else if (variant.dim_exprs() && k < variant.dim_exprs()->size())
          shape.push_back(str(variant.dim_exprs()->Get(static_cast<flatbuffers::uoffset_t>(k))->text()));
        else shape.push_back("?");
      }
    out.push_back({{"name", str(t->name())}, {"dtype", dtype_name(t->dtype())}, {"shape", shape},
                   {"source", str(t->source())}});
  }
  return out;
}

// The variant's dynamic dims (format 1.5): name, range, and the input dim each is read from.
json dynamic_dims(const fb::Variant& v) {
  json out = json::array();
  if (!v.symbols()) return out;
  for (const auto* s : *v.symbols())
    out.push_back({{"name", str(s->name())}, {"min", s->min()}, {"max", s->max()}, {"multiple_of", s->multiple_of()},
                   {"input", s->input()}, {"dim", s->dim()}});
  return out;
}

json variant_json(const fb::Variant& v) {
  json guards = json::array(), assumptions = json::array(), kernels = json::array();
  if (v.guards())
    for (const auto* g : *v.guards()) guards.push_back({{"text", str(g->text())}, {"origin", str(g->origin())}});
  if (v.assumptions())
    for (const auto* a : *v.assumptions())
      assumptions.push_back({{"text", str(a->text())}, {"origin", str(a->origin())}});
  int64_t arena = 0, arena_at_min = 0;
  if (const auto* plan = v.plan()) {
    arena = plan->arena_bytes();
    // Before format 1.6 the field is absent (0): the plan's one peak.
    arena_at_min = plan->arena_bytes_at_min() > 0 ? plan->arena_bytes_at_min() : arena;
    if (plan->calls())
      for (const auto* c : *plan->calls()) kernels.push_back(str(c->symbol()));
  }
  json updated = json::array();  // names of the inputs changed in place (format 1.4)
  if (v.input_updates() && v.inputs())
    for (int32_t i : *v.input_updates())
      if (i >= 0 && static_cast<flatbuffers::uoffset_t>(i) < v.inputs()->size())
        updated.push_back(str(v.inputs()->Get(static_cast<flatbuffers::uoffset_t>(i))->name()));
  return {{"name", str(v.name())}, {"profiles", strings(v.profiles())}, {"inputs", tensors(v.inputs(), v)},
          {"outputs", tensors(v.outputs(), v)}, {"output_tree", str(v.output_tree())},
          {"updated_inputs", updated},
          {"guards", guards}, {"assumptions", assumptions}, {"kernels", kernels},
          {"arena_bytes", arena}, {"arena_bytes_at_min", arena_at_min}, {"golden_pairs", v.golden() ? v.golden()->size() : 0},
          {"dynamic_dims", dynamic_dims(v)}};
}

// The stripped runtime library built next to aotrace (runtime/CMakeLists.txt), if present.
json runtime_library_json() {
  struct stat st {};
  std::string path = AOTRACE_RUNTIME_STRIPPED_SO;
  if (::stat(path.c_str(), &st) != 0) return {{"path", path}, {"stripped_bytes", nullptr}};
  return {{"path", path}, {"stripped_bytes", static_cast<int64_t>(st.st_size)},
          {"what", "libaotrace_runtime.so (shared, stripped, " AOTRACE_RUNTIME_BUILD_TYPE
                   "), C API and C++ API; the per-bundle runtime/ folder builds the same sources"}};
}

std::vector<std::string> string_vector(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v) for (const auto* s : *v) out.push_back(str(s));
  return out;
}

// The kernel libraries (baseline first, then faster ones) and the one the runtime would load
// here (rt::choose_cpu_library; AOTRACE_DISABLE_CPU_FEATURES counts), null when none would.
json cpu_libraries_json(const fb::Bundle& b, json& load_here) {
  std::vector<rt::CpuLibraryInfo> libs;
  libs.push_back({str(b.cpu_library()), str(b.cpu()), string_vector(b.required_cpu_features())});
  if (b.faster_cpu_libraries())
    for (const auto* l : *b.faster_cpu_libraries())
      libs.push_back({str(l->path()), str(l->cpu()), string_vector(l->required_cpu_features())});
  json out = json::array();
  if (libs.front().path.empty() && libs.size() == 1) {
    load_here = nullptr;
    return out;
  }
  for (size_t i = 0; i < libs.size(); ++i)
    out.push_back({{"path", libs[i].path}, {"cpu", libs[i].cpu}, {"baseline", i == 0},
                   {"cpu_features", libs[i].features},
                   {"missing_on_this_machine", rt::missing_cpu_features(libs[i].features)}});
  int chosen = rt::triple_matches_host(str(b.triple())) ? rt::choose_cpu_library(libs) : -1;
  load_here = chosen < 0 ? json(nullptr) : json(libs[static_cast<size_t>(chosen)].path);
  return out;
}

json bundle_json(const std::string& dir, const fb::Bundle& b) {
  json files = json::array(), weights = json::array(), entries = json::array();
  if (b.files())
    for (const auto* f : *b.files())
      files.push_back({{"path", str(f->path())}, {"size", f->size()}, {"xxh3", hex64(f->xxh3())}});
  uint64_t weight_bytes = 0;
  if (b.weights())
    for (const auto* w : *b.weights()) {
      json shape = json::array();
      if (w->shape()) for (int64_t d : *w->shape()) shape.push_back(d);
      weights.push_back({{"name", str(w->name())}, {"dtype", dtype_name(w->dtype())}, {"shape", shape},
                         {"offset", w->offset()}, {"size", w->size()}});
      weight_bytes += w->size();
    }
  int64_t peak = 0;
  if (b.entries())
    for (const auto* e : *b.entries()) {
      json variants = json::array();
      if (e->variants())
        for (const auto* v : *e->variants()) {
          variants.push_back(variant_json(*v));
          peak = std::max<int64_t>(peak, variants.back()["arena_bytes"].get<int64_t>());
        }
      json buckets = json::array();  // format 1.7
      if (e->buckets())
        for (const auto* d : *e->buckets()) {
          json sizes = json::array(), padded = json::array(), cut = json::array();
          if (d->sizes()) for (int64_t n : *d->sizes()) sizes.push_back(n);
          if (d->inputs())
            for (const auto* a : *d->inputs()) padded.push_back({{"input", a->index()}, {"axis", a->axis()}, {"pad", a->pad()}});
          if (d->outputs())
            for (const auto* a : *d->outputs()) cut.push_back({{"output", a->index()}, {"axis", a->axis()}});
          buckets.push_back({{"dim", str(d->name())}, {"sizes", sizes}, {"padded_inputs", padded}, {"cut_outputs", cut}});
        }
      entries.push_back({{"name", str(e->name())}, {"variants", variants}, {"buckets", buckets}});
    }
  std::vector<std::string> cpu_features = string_vector(b.required_cpu_features());
  json load_here;
  json cpu_libraries = cpu_libraries_json(b, load_here);
  return {{"bundle", dir},
          {"name", str(b.name())},
          {"format_version", std::to_string(b.format_major()) + "." + std::to_string(b.format_minor())},
          {"runtime_format_version", std::to_string(rt::kFormatMajor) + "." + std::to_string(rt::kFormatMinor)},
          {"required_features", strings(b.required_features())},
          {"kernel_abi_version", b.kernel_abi_version()},
          {"tool_version", str(b.tool_version())},
          {"toolchain", str(b.toolchain())},
          {"hardware", {{"triple", str(b.triple())}, {"cpu", str(b.cpu())},
                        {"cpu_features", cpu_features},
                        {"missing_on_this_machine", rt::missing_cpu_features(cpu_features)},
                        {"cpu_libraries", cpu_libraries},
                        {"cpu_library_loaded_here", load_here}}},
          {"cpu_library", str(b.cpu_library())},
          {"entries", entries},
          {"weights", weights},
          {"weights_bytes", weight_bytes},
          {"peak_arena_bytes", peak},
          {"files", files},
          {"runtime_library", runtime_library_json()}};
}

std::string join(const json& array, const char* sep = ", ") {
  std::string out;
  for (const auto& v : array) out += (out.empty() ? "" : sep) + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

std::string inspect_text(const json& j) {
  std::string s;
  auto line = [&](const std::string& l) { s += l + "\n"; };
  line("bundle " + j["bundle"].get<std::string>() + " (" + j["name"].get<std::string>() + ")");
  line("  format " + j["format_version"].get<std::string>() + " (this runtime reads " +
       j["runtime_format_version"].get<std::string>() + "), kernel ABI " + j["kernel_abi_version"].dump() +
       ", required features: " + (j["required_features"].empty() ? "none" : join(j["required_features"])));
  line("  written by " + j["tool_version"].get<std::string>() + ", toolchain " + j["toolchain"].get<std::string>());
  const json& hw = j["hardware"];
  line("  hardware: " + hw["triple"].get<std::string>() + ", cpu " + hw["cpu"].get<std::string>() +
       ", cpu features: " + (hw["cpu_features"].empty() ? "none" : join(hw["cpu_features"])) +
       (hw["missing_on_this_machine"].empty() ? "" : " (missing here: " + join(hw["missing_on_this_machine"]) + ")"));
  line("  cpu libraries: " + std::to_string(hw["cpu_libraries"].size()) + "; this machine would load " +
       (hw["cpu_library_loaded_here"].is_null() ? std::string("none") : hw["cpu_library_loaded_here"].get<std::string>()));
  const json& baseline_features = hw["cpu_features"];
  for (const auto& l : hw["cpu_libraries"]) {
    json extra = json::array();  // a faster library's features beyond the baseline's
    for (const auto& f : l["cpu_features"])
      if (std::find(baseline_features.begin(), baseline_features.end(), f) == baseline_features.end()) extra.push_back(f);
    line("    " + l["path"].get<std::string>() + ": cpu " + l["cpu"].get<std::string>() +
         (l["baseline"].get<bool>() ? " (baseline)" : ", needs also: " + (extra.empty() ? std::string("nothing") : join(extra))) +
         (l["missing_on_this_machine"].empty() ? "" : " (missing here: " + join(l["missing_on_this_machine"]) + ")"));
  }
  for (const auto& e : j["entries"]) {
    line("  entry " + e["name"].get<std::string>() + ": " + std::to_string(e["variants"].size()) + " variant(s)");
    for (const auto& b : e["buckets"])
      line("    dim " + b["dim"].get<std::string>() + " in buckets [" + join(b["sizes"]) + "]: calls padded up to a bucket (" +
           std::to_string(b["padded_inputs"].size()) + " input axes), " + std::to_string(b["cut_outputs"].size()) +
           " output axes cut back");
    for (const auto& v : e["variants"]) {
      line("    variant " + v["name"].get<std::string>() + " (profiles: " + join(v["profiles"]) + ")");
      for (const auto& t : v["inputs"])
        line("      input " + t["name"].get<std::string>() + ": " + t["dtype"].get<std::string>() + " " + t["shape"].dump());
      for (const auto& t : v["outputs"])
        line("      output " + t["name"].get<std::string>() + ": " + t["dtype"].get<std::string>() + " " + t["shape"].dump());
      line("      output tree " + v["output_tree"].get<std::string>());
      for (const auto& name : v["updated_inputs"])
        line("      updates input " + name.get<std::string>() + " in place (written back after each call)");
      for (const auto& g : v["guards"])
        line("      guard " + g["text"].get<std::string>() + (g["origin"].get<std::string>().empty() ? "" : "  (" + g["origin"].get<std::string>() + ")"));
      for (const auto& a : v["assumptions"])
        line("      assumption " + a["text"].get<std::string>() + (a["origin"].get<std::string>().empty() ? "" : "  (" + a["origin"].get<std::string>() + ")"));
      line("      " + std::to_string(v["kernels"].size()) + " kernel(s): " + join(v["kernels"]));
      for (const auto& d : v["dynamic_dims"])
        line("      dynamic dim " + d["name"].get<std::string>() + " in [" + d["min"].dump() + ", " + d["max"].dump() + "]" +
             (d["multiple_of"].get<int64_t>() > 1 ? " (multiples of " + d["multiple_of"].dump() + ")" : ""));
      line("      memory plan: arena " + v["arena_bytes"].dump() + " bytes" +
           (v["dynamic_dims"].empty() ? ""
                                      : " at the dims' maxima, " + v["arena_bytes_at_min"].dump() +
                                            " at their minima (allocated once, at open, for the maxima)") +
           "; golden pairs: " + v["golden_pairs"].dump());
    }
  }
  line("  peak arena bytes: " + j["peak_arena_bytes"].dump());
  line("  weights: " + std::to_string(j["weights"].size()) + " (" + j["weights_bytes"].dump() + " bytes)");
  for (const auto& w : j["weights"])
    line("    " + w["name"].get<std::string>() + ": " + w["dtype"].get<std::string>() + " " + w["shape"].dump() +
         " at " + w["offset"].dump() + ", " + w["size"].dump() + " bytes");
  line("  files: " + std::to_string(j["files"].size()) + " (+ bundle.fb)");
  for (const auto& f : j["files"])
    line("    " + f["xxh3"].get<std::string>() + " " + f["size"].dump() + " " + f["path"].get<std::string>());
  const json& rl = j["runtime_library"];
  line("  runtime library: " + (rl["stripped_bytes"].is_null() ? std::string("not built (") + rl["path"].get<std::string>() + ")"
                                                                : rl["stripped_bytes"].dump() + " bytes, " + rl["what"].get<std::string>()));
  return s;
}

}  // namespace

int inspect_command(const std::filesystem::path& bundle, bool as_json) {
  const std::string dir = bundle.string();
  std::ifstream in(bundle / "bundle.fb", std::ios::binary);
  if (!in)
    user_error("cannot open " + (bundle / "bundle.fb").string() + ": not a bundle directory", {},
               "pass the NAME.aot directory written by `aotrace compile`");
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  flatbuffers::Verifier verifier(buf.data(), buf.size());
  if (!fb::VerifyBundleBuffer(verifier))
    user_error("bundle " + dir + " is corrupt: bundle.fb fails verification (or is of another format major)",
               {}, "run `aotrace verify " + dir + "` for details, or recompile the bundle");
  json j = bundle_json(dir, *fb::GetBundle(buf.data()));
  if (as_json) std::cout << j.dump(2) << "\n";
  else std::cout << inspect_text(j);
  return 0;
}

}  // namespace aotrace::cli
