// `aotrace bench`: times one entry of a bundle on random inputs of the given shapes (issue 6).
// Inputs are filled once (floats uniform in [-1, 1), integers in [0, 8), bools 0/1), the
// variant is selected once to report it, then every timed call is a full `run_into`: guards,
// dispatch and kernels, into preallocated outputs. Reports median, p10 and p90 latency.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/run_tool.h"
#include "cli/commands.h"
#include "ir/ir.h"

namespace aotrace::cli {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;


// "8x784" → {8, 784}; "scalar" → {} (rank 0).
std::vector<int64_t> parse_dims(const std::string& spec, const std::string& text) {
  if (text == "scalar") return {};
  std::vector<int64_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    size_t used = 0;
    long long d = -1;
    try {
      d = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || d < 0 || part[0] == '+' || part[0] == '-')
      user_error("--shape '" + spec + "': '" + text + "' is not a list of dims", {},
                 "write dims separated by 'x', e.g. --shape x=8x784 (or NAME=scalar for rank 0)");
    dims.push_back(d);
  }
  if (dims.empty() || text.back() == 'x')
    user_error("--shape '" + spec + "': '" + text + "' is not a list of dims", {},
               "write dims separated by 'x', e.g. --shape x=8x784 (or NAME=scalar for rank 0)");
  return dims;
}

std::map<std::string, std::vector<int64_t>> parse_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      user_error("--shape '" + spec + "' is not NAME=DIMS", {}, "e.g. --shape x=8x784");
    if (!shapes.emplace(spec.substr(0, eq), parse_dims(spec, spec.substr(eq + 1))).second)
      user_error("--shape " + spec.substr(0, eq) + " is given twice");
  }
  return shapes;
}

// The shape of input `i` when --shape does not name it: the one every variant declares.
std::vector<int64_t> default_shape(const rt::Entry& entry, size_t i) {
  const auto& first = entry.inputs(0)[i];
  std::string shapes;
  bool same = true;
  for (size_t v = 0; v < entry.num_variants(); ++v) {
    const auto& info = entry.inputs(v)[i];
    same &= info.shape == first.shape && info.dims == first.dims;
    shapes += (shapes.empty() ? "" : ", ") + rt::shape_str(info.shape) + " (" + entry.variant_name(v) + ")";
  }
  bool dynamic = false;
  for (const std::string& d : first.dims) dynamic |= !d.empty();
  if (same && !dynamic) return first.shape;
  user_error("entry '" + entry.name() + "' needs --shape " + first.name + "=DIMS", {},
             "its variants take " + first.name + " as " + shapes);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

// Random contents of a dtype: floats in [-1, 1), integers in [0, 8), bools 0/1.
void fill_random(rt::Tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 7);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
      case rt::DType::f32: t.data_as<float>()[i] = unit(rng); break;
      case rt::DType::f64: t.data_as<double>()[i] = unit(rng); break;
      case rt::DType::bf16: t.data_as<uint16_t>()[i] = ir::f32_to_bf16(unit(rng)); break;
      case rt::DType::f16: t.data_as<uint16_t>()[i] = ir::f32_to_f16(unit(rng)); break;
      case rt::DType::i64: t.data_as<int64_t>()[i] = small(rng); break;
      case rt::DType::i32: t.data_as<int32_t>()[i] = small(rng); break;
      case rt::DType::i8: t.data_as<int8_t>()[i] = static_cast<int8_t>(small(rng)); break;
      case rt::DType::u8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(small(rng)); break;
      case rt::DType::b8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(small(rng) & 1); break;
    }
  }
}

struct Timings {
  int warmup = 0;
  std::vector<double> seconds;  // one per timed call
  double total = 0;
};

// Warm-up (at least one call, up to 100 or a tenth of min_time), then `iterations` calls, or
// calls until min_time has passed and at least 3 were timed.
Timings time_calls(const rt::Entry& entry, const std::vector<rt::TensorRef>& inputs,
                   const std::vector<rt::TensorRef>& outputs, const BenchOptions& options) {
  auto call = [&] {
    rt::Status s = entry.run_into(inputs, outputs);
    if (!s.ok()) throw UserError(s.message());
  };
  Timings t;
  const double warmup_seconds = std::min(0.1 * options.min_time, 1.0);
  const auto warmup_start = Clock::now();
  do {
    call();
    ++t.warmup;
  } while (t.warmup < 100 &&
           std::chrono::duration<double>(Clock::now() - warmup_start).count() < warmup_seconds);

  constexpr size_t kMaxSamples = 10'000'000;
  if (options.iterations > 0) t.seconds.reserve(static_cast<size_t>(options.iterations));
  const auto start = Clock::now();
  for (;;) {
    const auto before = Clock::now();
    call();
    const auto after = Clock::now();
    t.seconds.push_back(std::chrono::duration<double>(after - before).count());
    t.total = std::chrono::duration<double>(after - start).count();
    if (options.iterations > 0 ? t.seconds.size() >= static_cast<size_t>(options.iterations)
                               : (t.total >= options.min_time && t.seconds.size() >= 3) ||
                                     t.seconds.size() >= kMaxSamples)
      break;
  }
  return t;
}

// Linear interpolation between the closest ranks of sorted `v`.
double percentile(const std::vector<double>& v, double p) {
  const double rank = p * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace

int bench_command(const BenchOptions& options) {
  auto shapes = parse_shapes(options.shapes);
  rt::OpenOptions open_options;
  open_options.num_threads = options.threads;
  const bool cuda = options.device == "cuda";
  if (cuda) open_options.device = rt::DeviceKind::cuda;
  rt::Result<rt::Bundle> opened = rt::Bundle::open(options.bundle.string(), open_options);
  const std::string hint = opened.ok() ? "" : rt::open_failure_hint(opened.status());
  rt::Bundle bundle = value_or_fail(std::move(opened), hint);
  std::string entry_name = options.entry;
  if (entry_name.empty()) entry_name = bundle.entry_names().size() == 1 ? bundle.entry_names().front() : "forward";
  rt::Entry entry = value_or_fail(bundle.entry(entry_name), "use --entry with one of the bundle's entries");

  std::string expected;
  for (const auto& info : entry.inputs(0)) expected += (expected.empty() ? "" : ", ") + info.name;
  std::vector<rt::Tensor> tensors;
  std::vector<rt::TensorRef> inputs;
  std::mt19937_64 rng(0);
  for (size_t i = 0; i < entry.num_inputs(); ++i) {
    const auto& info = entry.inputs(0)[i];
    auto it = shapes.find(info.name);
    std::vector<int64_t> dims = it != shapes.end() ? it->second : default_shape(entry, i);
    if (it != shapes.end()) shapes.erase(it);
    if (double value = 0; entry.scalar_input(0, i, &value) && dims.empty()) {  // as compiled
      tensors.push_back(value_or_fail(rt::scalar_tensor(info.dtype, value)));
      continue;
    }
    tensors.emplace_back(info.dtype, dims);
    if (!tensors.back().data() && tensors.back().nbytes() > 0)
      user_error("cannot allocate input '" + info.name + "' of shape " + rt::shape_str(dims));
    fill_random(tensors.back(), rng);
  }
  if (!shapes.empty())
    user_error("entry '" + entry_name + "' has no input '" + shapes.begin()->first + "'", {},
               "its inputs are: " + expected);
  for (const auto& t : tensors) inputs.push_back(t.ref());

  // --device cuda: the timed calls read and write GPU memory (scalar inputs stay on the host,
  // where the guards read them); the copies in and out are not timed.
  std::vector<rt::DeviceTensor> on_gpu;
  std::vector<rt::TensorRef> call_inputs = inputs;
  if (cuda)
    for (size_t i = 0; i < call_inputs.size(); ++i)
      if (!(call_inputs[i].shape.empty() && entry.stays_on_host(i))) {
        on_gpu.push_back(value_or_fail(bundle.to_device(call_inputs[i])));
        call_inputs[i] = on_gpu.back().ref();
      }
  const size_t variant = value_or_fail(entry.select(call_inputs), "pass --shape with sizes the bundle was compiled for");
  std::vector<rt::Tensor> outputs;
  std::vector<rt::TensorRef> output_refs;
  const auto shapes_out = value_or_fail(entry.output_shapes(variant, inputs));
  for (size_t o = 0; o < entry.outputs(variant).size(); ++o) {
    outputs.emplace_back(entry.outputs(variant)[o].dtype, shapes_out[o]);
    output_refs.push_back(outputs.back().ref());
  }

  std::vector<rt::TensorRef> call_outputs = output_refs;
  if (cuda)
    for (rt::TensorRef& o : call_outputs) {
      on_gpu.push_back(value_or_fail(bundle.allocate(o.dtype, o.shape)));
      o = on_gpu.back().ref();
    }
  Timings t = time_calls(entry, call_inputs, call_outputs, options);
  std::vector<double> sorted = t.seconds;
  std::sort(sorted.begin(), sorted.end());
  const double ms = 1e3, n = static_cast<double>(sorted.size());
  double mean = 0;
  for (double s : sorted) mean += s / n;

  json ins = json::array();
  for (size_t i = 0; i < tensors.size(); ++i)
    ins.push_back({{"name", entry.inputs(0)[i].name}, {"dtype", rt::dtype_name(tensors[i].dtype())},
                   {"shape", tensors[i].shape()}});
  json report = {{"bundle", options.bundle.string()}, {"entry", entry_name},
                 {"variant", entry.variant_name(variant)}, {"threads", bundle.num_threads()},
                 {"device", options.device}, {"cuda_arch", bundle.cuda_arch()}, {"cuda_image", bundle.cuda_image()},
                 {"inputs", ins}, {"warmup_iterations", t.warmup},
                 {"iterations", sorted.size()}, {"total_s", t.total},
                 {"median_ms", percentile(sorted, 0.5) * ms}, {"p10_ms", percentile(sorted, 0.1) * ms},
                 {"p90_ms", percentile(sorted, 0.9) * ms}, {"mean_ms", mean * ms},
                 {"min_ms", sorted.front() * ms}, {"max_ms", sorted.back() * ms}};
  // Per kernel: as many calls as the timing took, at least 3, each kernel call timed.
  std::vector<rt::Entry::KernelTime> kernels;
  double kernels_ms = 0;
  if (options.profile > 0) {
    kernels = value_or_fail(entry.profile(inputs, std::max<int>(3, static_cast<int>(sorted.size()))));
    for (const auto& k : kernels) kernels_ms += k.mean_ms;
    std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.mean_ms > b.mean_ms; });
    json list = json::array();
    for (size_t k = 0; k < kernels.size() && k < static_cast<size_t>(options.profile); ++k)
      list.push_back({{"symbol", kernels[k].symbol}, {"what", kernels[k].what}, {"mean_ms", kernels[k].mean_ms},
                      {"share", kernels_ms > 0 ? kernels[k].mean_ms / kernels_ms : 0.0}});
    report["profile"] = {{"kernels", kernels.size()}, {"kernels_ms", kernels_ms}, {"slowest", list}};
  }
  if (options.json) {
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  std::cout << "aotrace bench " << options.bundle.string() << ": entry '" << entry_name << "', variant "
            << entry.variant_name(variant) << ", "
            << (cuda ? "GPU 0 (" + bundle.cuda_arch() + ", " + bundle.cuda_image() + ")"
                     : std::to_string(bundle.num_threads()) + " thread(s)")
            << "\n";
  for (const auto& in : ins)
    std::cout << "  input " << in["name"].get<std::string>() << ": " << in["dtype"].get<std::string>() << " "
              << dims_text(in["shape"].get<std::vector<int64_t>>()) << "\n";
  auto fmt = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 1000 ? "%.1f" : "%.4g", v);
    return std::string(buf);
  };
  std::cout << "  " << sorted.size() << " iterations (after " << t.warmup << " warm-up): median "
            << fmt(report["median_ms"]) << " ms, p10 " << fmt(report["p10_ms"]) << " ms, p90 "
            << fmt(report["p90_ms"]) << " ms (mean " << fmt(report["mean_ms"]) << " ms, min "
            << fmt(report["min_ms"]) << " ms)\n";
  if (options.profile > 0) {
    std::cout << "  profile: " << kernels.size() << " kernel calls, " << fmt(kernels_ms)
              << " ms per call in kernels; the slowest:\n";
    for (size_t k = 0; k < kernels.size() && k < static_cast<size_t>(options.profile); ++k) {
      char share[16];
      std::snprintf(share, sizeof share, "%5.1f%%", kernels_ms > 0 ? 100 * kernels[k].mean_ms / kernels_ms : 0.0);
      std::cout << "    " << share << "  " << fmt(kernels[k].mean_ms) << " ms  " << kernels[k].symbol << "  "
                << (kernels[k].what.empty() ? "(no description: bundle before format 1.6)" : kernels[k].what) << "\n";
    }
  }
  return 0;
}

}  // namespace aotrace::cli
