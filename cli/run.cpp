// `aotrace run`: loads a bundle with the shipped runtime, reads .npy inputs by name, runs the
// entry (guards checked) and writes out0.npy, out1.npy, … in flattened output order, and
// updated_NAME.npy for each input the entry changes in place (as the call left it). It prints
// the variant that ran and each file with its place in the returned structure (out0.npy is
// ['logits'] of a dict), and writes the same to outputs.json beside them.
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "artifacts/runtime/aotrace_runtime.h"
#include "artifacts/runtime/npy.h"
#include "cli/commands.h"

namespace aotrace::cli {

namespace {

// A Python scalar input given on the command line: an integer, a number, true or false.
double scalar_literal(const std::string& name, const std::string& text) {
  if (text == "true" || text == "True") return 1;
  if (text == "false" || text == "False") return 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    user_error("--input " + name + "=" + text + " is neither a file nor a number", {},
               "input '" + name + "' is a Python scalar: pass its value (--input " + name +
                   "=3, =0.5 or =true) or a .npy file of a 0-d tensor");
  return v;
}

// Input `name` from the .npy file at `path`: a missing file, a directory or a file that is not
// .npy is the user's error, named with its input.
rt::Tensor read_input(const std::string& name, const std::string& path) {
  rt::Result<rt::Tensor> t = rt::npy_read(path);
  if (!t.ok())
    user_error("input " + name + ": " + t.status().message(), {},
               "pass --input " + name + "=FILE.npy with a file written by numpy.save");
  return std::move(t).value();
}

// Where each output leaf sits in the structure the entry returns, as Python indexes it from the
// result: "" for a lone tensor, "[0]", "['logits']", "[1]['mask']".
std::map<int, std::string> leaf_paths(const std::vector<rt::OutputNode>& nodes) {
  std::map<int, std::string> paths;
  if (nodes.empty()) return paths;
  std::vector<std::pair<int, std::string>> stack{{0, ""}};
  while (!stack.empty()) {
    auto [n, path] = stack.back();
    stack.pop_back();
    const rt::OutputNode& node = nodes[static_cast<size_t>(n)];
    if (node.kind == rt::OutputNode::Kind::Leaf) paths[node.leaf] = path;
    for (size_t c = 0; c < node.children.size(); ++c)
      stack.push_back({node.children[c], path + (node.kind == rt::OutputNode::Kind::Dict ? "['" + node.keys[c] + "']"
                                                                                            : "[" + std::to_string(c) + "]")});
  }
  return paths;
}

}  // namespace

int run_command(const RunOptions& options) {
  std::map<std::string, std::string> files;
  for (const auto& spec : options.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      user_error("--input '" + spec + "' is not NAME=FILE.npy", {}, "e.g. --input x=x.npy");
    if (!files.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second)
      user_error("--input " + spec.substr(0, eq) + " is given twice");
  }
  rt::OpenOptions open_options;
  open_options.num_threads = options.threads;
  rt::Bundle bundle = value_or_fail(rt::Bundle::open(options.bundle.string(), open_options),
                                    "check the path, or rebuild the bundle with `aotrace compile`");
  std::string entry_name = options.entry;
  const auto names = bundle.entry_names();
  if (entry_name.empty()) {
    if (names.size() == 1) entry_name = names.front();
    else entry_name = "forward";
  }
  rt::Entry entry = value_or_fail(bundle.entry(entry_name), "use --entry with one of the bundle's entries");

  std::vector<rt::Tensor> tensors;
  std::vector<rt::TensorRef> refs;
  std::string expected;
  for (const auto& info : entry.inputs(0)) expected += (expected.empty() ? "" : ", ") + info.name;
  for (size_t i = 0; i < entry.num_inputs(); ++i) {
    const auto& info = entry.inputs(0)[i];
    auto it = files.find(info.name);
    double compiled = 0;
    const bool scalar = entry.scalar_input(0, i, &compiled);
    if (it == files.end()) {
      // A Python scalar input defaults to the value the bundle was compiled for.
      if (scalar) {
        tensors.push_back(value_or_fail(rt::scalar_tensor(info.dtype, compiled)));
        continue;
      }
      user_error("entry '" + entry_name + "' needs input '" + info.name + "'", {},
                 "pass --input " + info.name + "=FILE.npy (inputs: " + expected + ")");
    }
    if (scalar && !std::filesystem::exists(it->second))  // --input n=3, --input causal=true
      tensors.push_back(value_or_fail(rt::scalar_tensor(info.dtype, scalar_literal(info.name, it->second))));
    else
      tensors.push_back(read_input(info.name, it->second));
    files.erase(it);
  }
  if (!files.empty())
    user_error("entry '" + entry_name + "' has no input '" + files.begin()->first + "'", {},
               "its inputs are: " + expected);
  for (const auto& t : tensors) refs.push_back(t.ref());

  const size_t variant = value_or_fail(entry.select(refs));
  entry.manual_seed(options.seed);
  std::vector<rt::Tensor> outputs = value_or_fail(entry.run(refs));
  std::filesystem::create_directories(options.output_dir);
  auto write = [&](const std::string& name, const rt::TensorRef& t) {
    const auto path = options.output_dir / (name + ".npy");
    rt::Status s = rt::npy_write(path.string(), t);
    if (!s.ok()) user_error("writing " + path.string() + ": " + s.message());
  };
  // Which variant ran, and each file with its place in the result.
  const std::map<int, std::string> paths = leaf_paths(entry.output_nodes());
  nlohmann::json files_json = nlohmann::json::array();
  std::cout << "entry '" << entry_name << "' ran variant " << entry.variant_name(variant) << "\n";
  auto report = [&](const std::string& file, const std::string& what, const rt::TensorRef& t) {
    std::cout << "  " << (options.output_dir / file).string() << "  " << what << "  " << rt::dtype_name(t.dtype) << " "
              << rt::shape_str(t.shape) << "\n";
    files_json.push_back({{"file", file}, {"output", what}, {"dtype", rt::dtype_name(t.dtype)}, {"shape", t.shape}});
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = "out" + std::to_string(i);
    write(name, outputs[i].ref());
    auto p = paths.find(static_cast<int>(i));
    report(name + ".npy", "result" + (p != paths.end() ? p->second : std::string()), outputs[i].ref());
  }
  for (int32_t i : entry.updated_inputs(variant)) {
    const std::string& input = entry.inputs(variant)[static_cast<size_t>(i)].name;
    write("updated_" + input, refs[static_cast<size_t>(i)]);
    report("updated_" + input + ".npy", "input " + input + " as the call left it", refs[static_cast<size_t>(i)]);
  }
  const nlohmann::json manifest = {{"entry", entry_name}, {"variant", entry.variant_name(variant)},
                                   {"output_tree", entry.output_tree()}, {"files", files_json}};
  std::ofstream(options.output_dir / "outputs.json") << manifest.dump(1) << "\n";
  return 0;
}

}  // namespace aotrace::cli
