// `aotrace profiles record` and `aotrace profiles suggest` (issue 15): which sizes production
// traffic has, and how to compile for them.
//
//   record DRIVER.py --spec SPEC [--entry E] -o SIZES.json
//     runs the user's driver (a loop over real data that calls the model) with the entry hooked
//     (embed/record.cpp) and writes, per named dim of the spec, a histogram of the sizes the
//     calls had, per input its dtypes and per-dim histograms, and the joint shapes; calls whose
//     dtype or rank is not the spec's are reported (stderr, and "unexpected" in the JSON).
//   suggest SPEC --sizes SIZES.json [--max-variants K] [--write] [--no-measure]
//     for each dim that varies, the expected cost of three choices on the recorded histogram:
//     one dynamic range, K buckets that pad up (boundaries chosen by dynamic programming to
//     minimise the expected padded work, work taken as proportional to the size), and static
//     sizes; with the padding waste in %, the variant count and the compile time (measured by
//     compiling one variant, unless --no-measure). --write puts the chosen choice into the
//     spec's `dims:` and keeps every other line, comments included.
// Test: errors_tests Profiles.RecordAndSuggestOnASkewedEncoder.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "embed/embed.h"

namespace aotrace::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Histogram = std::map<int64_t, int64_t>;  // size → calls

const shape_profiles::EntrySpec& pick_entry(const shape_profiles::ProfileSet& spec, const std::string& name) {
  std::string names;
  for (const auto& e : spec.entries) {
    if (e.name == name || (name.empty() && spec.entries.size() == 1)) return e;
    names += (names.empty() ? "" : ", ") + e.name;
  }
  user_error(name.empty() ? "the spec has several entries: " + names : "the spec has no entry '" + name + "' (it has " + names + ")",
             {}, "pass --entry with one of: " + names);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) user_error("cannot read " + p.string(), {}, "check the path");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_text(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp);
    if (!(out << text)) user_error("cannot write " + p.string(), {}, "check the folder exists and is writable");
  }
  fs::rename(tmp, p);
}

// The spec's text with dim `dim`'s value under `dims:` replaced by `value` (flow YAML), every
// other line kept as it is; the dim is appended to `dims:` when it is not declared there.
std::string with_dim(const std::string& text, const std::string& dim, const std::string& value) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t dims = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (std::regex_match(lines[i], std::regex(R"(dims:\s*(#.*)?)"))) dims = i;
  if (dims == lines.size()) user_error("the spec has no `dims:` section", {}, "declare the dim under dims: first");
  size_t end = dims + 1;
  while (end < lines.size() && (lines[end].empty() || lines[end][0] == ' ' || lines[end][0] == '#')) ++end;
  const std::regex key("(\\s+)" + dim + ":(\\s*)(.*)");
  for (size_t i = dims + 1; i < end; ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, key)) continue;
    const std::string indent = m[1], rest = m[3];
    size_t last = i;  // a block value: the lines indented deeper
    if (rest.empty() || rest[0] == '#')
      while (last + 1 < end && (lines[last + 1].empty() || lines[last + 1].find_first_not_of(' ') > indent.size())) ++last;
    std::string comment;
    if (const size_t hash = rest.find(" #"); hash != std::string::npos)
      comment = rest.substr(rest.find_last_not_of(' ', hash) + 1);  // with the spaces before it
    lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i + 1), lines.begin() + static_cast<std::ptrdiff_t>(last + 1));
    lines[i] = indent + dim + ": " + value + comment;
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
  }
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(end), "  " + dim + ": " + value);
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

struct Buckets {
  std::vector<int64_t> bounds;  // ascending; the last is the largest size recorded
  double padded_work = 0;       // Σ calls · bucket(size)
};

// K buckets over the sorted histogram minimising Σ count · bucket(size), a bucket being the
// largest size it holds: dynamic programming over prefixes, O(K·n²).
Buckets best_buckets(const Histogram& h, int64_t k) {
  std::vector<int64_t> size, count;
  for (auto [s, c] : h) size.push_back(s), count.push_back(c);
  const size_t n = size.size();
  k = std::min<int64_t>(k, static_cast<int64_t>(n));
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + static_cast<double>(count[i]);
  const double inf = 1e300;
  // cost[b][j]: the first j sizes in b buckets, the last ending at size j-1.
  std::vector<std::vector<double>> cost(static_cast<size_t>(k) + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(cost.size(), std::vector<size_t>(n + 1, 0));
  cost[0][0] = 0;
  for (size_t b = 1; b <= static_cast<size_t>(k); ++b)
    for (size_t j = 1; j <= n; ++j)
      for (size_t i = b - 1; i < j; ++i) {
        if (cost[b - 1][i] >= inf) continue;
        double c = cost[b - 1][i] + static_cast<double>(size[j - 1]) * (prefix[j] - prefix[i]);
        if (c < cost[b][j]) cost[b][j] = c, from[b][j] = i;
      }
  size_t best_b = 1;
  for (size_t b = 1; b <= static_cast<size_t>(k); ++b)
    if (cost[b][n] < cost[best_b][n]) best_b = b;
  Buckets out;
  out.padded_work = cost[best_b][n];
  for (size_t b = best_b, j = n; b > 0; j = from[b][j], --b) out.bounds.insert(out.bounds.begin(), size[j - 1]);
  return out;
}

// Seconds per variant, measured: the spec compiled with every varying dim at its largest
// recorded size, by this same aotrace, without the cache. Negative when the compile failed.
double seconds_per_variant(const shape_profiles::ProfileSet& spec, const std::map<std::string, Histogram>& varying) {
  std::string text = read_text(spec.yaml_path);
  for (const auto& [dim, h] : varying) text = with_dim(text, dim, "[" + std::to_string(h.rbegin()->first) + "]");
  const fs::path dir = fs::temp_directory_path() / ("aotrace-suggest-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path yaml = spec.yaml_path.parent_path() / (".aotrace-suggest-" + std::to_string(::getpid()) + ".yaml");
  write_text(yaml, text);
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  const std::string command = "'" + exe + "' compile --no-cache --quiet '" + yaml.string() + "' -o '" +
                              (dir / "b.aot").string() + "' > '" + (dir / "log").string() + "' 2>&1";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string log = read_text(dir / "log");
  fs::remove(yaml);
  fs::remove_all(dir);
  if (status != 0) return -1;
  std::smatch m;
  int variants = 1;
  if (std::regex_search(log, m, std::regex(R"(into (\d+) variant)"))) variants = std::max(1, std::stoi(m[1]));
  return seconds / variants;
}

}  // namespace

int profiles_record_command(const fs::path& driver, const fs::path& spec_path, const std::string& entry_name,
                            const fs::path& output) {
  const auto spec = shape_profiles::parse_profile_file(spec_path);
  const shape_profiles::EntrySpec& entry = pick_entry(spec, entry_name);
  if (!fs::exists(driver)) user_error("cannot read the driver " + driver.string(), {}, "pass the script that calls the model");
  embed::Interpreter& py = embed::Interpreter::instance();
  py.send_prints_to_stderr();  // stdout is record's report
  py.run_script(spec.script);
  std::vector<std::string> parameters;
  for (const auto& a : entry.args) parameters.push_back(a.key);
  const json calls = json::parse(py.record_calls(entry.call, parameters, driver));
  if (calls.empty())
    user_error("the driver " + driver.string() + " never called entry '" + entry.name + "' (`" + entry.call + "`)", {},
               "the driver must call the model the spec's entry names, e.g. by importing its script");
  std::map<std::string, Histogram> dims;
  json inputs = json::object(), unexpected = json::array();
  std::map<std::string, int64_t> signatures;
  std::map<std::string, int64_t> unexpected_count;
  for (const json& call : calls) {
    json sig = json::object();
    for (const auto& in : entry.inputs) {
      if (in.is_scalar()) continue;
      if (!call.contains(in.name)) {
        ++unexpected_count[in.name + ": not passed"];
        continue;
      }
      const json& got = call[in.name];
      const std::string dtype = got["dtype"];
      json& rec = inputs[in.name];
      // A histogram's count of `key`, created at 0.
      auto bump = [](json& histogram, const std::string& key) {
        if (!histogram.is_object()) histogram = json::object();
        histogram[key] = histogram.value(key, 0) + 1;
      };
      bump(rec["dtypes"], dtype);
      if (dtype != std::string(ir::dtype_torch_name(in.dtype)))
        ++unexpected_count[in.name + ": dtype " + dtype + ", the spec declares " + std::string(ir::dtype_torch_name(in.dtype))];
      const auto& shape = got["shape"];
      sig[in.name] = shape;
      if (shape.size() != in.shape.size()) {
        ++unexpected_count[in.name + ": rank " + std::to_string(shape.size()) + ", the spec declares " + std::to_string(in.shape.size())];
        continue;
      }
      for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t size = shape[d];
        std::string key = std::to_string(size);
        bump(rec["dims"][d], key);
        if (in.shape[d].is_named) ++dims[in.shape[d].name][size];
        else if (in.shape[d].value != size)
          ++unexpected_count[in.name + ": dim " + std::to_string(d) + " is " + std::to_string(size) +
                             ", the spec fixes it to " + std::to_string(in.shape[d].value)];
      }
    }
    ++signatures[sig.dump()];
  }
  json dims_json = json::object();
  for (const auto& [name, h] : dims)
    for (auto [size, count] : h) dims_json[name][std::to_string(size)] = count;
  json sigs = json::array();
  for (const auto& [s, count] : signatures) sigs.push_back({{"shapes", json::parse(s)}, {"calls", count}});
  for (const auto& [what, count] : unexpected_count) unexpected.push_back({{"what", what}, {"calls", count}});
  const json out = {{"spec", fs::absolute(spec_path).string()}, {"entry", entry.name}, {"driver", fs::absolute(driver).string()},
                    {"calls", calls.size()}, {"dims", dims_json}, {"inputs", inputs}, {"signatures", sigs},
                    {"unexpected", unexpected}};
  write_text(output, out.dump(2) + "\n");
  std::cout << "recorded " << calls.size() << " call(s) of entry '" << entry.name << "' -> " << output.string() << "\n";
  for (const auto& [name, h] : dims) {
    int64_t total = 0, top = h.begin()->first, top_count = 0;
    for (auto [s, c] : h) {
      total += c;
      if (c > top_count) top = s, top_count = c;
    }
    std::cout << "  " << name << ": " << h.size() << " size(s) in [" << h.begin()->first << ", " << h.rbegin()->first
              << "], most often " << top << " (" << (100 * top_count / total) << "% of calls)\n";
  }
  for (const auto& [what, count] : unexpected_count)
    std::cerr << "aotrace: warning: " << count << " call(s) beyond the spec: " << what << "\n";
  std::cout << "next: aotrace profiles suggest " << spec_path.string() << " --sizes " << output.string() << "\n";
  return 0;
}

int profiles_suggest_command(const fs::path& spec_path, const fs::path& sizes_path, int max_variants, bool write,
                             bool measure) {
  const auto spec = shape_profiles::parse_profile_file(spec_path);
  const json sizes = json::parse(read_text(sizes_path), nullptr, false);
  if (sizes.is_discarded() || !sizes.contains("dims"))
    user_error(sizes_path.string() + " is not a sizes file of `aotrace profiles record`", {}, "record one with profiles record");
  const int64_t k = max_variants > 0 ? max_variants : spec.max_variants;
  std::map<std::string, Histogram> varying;
  for (const auto& [name, h] : sizes["dims"].items()) {
    Histogram hist;
    for (const auto& [s, c] : h.items()) hist[std::stoll(s)] = c.get<int64_t>();
    if (hist.size() > 1) varying[name] = hist;
    else std::cout << name << ": always " << hist.begin()->first << " in the recording: `" << name << ": ["
                   << hist.begin()->first << "]`\n";
  }
  if (varying.empty()) {
    std::cout << "no dim varies in the recording: static sizes are exact\n";
    return 0;
  }
  const double per_variant = measure ? seconds_per_variant(spec, varying) : -1;
  auto compile_time = [&](int64_t variants) {
    if (per_variant < 0) return std::string("?");
    std::ostringstream s;
    s.precision(per_variant * variants < 10 ? 2 : 3);
    s << per_variant * static_cast<double>(variants) << " s";
    return s.str();
  };
  std::string text = read_text(spec_path);
  for (const auto& [name, h] : varying) {
    double work = 0;
    int64_t calls = 0;
    std::vector<int64_t> all;
    for (auto [s, c] : h) work += static_cast<double>(s * c), calls += c, all.push_back(s);
    const Buckets b = best_buckets(h, k);
    const double waste = 100.0 * (b.padded_work - work) / b.padded_work;
    const int64_t lo = h.begin()->first, hi = h.rbegin()->first;
    std::cout << name << ": " << calls << " calls, " << h.size() << " sizes in [" << lo << ", " << hi << "]"
              << (per_variant < 0 ? "" : " (compile: about " + compile_time(1) + " per variant, measured)") << "\n";
    std::printf("  %-38s %8s %9s %12s\n", "choice", "waste", "variants", "compile");
    // A range that holds 1 plans size 1 as a static variant of its own (shape_profiles).
    const int64_t range_variants = lo <= 1 ? 2 : 1;
    std::printf("  %-38s %7.1f%% %9d %12s\n", ("dynamic range {min: " + std::to_string(lo) + ", max: " + std::to_string(hi) + "}").c_str(),
                0.0, static_cast<int>(range_variants), compile_time(range_variants).c_str());
    std::printf("  %-38s %7.1f%% %9zu %12s\n", ("buckets " + list_text(b.bounds)).c_str(), waste, b.bounds.size(),
                compile_time(static_cast<int64_t>(b.bounds.size())).c_str());
    std::printf("  %-38s %7.1f%% %9zu %12s%s\n", ("static " + (all.size() <= 6 ? list_text(all) : std::to_string(all.size()) + " sizes")).c_str(),
                0.0, all.size(), compile_time(static_cast<int64_t>(all.size())).c_str(),
                static_cast<int64_t>(all.size()) > k ? "  (over max_variants)" : "");
    std::cout << "  (waste: the share of the padded work spent on padding, work proportional to " << name << ")\n";
    // The choice written: static sizes when they fit max_variants, else the range. Buckets pad
    // at run time, which the runtime does not do yet: they are reported, not written.
    const std::string value = static_cast<int64_t>(all.size()) <= k
                                  ? list_text(all)
                                  : "{min: " + std::to_string(lo) + ", max: " + std::to_string(hi) + "}";
    std::cout << "  suggested: " << name << ": " << value
              << (static_cast<int64_t>(all.size()) <= k ? "  (every recorded size, exact)" : "  (one variant for every size)")
              << "; buckets need padding at run time, which this runtime does not do yet\n";
    text = with_dim(text, name, value);
  }
  if (write) {
    write_text(spec_path, text);
    shape_profiles::parse_profile_file(spec_path);
    std::cout << "updated " << spec_path.string() << " (every other line and comment kept)\n";
  }
  return 0;
}

}  // namespace aotrace::cli
