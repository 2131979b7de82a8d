// `aotrace inspect BUNDLE [--json]`: what a bundle holds, read through the runtime's metadata
// API (rt::read_bundle_info: bundle.fb read and validated as open() reads it) without loading its
// kernels, so bundles for other machines can be inspected too.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "artifacts/runtime/aotrace_runtime.h"
#include "cli/commands.h"

namespace aotrace::cli {

using nlohmann::json;

namespace {

json strings(const std::vector<std::string>& v) { return json(v); }

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

json texts(const std::vector<rt::TextWithOrigin>& v) {
  json out = json::array();
  for (const rt::TextWithOrigin& t : v) out.push_back({{"text", t.text}, {"origin", t.origin}});
  return out;
}

// A shape: sizes, and a dynamic dim (format 1.5) as its expression ("seq").
json tensors(const std::vector<rt::TensorInfo>& v) {
  json out = json::array();
  for (const rt::TensorInfo& t : v) {
    json shape = json::array();
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (t.shape[d] >= 0) shape.push_back(t.shape[d]);
      else shape.push_back(d < t.dims.size() ? t.dims[d] : "?");
    out.push_back({{"name", t.name}, {"dtype", rt::dtype_name(t.dtype)}, {"shape", shape}, {"source", t.source}});
  }
  return out;
}

json variant_json(const rt::EntryInfo& e, const rt::VariantInfo& v) {
  json updated = json::array();  // names of the inputs changed in place (format 1.4)
  for (int32_t i : v.updated_inputs)
    if (i >= 0 && static_cast<size_t>(i) < v.inputs.size()) updated.push_back(v.inputs[static_cast<size_t>(i)].name);
  json dims = json::array();  // the dynamic dims (format 1.5): range, and the input dim each is read from
  for (const rt::DynamicDimInfo& d : v.dynamic_dims)
    dims.push_back({{"name", d.name}, {"min", d.min}, {"max", d.max}, {"multiple_of", d.multiple_of},
                    {"input", d.input}, {"dim", d.dim}});
  return {{"name", v.name}, {"profiles", strings(v.profiles)}, {"inputs", tensors(v.inputs)},
          {"outputs", tensors(v.outputs)}, {"output_tree", e.output_tree},
          {"updated_inputs", updated},
          {"guards", texts(v.guards)}, {"assumptions", texts(v.assumptions)}, {"kernels", strings(v.kernels)},
          {"arena_bytes", v.arena_bytes}, {"arena_bytes_at_min", v.arena_bytes_at_min}, {"golden_pairs", v.golden_pairs},
          {"dynamic_dims", dims}, {"cuda_kernels", strings(v.cuda_kernels)}, {"cuda_arena_bytes", v.cuda_arena_bytes}};
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

// The kernel libraries (baseline first, then faster ones) and the one the runtime would load
// here (rt::choose_cpu_library; AOTRACE_DISABLE_CPU_FEATURES counts), null when none would.
json cpu_libraries_json(const rt::BundleInfo& b, json& load_here) {
  const std::vector<rt::CpuLibraryInfo>& libs = b.cpu_libraries;
  json out = json::array();
  if (libs.empty() || (libs.front().path.empty() && libs.size() == 1)) {
    load_here = nullptr;
    return out;
  }
  for (size_t i = 0; i < libs.size(); ++i)
    out.push_back({{"path", libs[i].path}, {"cpu", libs[i].cpu}, {"baseline", i == 0},
                   {"cpu_features", libs[i].features},
                   {"missing_on_this_machine", rt::missing_cpu_features(libs[i].features)}});
  int chosen = rt::triple_matches_host(b.triple) ? rt::choose_cpu_library(libs) : -1;
  load_here = chosen < 0 ? json(nullptr) : json(libs[static_cast<size_t>(chosen)].path);
  return out;
}

json bundle_json(const rt::BundleInfo& b) {
  json files = json::array(), weights = json::array(), entries = json::array();
  for (const rt::FileInfo& f : b.files) files.push_back({{"path", f.path}, {"size", f.size}, {"xxh3", hex64(f.xxh3)}});
  uint64_t weight_bytes = 0;
  for (const rt::WeightInfo& w : b.weights) {
    weights.push_back({{"name", w.name}, {"dtype", rt::dtype_name(w.dtype)}, {"shape", w.shape},
                       {"offset", w.offset}, {"size", w.size}});
    weight_bytes += w.size;
  }
  int64_t peak = 0;
  for (const rt::EntryInfo& e : b.entries) {
    json variants = json::array();
    for (const rt::VariantInfo& v : e.variants) {
      variants.push_back(variant_json(e, v));
      peak = std::max(peak, v.arena_bytes);
    }
    json buckets = json::array();  // format 1.7
    for (const rt::BucketInfo& d : e.buckets) {
      json padded = json::array(), cut = json::array();
      for (const auto& a : d.inputs) padded.push_back({{"input", a.index}, {"axis", a.axis}, {"pad", a.pad}});
      for (const auto& a : d.outputs) cut.push_back({{"output", a.index}, {"axis", a.axis}});
      buckets.push_back({{"dim", d.name}, {"sizes", d.sizes}, {"padded_inputs", padded}, {"cut_outputs", cut}});
    }
    entries.push_back({{"name", e.name}, {"variants", variants}, {"buckets", buckets}});
  }
  const std::vector<std::string> cpu_features =
      b.cpu_libraries.empty() ? std::vector<std::string>() : b.cpu_libraries.front().features;
  json load_here;
  json cpu_libraries = cpu_libraries_json(b, load_here);
  json cuda_images = json::array();  // format 1.8
  for (const rt::CudaImageInfo& image : b.cuda_images) {
    uint64_t bytes = 0;
    for (const rt::FileInfo& f : b.files)
      if (f.path == image.path) bytes = f.size;
    cuda_images.push_back({{"path", image.path}, {"arch", image.arch}, {"kind", image.ptx ? "ptx" : "cubin"}, {"size", bytes}});
  }
  return {{"bundle", b.dir},
          {"name", b.name},
          {"format_version", std::to_string(b.format_major) + "." + std::to_string(b.format_minor)},
          {"runtime_format_version", std::to_string(rt::kFormatMajor) + "." + std::to_string(rt::kFormatMinor)},
          {"required_features", strings(b.required_features)},
          {"kernel_abi_version", b.kernel_abi_version},
          {"tool_version", b.tool_version},
          {"toolchain", b.toolchain},
          {"hardware", {{"triple", b.triple}, {"cpu", b.cpu_libraries.empty() ? "" : b.cpu_libraries.front().cpu},
                        {"cpu_features", cpu_features},
                        {"missing_on_this_machine", rt::missing_cpu_features(cpu_features)},
                        {"cpu_libraries", cpu_libraries},
                        {"cpu_library_loaded_here", load_here},
                        {"cuda_images", cuda_images},
                        {"cuda_math", b.cuda_images.empty() ? "" : b.cuda_math.empty() ? "f32" : b.cuda_math}}},
          {"cpu_library", b.cpu_libraries.empty() ? "" : b.cpu_libraries.front().path},
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
  if (hw["cpu_libraries"].empty()) {  // targets: [cuda]
    line("  hardware: no CPU kernels (CUDA only; `targets: [cpu, cuda]` in the spec adds them)");
  } else {
    line("  hardware: " + hw["triple"].get<std::string>() + ", cpu " + hw["cpu"].get<std::string>() +
         ", cpu features: " + (hw["cpu_features"].empty() ? "none" : join(hw["cpu_features"])) +
         (hw["missing_on_this_machine"].empty() ? "" : " (missing here: " + join(hw["missing_on_this_machine"]) + ")"));
    line("  cpu libraries: " + std::to_string(hw["cpu_libraries"].size()) + "; this machine would load " +
         (hw["cpu_library_loaded_here"].is_null() ? std::string("none") : hw["cpu_library_loaded_here"].get<std::string>()));
  }
  const json& baseline_features = hw["cpu_features"];
  for (const auto& l : hw["cpu_libraries"]) {
    json extra = json::array();  // a faster library's features beyond the baseline's
    for (const auto& f : l["cpu_features"])
      if (std::find(baseline_features.begin(), baseline_features.end(), f) == baseline_features.end()) extra.push_back(f);
    line("    " + l["path"].get<std::string>() + ": cpu " + l["cpu"].get<std::string>() +
         (l["baseline"].get<bool>() ? " (baseline)" : ", needs also: " + (extra.empty() ? std::string("nothing") : join(extra))) +
         (l["missing_on_this_machine"].empty() ? "" : " (missing here: " + join(l["missing_on_this_machine"]) + ")"));
  }
  if (!hw["cuda_images"].empty()) {
    line("  cuda images: " + std::to_string(hw["cuda_images"].size()) + " (run them with --device cuda), matmul math " +
         hw["cuda_math"].get<std::string>() +
         (hw["cuda_math"] == "f32" ? "" : " (tensor cores, operands rounded to " + hw["cuda_math"].get<std::string>() + ")"));
    for (const auto& image : hw["cuda_images"])
      line("    " + image["path"].get<std::string>() + ": " + image["kind"].get<std::string>() + " for " +
           image["arch"].get<std::string>() + (image["kind"] == "ptx" ? " and newer GPUs" : "") + ", " + image["size"].dump() +
           " bytes");
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
      if (!v["kernels"].empty() || v["cuda_kernels"].empty())
        line("      " + std::to_string(v["kernels"].size()) + " kernel(s): " + join(v["kernels"]));
      if (!v["cuda_kernels"].empty())
        line("      " + std::to_string(v["cuda_kernels"].size()) + " CUDA kernel(s), device arena " +
             v["cuda_arena_bytes"].dump() + " bytes: " + join(v["cuda_kernels"]));
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
  rt::Result<rt::BundleInfo> info = rt::read_bundle_info(dir);
  if (!info.ok()) {
    if (info.status().code() == rt::StatusCode::not_found)
      user_error(info.status().message(), {}, "pass the NAME.aot directory written by `aotrace compile`");
    user_error(info.status().message(), {}, "run `aotrace verify " + dir + "` for details, or recompile the bundle");
  }
  json j = bundle_json(*info);
  if (as_json) std::cout << j.dump(2) << "\n";
  else std::cout << inspect_text(j);
  return 0;
}

}  // namespace aotrace::cli
