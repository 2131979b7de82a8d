// The `run` command shared by `aotrace run` and `aotrace_run` (run_tool.h).
#include "run_tool.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <set>

#include "aotrace_runtime.h"
#include "npy.h"

namespace aotrace::rt {
namespace {

ToolStatus user_failure(std::string what, std::string hint = {}) { return {1, std::move(what), std::move(hint)}; }
ToolStatus usage_failure(std::string what, std::string hint = {}) { return {2, std::move(what), std::move(hint)}; }
std::string program_of(const std::string& command) { return command.substr(0, command.find(' ')); }

// ---------------------------------------------------------------------------------------------
// The options: one table gives the spelling, the value, the help text and how it is stored.
struct OptionSpec {
  const char* name;
  const char* value;  // the value's name in the help; nullptr for a flag
  const char* help;
  ToolStatus (*set)(RunToolOptions&, const std::string& value);
};

ToolStatus set_threads(RunToolOptions& o, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > 1024)
    return usage_failure("--threads takes a number from 0 to 1024, got '" + v + "'",
                         "0 (the default) uses AOTRACE_NUM_THREADS, else every CPU");
  o.threads = static_cast<int>(n);
  return {};
}

ToolStatus set_seed(RunToolOptions& o, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno == ERANGE)
    return usage_failure("--seed takes a number from 0 to 2^64-1, got '" + v + "'");
  o.seed = n;
  return {};
}

ToolStatus set_device(RunToolOptions& o, const std::string& v) {
  if (v != "cpu" && v != "cuda")
    return usage_failure("--device takes cpu or cuda, got '" + v + "'",
                         "cuda runs the bundle's CUDA kernels (compiled with `targets: [cpu, cuda]`)");
  o.cuda = v == "cuda";
  return {};
}

ToolStatus set_repeat(RunToolOptions& o, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 1 || n > 1000000)
    return usage_failure("--repeat takes a number from 1 to 1000000, got '" + v + "'");
  o.repeat = static_cast<int>(n);
  return {};
}

ToolStatus set_profile(RunToolOptions& o, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 1 || n > 100000)
    return usage_failure("--profile takes a number of kernels from 1 to 100000, got '" + v + "'");
  o.profile = static_cast<int>(n);
  return {};
}

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> specs = {
      {"--entry", "NAME", "entry name (default: the only entry, or 'forward')",
       [](RunToolOptions& o, const std::string& v) { o.entry = v; return ToolStatus{}; }},
      {"--input", "NAME=FILE.npy",
       "an input, once per input; a Python scalar input also as NAME=VALUE (3, 0.5, true), and "
       "defaults to the value the bundle was compiled for; a float32 file for a bfloat16 input is "
       "rounded to bfloat16 (bfloat16 outputs are written as float32)",
       [](RunToolOptions& o, const std::string& v) { o.inputs.push_back(v); return ToolStatus{}; }},
      {"--output-dir", "DIR", "where the outputs are written (default: .; created when missing)",
       [](RunToolOptions& o, const std::string& v) { o.output_dir = v; return ToolStatus{}; }},
      {"--json", nullptr, "print one JSON object (entry, variant, each output's files, dtype and shape) "
                          "instead of the file list",
       [](RunToolOptions& o, const std::string&) { o.json = true; return ToolStatus{}; }},
      {"--selftest", nullptr, "run the bundle's golden vectors instead of inputs",
       [](RunToolOptions& o, const std::string&) { o.selftest = true; return ToolStatus{}; }},
      {"--threads", "N", "kernel threads, 0 = AOTRACE_NUM_THREADS or all CPUs", set_threads},
      {"--seed", "N", "seed of the bundle's random numbers (torch.randn, dropout in training mode)", set_seed},
      {"--device", "cpu|cuda", "where the kernels run: cpu (default), or cuda, the bundle's CUDA kernels on GPU 0 "
                               "(inputs copied in, outputs out)", set_device},
      {"--repeat", "N", "after the run, time N more calls into the same outputs (on cuda with the tensors in GPU "
                        "memory) and print the median, p10 and p90 latency", set_repeat},
      {"--profile", "N", "with --repeat: then time each kernel call (on cuda one launch at a time) and list the "
                         "N slowest kernels", set_profile},
      {"--help", nullptr, "print this help",
       [](RunToolOptions& o, const std::string&) { o.help = true; return ToolStatus{}; }},
  };
  return specs;
}

const OptionSpec* find_option(const std::string& name) {
  for (const OptionSpec& s : option_specs())
    if (name == s.name || (name == "-h" && std::strcmp(s.name, "--help") == 0)) return &s;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Inputs

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// A Python scalar input given on the command line: an integer, a number, true or false.
ToolStatus scalar_literal(const std::string& name, const std::string& text, double* value) {
  if (text == "true" || text == "True" || text == "false" || text == "False") {
    *value = text[0] == 't' || text[0] == 'T';
    return {};
  }
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    return user_failure("--input " + name + "=" + text + " is neither a file nor a number",
                        "input '" + name + "' is a Python scalar: pass its value (--input " + name +
                            "=3, =0.5 or =true) or a .npy file of a 0-d tensor");
  return {};
}

// NAME=VALUE of each --input, by name.
ToolStatus input_files(const std::vector<std::string>& inputs, std::map<std::string, std::string>& files) {
  for (const std::string& spec : inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return user_failure("--input '" + spec + "' is not NAME=FILE.npy", "e.g. --input x=x.npy");
    if (!files.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second)
      return user_failure("--input " + spec.substr(0, eq) + " is given twice", "give each input once");
  }
  return {};
}

// bfloat16, which NumPy lacks, crosses `run`'s files as float32: a float32 file for a bfloat16
// input is rounded to it (to nearest even, as torch's .to(torch.bfloat16)), and a bfloat16
// output is written widened to float32, exactly. (A file of bfloat16 bits, .npy descr '<V2' as
// NumPy saves an ml_dtypes.bfloat16 array, is read as it is.)
Tensor bfloat16_from_float32(const Tensor& t) {
  Tensor out(DType::bf16, t.shape());
  const float* x = t.data_as<float>();
  auto* y = out.data_as<uint16_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
      y[i] = static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN stays NaN (quiet)
    else
      y[i] = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
  return out;
}

Tensor float32_from_bfloat16(const TensorRef& t) {
  Tensor out(DType::f32, t.shape);
  const auto* x = static_cast<const uint16_t*>(t.data);
  float* y = out.data_as<float>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(&y[i], &bits, 4);
  }
  return out;
}

// For a call the guards refused: how to save the first tensor input whose file holds another
// dtype than the entry's (the same in every variant), or "".
std::string dtype_hint(const Entry& entry, const std::vector<TensorRef>& inputs) {
  for (size_t i = 0; i < inputs.size() && i < entry.inputs(0).size(); ++i) {
    const TensorInfo& info = entry.inputs(0)[i];
    double value = 0;
    if (entry.scalar_input(0, i, &value) || inputs[i].dtype == info.dtype) continue;
    const bool bf16 = info.dtype == DType::bf16;  // NumPy has none: a float32 file, rounded here
    return "save input " + info.name + " as " + (bf16 ? "float32 (rounded to bfloat16 here)" : dtype_name(info.dtype)) +
           ": numpy.save(FILE, array.astype(numpy." + (bf16 ? "float32" : dtype_name(info.dtype)) + "))";
  }
  return "";
}

// The entry's inputs from the files (and Python scalars from their values or the bundle).
ToolStatus read_inputs(const Entry& entry, std::map<std::string, std::string> files, std::vector<Tensor>& tensors) {
  std::string expected;
  for (const TensorInfo& info : entry.inputs(0)) expected += (expected.empty() ? "" : ", ") + info.name;
  for (size_t i = 0; i < entry.num_inputs(); ++i) {
    const TensorInfo& info = entry.inputs(0)[i];
    auto it = files.find(info.name);
    double value = 0;
    const bool scalar = entry.scalar_input(0, i, &value);
    if (it == files.end() && !scalar)
      return user_failure("entry '" + entry.name() + "' needs input '" + info.name + "'",
                          "pass --input " + info.name + "=FILE.npy (inputs: " + expected + ")");
    if (it != files.end() && (!scalar || is_file(it->second))) {
      Result<Tensor> t = npy_read(it->second);
      if (!t.ok())
        return user_failure("input " + info.name + ": " + t.status().message(),
                            "pass --input " + info.name + "=FILE.npy with a file written by numpy.save");
      if (info.dtype == DType::bf16 && t->dtype() == DType::f32)
        tensors.push_back(bfloat16_from_float32(*t));
      else
        tensors.push_back(std::move(t).value());
      files.erase(it);
      continue;
    }
    if (it != files.end()) {  // --input n=3, --input causal=true
      if (ToolStatus s = scalar_literal(info.name, it->second, &value); !s.ok()) return s;
      files.erase(it);
    }
    Result<Tensor> t = scalar_tensor(info.dtype, value);
    if (!t.ok()) return user_failure("input " + info.name + ": " + t.status().message());
    tensors.push_back(std::move(t).value());
  }
  if (!files.empty())
    return user_failure("entry '" + entry.name() + "' has no input '" + files.begin()->first + "'",
                        "its inputs are: " + expected);
  return {};
}

// ---------------------------------------------------------------------------------------------
// Outputs: where each sits in the result, and the files it is written to.

// One output leaf: its place as Python indexes it from the result ("", "[0]", "['logits']",
// "[1]['mask']") and, inside a dict, the name of its keyed file ("logits", "pair.1").
struct LeafPlace {
  std::string place, key_name;
};

// A dict key as (part of) a file name: characters other than letters, digits, '_', '-' and '.'
// become '_', and a leading '.' or '-' gets a '_' before it.
std::string file_name_part(const std::string& key) {
  std::string s;
  for (char c : key) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || c == '.';
    s += safe ? c : '_';
  }
  if (s.empty() || s[0] == '.' || s[0] == '-') s = "_" + s;
  return s;
}

std::map<int, LeafPlace> leaf_places(const std::vector<OutputNode>& nodes) {
  std::map<int, LeafPlace> places;
  if (nodes.empty()) return places;
  struct Item {
    int node;
    LeafPlace at;
    bool in_dict;
  };
  std::vector<Item> stack{{0, {}, false}};
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    const OutputNode& node = nodes[static_cast<size_t>(item.node)];
    if (node.kind == OutputNode::Kind::Leaf) {
      if (!item.in_dict) item.at.key_name.clear();
      places[node.leaf] = item.at;
    }
    const bool dict = node.kind == OutputNode::Kind::Dict;
    for (size_t c = 0; c < node.children.size(); ++c) {
      const std::string key = dict && c < node.keys.size() ? node.keys[c] : std::to_string(c);
      LeafPlace at{item.at.place + (dict ? "['" + key + "']" : "[" + key + "]"),
                   item.at.key_name + (item.at.key_name.empty() ? "" : ".") + file_name_part(key)};
      stack.push_back({node.children[c], at, item.in_dict || dict});
    }
  }
  return places;
}

// A tensor the run writes: an output or an input's new value, with its files.
struct WrittenTensor {
  TensorRef tensor;
  int position = -1;     // in the flattened outputs; -1 for an updated input
  std::string name;      // the dict keys' name ("logits"), the updated input's name, or ""
  std::string place;     // "result['logits']", "input x as the call left it"
  std::vector<std::string> files;
};

// Each output's files: outN.npy, then its keyed name (NAME.npy) unless another tensor's file
// already has it (a warning on `err` says so); updated_NAME.npy for each input's new value.
std::vector<WrittenTensor> plan_files(const Entry& entry, size_t variant, const std::vector<Tensor>& outputs,
                                      const std::vector<TensorRef>& inputs, const std::string& program,
                                      std::ostream& err) {
  const std::map<int, LeafPlace> places = leaf_places(entry.output_nodes());
  std::vector<WrittenTensor> written;
  std::set<std::string> taken;
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto p = places.find(static_cast<int>(i));
    WrittenTensor w{outputs[i].ref(), static_cast<int>(i), p != places.end() ? p->second.key_name : "",
                    "result" + (p != places.end() ? p->second.place : ""), {"out" + std::to_string(i) + ".npy"}};
    taken.insert(w.files[0]);
    written.push_back(w);
  }
  for (int32_t i : entry.updated_inputs(variant)) {
    const std::string& name = entry.inputs(variant)[static_cast<size_t>(i)].name;
    written.push_back({inputs[static_cast<size_t>(i)], -1, name, "input " + name + " as the call left it",
                       {"updated_" + name + ".npy"}});
    taken.insert(written.back().files[0]);
  }
  for (WrittenTensor& w : written) {
    if (w.position < 0 || w.name.empty()) continue;
    const std::string file = w.name + ".npy";
    if (taken.insert(file).second) {
      w.files.push_back(file);
      continue;
    }
    err << program << ": warning: " << w.place << " is written as " << w.files[0] << " only: another output's file is "
        << file << "\n";
  }
  return written;
}

// mkdir -p: `dir` and its missing parents.
ToolStatus make_folder(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return {};
    return user_failure("--output-dir '" + dir + "' exists and is not a folder", "choose another --output-dir");
  }
  const size_t slash = dir.find_last_of('/', dir.size() > 1 ? dir.size() - 2 : 0);
  if (slash != std::string::npos && slash > 0)
    if (ToolStatus s = make_folder(dir.substr(0, slash)); !s.ok()) return s;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return user_failure("cannot create the output folder '" + dir + "': " + std::strerror(errno),
                        "choose another --output-dir");
  return {};
}

std::string join_path(const std::string& dir, const std::string& file) {
  return dir.empty() || dir.back() == '/' ? dir + file : dir + "/" + file;
}

// ---------------------------------------------------------------------------------------------
// The report

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + json_string(items[i]);
  return out + "]";
}

std::string json_shape(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string json_report(const Entry& entry, size_t variant, const std::string& output_dir,
                        const std::vector<WrittenTensor>& written) {
  std::string outputs, updated;
  for (const WrittenTensor& w : written) {
    std::string o = "{";
    if (w.position >= 0) o += "\"position\":" + std::to_string(w.position) + ",";
    o += "\"name\":" + (w.name.empty() ? std::string("null") : json_string(w.name)) + ",\"place\":" +
         json_string(w.place) + ",\"dtype\":" + json_string(dtype_name(w.tensor.dtype)) +
         (w.tensor.dtype == DType::bf16 ? ",\"file_dtype\":\"float32\"" : "") +
         ",\"shape\":" + json_shape(w.tensor.shape) + ",\"files\":" + json_strings(w.files) + "}";
    std::string& list = w.position >= 0 ? outputs : updated;
    list += (list.empty() ? "" : ",") + o;
  }
  return "{\"entry\":" + json_string(entry.name()) + ",\"variant\":" + json_string(entry.variant_name(variant)) +
         ",\"profiles\":" + json_strings(entry.variant_profiles(variant)) + ",\"output_dir\":" +
         json_string(output_dir) + ",\"output_tree\":" + json_string(entry.output_tree()) + ",\"outputs\":[" +
         outputs + "],\"updated_inputs\":[" + updated + "]}";
}

// "entry 'forward', variant v1 (profile online)".
std::string variant_line(const Entry& entry, size_t variant) {
  std::string line = "entry '" + entry.name() + "', variant " + entry.variant_name(variant);
  const std::vector<std::string>& profiles = entry.variant_profiles(variant);
  for (size_t p = 0; p < profiles.size(); ++p)
    line += (p ? ", " : profiles.size() == 1 ? " (profile " : " (profiles ") + profiles[p];
  return line + (profiles.empty() ? "" : ")");
}

ToolStatus write_file(const std::string& path, const TensorRef& t) {
  Status s = t.dtype == DType::bf16 ? npy_write(path, float32_from_bfloat16(t).ref()) : npy_write(path, t);
  if (!s.ok()) return user_failure("writing " + path + ": " + s.message(), "choose another --output-dir");
  return {};
}

// The kernels that ran: "cpu/x86_64-unknown-linux-gnu.x86-64-v3.so", "cuda/sm_90.cubin on sm_90".
std::string kernels_text(const Bundle& bundle) {
  if (bundle.device() == DeviceKind::cuda) return bundle.cuda_image() + " on a " + bundle.cuda_arch() + " GPU";
  return bundle.cpu_library();
}

// --repeat: `n` calls into `outputs` timed, each a full run_into (guards, dispatch, kernels; on
// cuda with inputs and outputs in GPU memory, so that no copy is timed).
ToolStatus time_calls(const Bundle& bundle, const Entry& entry, const std::vector<TensorRef>& inputs,
                      const std::vector<Tensor>& outputs, int n, int profile, const std::string& program,
                      std::ostream& err) {
  std::vector<DeviceTensor> device;  // keeps the GPU copies alive
  std::vector<TensorRef> in, out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorRef& t = inputs[i];
    if (bundle.device() != DeviceKind::cuda || (t.shape.empty() && entry.stays_on_host(i))) {
      in.push_back(t);
      continue;
    }
    Result<DeviceTensor> d = bundle.to_device(t);
    if (!d.ok()) return user_failure(d.status().message());
    device.push_back(*d);
    in.push_back(d->ref());
  }
  for (const Tensor& t : outputs) {
    if (bundle.device() != DeviceKind::cuda) {
      out.push_back(t.ref());
      continue;
    }
    Result<DeviceTensor> d = bundle.allocate(t.dtype(), t.shape());
    if (!d.ok()) return user_failure(d.status().message());
    device.push_back(*d);
    out.push_back(d->ref());
  }
  std::vector<double> ms;
  for (int i = -1; i < n; ++i) {  // one untimed warm-up call (the graph's capture on cuda)
    const auto start = std::chrono::steady_clock::now();
    if (Status s = entry.run_into(in, out); !s.ok()) return user_failure("--repeat: " + s.message());
    if (i >= 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double p) { return ms[static_cast<size_t>(p * static_cast<double>(ms.size() - 1) + 0.5)]; };
  char line[256];
  std::snprintf(line, sizeof line, "%s: %d timed calls on %s: median %.4g ms, p10 %.4g ms, p90 %.4g ms, min %.4g ms\n",
                program.c_str(), n, kernels_text(bundle).c_str(), at(0.5), at(0.1), at(0.9), ms.front());
  err << line;
  if (profile == 0) return {};
  Result<std::vector<Entry::KernelTime>> kernels = entry.profile(in, n);
  if (!kernels.ok()) return user_failure("--profile: " + kernels.status().message());
  double total = 0;
  for (const Entry::KernelTime& k : *kernels) total += k.mean_ms;
  std::stable_sort(kernels->begin(), kernels->end(), [](const auto& a, const auto& b) { return a.mean_ms > b.mean_ms; });
  std::snprintf(line, sizeof line, "%s: profile: %zu kernel calls, %.4g ms per call in kernels; the slowest:\n",
                program.c_str(), kernels->size(), total);
  err << line;
  for (size_t k = 0; k < kernels->size() && k < static_cast<size_t>(profile); ++k) {
    const Entry::KernelTime& t = (*kernels)[k];
    std::snprintf(line, sizeof line, "  %5.1f%%  %.4g ms  ", total > 0 ? 100 * t.mean_ms / total : 0.0, t.mean_ms);
    err << line << t.symbol << "  " << t.what << "\n";
  }
  return {};
}

ToolStatus run_selftest(const Bundle& bundle, const RunToolOptions& options, const std::string& command,
                        std::ostream& out) {
  size_t checked = 0;
  if (Status s = bundle.selftest(&checked); !s.ok())
    return user_failure("--selftest failed: " + s.message(),
                        "the bundle does not run correctly here: `aotrace verify` checks its integrity");
  if (checked == 0)
    return user_failure("bundle " + options.bundle + " has no golden vectors",
                        "recompile it with this aotrace, which writes golden/");
  if (options.json)
    out << "{\"golden_pairs\":" << checked << ",\"cpu_library\":" << json_string(bundle.cpu_library())
        << ",\"device\":" << json_string(bundle.device() == DeviceKind::cuda ? "cuda" : "cpu")
        << ",\"cuda_image\":" << json_string(bundle.cuda_image()) << "}\n";
  else
    out << command << " --selftest: " << checked << " golden pair(s) match (kernels " << kernels_text(bundle) << ")\n";
  return {};
}

}  // namespace

ToolStatus parse_run_tool_args(const std::vector<std::string>& args, RunToolOptions& options) {
  const std::string more = "--help lists the options";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {  // a negative number is only ever an option's value
      if (!options.bundle.empty())
        return usage_failure("unexpected argument '" + arg + "' (the bundle is " + options.bundle + ")",
                             "give one bundle; each input as --input NAME=FILE.npy");
      options.bundle = arg;
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const OptionSpec* spec = find_option(name);
    if (!spec) return usage_failure("unknown option '" + name + "'", more);
    std::string value;
    if (spec->value && eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (spec->value) {
      if (i + 1 == args.size() || args[i + 1].rfind("--", 0) == 0)
        return usage_failure(name + " needs a value: " + name + " " + spec->value, more);
      value = args[++i];
    } else if (eq != std::string::npos) {
      return usage_failure(name + " takes no value", more);
    }
    if (ToolStatus s = spec->set(options, value); !s.ok()) return s;
  }
  if (options.help) return {};
  if (options.bundle.empty()) return usage_failure("no bundle given", "name the bundle folder first: BUNDLE.aot");
  if (options.selftest && !options.inputs.empty())
    return usage_failure("--selftest runs the bundle's golden vectors, not --input", "drop --input or --selftest");
  if (options.selftest && options.repeat > 0)
    return usage_failure("--repeat times calls on --input, not --selftest", "drop --repeat or --selftest");
  if (options.profile > 0 && options.repeat == 0)
    return usage_failure("--profile needs --repeat N (the calls it times)", "add --repeat 20");
  return {};
}

std::string run_tool_help(const std::string& command) {
  std::string text = "usage: " + command + " BUNDLE [--entry NAME] --input NAME=FILE.npy ... [--output-dir DIR]\n" +
                     std::string(8 + command.size(), ' ') + "[--json] [--threads N] [--seed N]\n       " + command +
                     " BUNDLE --selftest [--threads N] [--device cpu|cuda]\n\n"
                     "Runs one entry of a bundle on .npy inputs (guards checked) and writes out0.npy, out1.npy, ...\n"
                     "in the flattened output order, an output inside a dict also under its keys (logits.npy), and\n"
                     "updated_NAME.npy for each input the entry changes in place. stderr names the variant that\n"
                     "ran; stdout lists the files with their place in the result (or, with --json, describes them).\n"
                     "\noptions:\n";
  // Two columns, the help wrapped at 100 characters.
  const size_t column = 26, width = 100;
  for (const OptionSpec& s : option_specs()) {
    std::string line = std::string("  ") + s.name + (s.value ? std::string(" ") + s.value : "");
    line += std::string(line.size() < column ? column - line.size() : 1, ' ');
    const std::string help = s.help;
    for (size_t start = 0; start < help.size();) {
      size_t end = help.find(' ', start);
      if (end == std::string::npos) end = help.size();
      if (line.size() + (end - start) > width && line.size() > column) {
        text += line.substr(0, line.size() - 1) + "\n";
        line = std::string(column, ' ');
      }
      line += help.substr(start, end - start) + " ";
      start = end + 1;
    }
    text += line.substr(0, line.size() - 1) + "\n";
  }
  return text;
}

ToolStatus run_tool(const RunToolOptions& options, const std::string& command, std::ostream& out, std::ostream& err) {
  if (options.help) {
    out << run_tool_help(command);
    return {};
  }
  const std::string program = program_of(command);
  std::map<std::string, std::string> files;
  if (ToolStatus s = input_files(options.inputs, files); !s.ok()) return s;
  OpenOptions open_options;
  open_options.num_threads = options.threads;
  open_options.device = options.cuda ? DeviceKind::cuda : DeviceKind::cpu;
  Result<Bundle> bundle = Bundle::open(options.bundle, open_options);
  if (!bundle.ok())
    return user_failure(bundle.status().message(), open_failure_hint(bundle.status()));
  if (options.selftest) return run_selftest(*bundle, options, command, out);

  std::string entry_name = options.entry;
  const std::vector<std::string> names = bundle->entry_names();
  if (entry_name.empty()) entry_name = names.size() == 1 ? names.front() : "forward";
  Result<Entry> entry = bundle->entry(entry_name);
  if (!entry.ok()) return user_failure(entry.status().message(), "use --entry with one of the bundle's entries");

  std::vector<Tensor> inputs;
  if (ToolStatus s = read_inputs(*entry, std::move(files), inputs); !s.ok()) return s;
  std::vector<TensorRef> refs;
  for (const Tensor& t : inputs) refs.push_back(t.ref());
  entry->manual_seed(options.seed);
  // On a GPU, inputs declared `device: cuda` go in as GPU memory (their device guards ask for it).
  std::vector<DeviceTensor> on_gpu;
  std::vector<TensorRef> call_refs = refs;
  if (bundle->device() == DeviceKind::cuda)
    for (size_t i = 0; i < call_refs.size(); ++i) {
      bool declared = false;
      for (size_t v = 0; v < entry->num_variants(); ++v) declared |= entry->input_device(v, i) == DeviceKind::cuda;
      if (!declared) continue;
      Result<DeviceTensor> d = bundle->to_device(call_refs[i]);
      if (!d.ok()) return user_failure(d.status().message());
      on_gpu.push_back(*d);
      call_refs[i] = d->ref();
    }
  size_t variant = 0;
  Result<std::vector<Tensor>> outputs = entry->run(call_refs, &variant);
  for (size_t i = 0; outputs.ok() && i < call_refs.size(); ++i)  // inputs changed in place come back
    if (call_refs[i].device == DeviceKind::cuda)
      if (Status s = bundle->copy(refs[i], call_refs[i]); !s.ok()) return user_failure(s.message());
  if (!outputs.ok()) return user_failure(outputs.status().message(), dtype_hint(*entry, refs));
  err << program << ": " << variant_line(*entry, variant) << "\n";
  if (options.repeat > 0)
    if (ToolStatus s = time_calls(*bundle, *entry, refs, *outputs, options.repeat, options.profile, program, err); !s.ok()) return s;

  if (ToolStatus s = make_folder(options.output_dir); !s.ok()) return s;
  const std::vector<WrittenTensor> written = plan_files(*entry, variant, *outputs, refs, program, err);
  for (const WrittenTensor& w : written)
    for (const std::string& file : w.files)
      if (ToolStatus s = write_file(join_path(options.output_dir, file), w.tensor); !s.ok()) return s;
  const std::string report = json_report(*entry, variant, options.output_dir, written);
  const std::string manifest = join_path(options.output_dir, "outputs.json");
  if (FILE* f = std::fopen(manifest.c_str(), "wb")) {
    const bool ok = std::fputs((report + "\n").c_str(), f) >= 0;
    if (std::fclose(f) != 0 || !ok) return user_failure("writing " + manifest + " failed", "choose another --output-dir");
  } else {
    return user_failure("cannot write " + manifest + ": " + std::strerror(errno), "choose another --output-dir");
  }
  if (options.json) {
    out << report << "\n";
    return {};
  }
  for (const WrittenTensor& w : written)
    for (const std::string& file : w.files)
      out << "  " << join_path(options.output_dir, file) << "  " << w.place << "  " << dtype_name(w.tensor.dtype) << " "
          << shape_str(w.tensor.shape) << (w.tensor.dtype == DType::bf16 ? " (as float32)" : "") << "\n";
  return {};
}

std::string open_failure_hint(const Status& status) {
  switch (status.code()) {
    case StatusCode::data_loss:
      return "rebuild the bundle with `aotrace compile`; `aotrace verify BUNDLE` names what is damaged";
    case StatusCode::unsupported:
      return "`aotrace verify BUNDLE` lists what the bundle needs and what this machine has";
    default:
      return "check the path, or rebuild the bundle with `aotrace compile`";
  }
}

std::string render_tool_status(const ToolStatus& status, const std::string& command) {
  std::string s = program_of(command) + ": error: " + status.what + "\n";
  if (!status.hint.empty()) s += "  hint: " + status.hint + "\n";
  return s;
}

}  // namespace aotrace::rt
