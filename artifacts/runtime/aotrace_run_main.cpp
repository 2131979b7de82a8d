// aotrace_run: runs one entry of a bundle on .npy inputs, standalone (no compiler, no Python).
//   aotrace_run BUNDLE_DIR [--entry NAME] --input x=in.npy ... [--output-dir DIR] [--threads N]
//   aotrace_run BUNDLE_DIR --selftest     the bundle's golden vectors (Bundle::selftest)
// Writes out0.npy, out1.npy, … in the flattened output order. Exit codes as `aotrace run`:
// 0 success, 1 the inputs are wrong (guard miss) or the bundle is unusable, 2 usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "aotrace_runtime.h"
#include "npy.h"

using namespace aotrace::rt;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "aotrace_run: error: %s\nusage: aotrace_run BUNDLE_DIR [--entry NAME] "
               "--input NAME=FILE.npy ... [--output-dir DIR] [--threads N]\n"
               "       aotrace_run BUNDLE_DIR --selftest [--threads N]\n",
               why);
  return 2;
}

int fail(const Status& s) {
  std::fprintf(stderr, "aotrace_run: error: %s\n", s.message().c_str());
  return 1;
}

struct Args {
  std::string bundle, entry, output_dir = ".";
  std::map<std::string, std::string> inputs;
  int threads = 0;  // 0: AOTRACE_NUM_THREADS or the CPU count
  bool selftest = false;
};

const char* parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--entry" && has_value) {
      args.entry = argv[++i];
    } else if (a == "--output-dir" && has_value) {
      args.output_dir = argv[++i];
    } else if (a == "--threads" && has_value) {
      char* end = nullptr;
      long n = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || n < 0 || n > 1024) return "--threads takes a number from 0 to 1024";
      args.threads = static_cast<int>(n);
    } else if (a == "--selftest") {
      args.selftest = true;
    } else if (a == "--input" && has_value) {
      std::string kv = argv[++i];
      size_t eq = kv.find('=');
      if (eq == std::string::npos) return "--input takes NAME=FILE.npy";
      args.inputs[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (!a.empty() && a[0] != '-' && args.bundle.empty()) {
      args.bundle = a;
    } else {
      return "unexpected argument";
    }
  }
  return args.bundle.empty() ? "no bundle directory given" : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const char* why = parse_args(argc, argv, args)) return usage(why);
  OpenOptions options;
  options.num_threads = args.threads;
  auto bundle = Bundle::open(args.bundle, options);
  if (!bundle.ok()) return fail(bundle.status());
  if (args.selftest) {
    size_t checked = 0;
    if (Status s = bundle->selftest(&checked); !s.ok()) return fail(s);
    if (checked == 0) return fail(Status(StatusCode::not_found, "the bundle has no golden vectors"));
    std::printf("aotrace_run --selftest: %zu golden pair(s) match (kernels %s)\n", checked,
                bundle->cpu_library().c_str());
    return 0;
  }
  if (args.entry.empty()) {
    std::vector<std::string> names = bundle->entry_names();
    if (names.size() != 1) return usage("the bundle has several entries: name one with --entry");
    args.entry = names[0];
  }
  auto entry = bundle->entry(args.entry);
  if (!entry.ok()) return fail(entry.status());
  std::vector<Tensor> inputs;
  for (const TensorInfo& info : entry->inputs()) {
    auto it = args.inputs.find(info.name);
    if (it == args.inputs.end()) return usage(("missing --input " + info.name + "=FILE.npy").c_str());
    auto t = npy_read(it->second);
    if (!t.ok()) return fail(t.status());
    inputs.push_back(std::move(*t));
  }
  std::vector<TensorRef> refs;
  for (const Tensor& t : inputs) refs.push_back(t.ref());
  auto outputs = entry->run(refs);
  if (!outputs.ok()) return fail(outputs.status());
  for (size_t i = 0; i < outputs->size(); ++i) {
    std::string path = args.output_dir + "/out" + std::to_string(i) + ".npy";
    if (Status s = npy_write(path, (*outputs)[i].ref()); !s.ok()) return fail(s);
  }
  return 0;
}
