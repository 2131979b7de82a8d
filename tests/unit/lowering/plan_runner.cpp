// The test double of the runtime's plan executor (artifacts/runtime does the same for real).
#include "tests/unit/lowering/plan_runner.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "artifacts/runtime/aotrace_kernel_abi.h"

namespace aotrace::lowering::testing {
namespace fs = std::filesystem;

LoadedLibrary::LoadedLibrary(const ir::Bytes& so) {
  std::string pattern = (fs::temp_directory_path() / "aotrace-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  std::string path = dir_ + "/kernels.so";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(so.data()), static_cast<std::streamsize>(so.size()));
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
}

LoadedLibrary::~LoadedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
  fs::remove_all(dir_);
}

void* LoadedLibrary::symbol(const std::string& name) const {
  void* s = dlsym(handle_, name.c_str());
  if (s == nullptr) throw std::runtime_error("missing kernel symbol " + name);
  return s;
}

ir::SymBindings bind_symbols(const ir::Graph& graph, const std::vector<ir::HostTensor>& inputs) {
  ir::SymBindings bindings;
  if (inputs.size() != graph.inputs.size()) throw std::runtime_error("wrong number of inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Shape& shape = graph.type(graph.inputs[i].value).shape;
    if (shape.size() != inputs[i].shape.size()) throw std::runtime_error("input " + std::to_string(i) + ": rank");
    for (size_t d = 0; d < shape.size(); ++d) {
      const ir::SymNode& n = shape[d].node();
      if (n.kind != ir::SymNode::Kind::Symbol) continue;
      auto [it, fresh] = bindings.emplace(n.name, inputs[i].shape[d]);
      if (!fresh && it->second != inputs[i].shape[d])
        throw std::runtime_error("symbol " + n.name + " bound to two sizes");
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Shape& shape = graph.type(graph.inputs[i].value).shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d].evaluate(bindings) != inputs[i].shape[d])
        throw std::runtime_error("input " + std::to_string(i) + " does not match " + ir::shape_str(shape));
  }
  for (const auto& [name, value] : bindings) {
    auto range = graph.symbols.find(name);
    if (range != graph.symbols.end() && (value < range->second.min || value > range->second.max))
      throw std::runtime_error("symbol " + name + " = " + std::to_string(value) + " is outside its range");
  }
  return bindings;
}

std::vector<ir::HostTensor> run_plan(const LoadedLibrary& lib, const ir::ExecutionPlan& plan,
                                     const ir::Graph& graph,
                                     const std::vector<ir::HostTensor>& inputs) {
  using Kind = ir::PlanBuffer::Kind;
  const ir::SymBindings bindings = bind_symbols(graph, inputs);
  // The kernels' symbols: the values of Graph::symbols in its (std::map) order.
  std::vector<int64_t> symbols;
  for (const auto& [name, range] : graph.symbols) {
    auto it = bindings.find(name);
    symbols.push_back(it == bindings.end() ? range.max : it->second);
  }
  std::vector<ir::HostTensor> outputs;
  for (ir::ValueId v : graph.outputs) {
    std::vector<int64_t> shape;
    for (const auto& d : graph.type(v).shape) {
      auto size = d.evaluate(bindings);
      if (!size) throw std::runtime_error("output dim " + d.str() + " has an unbound symbol");
      shape.push_back(*size);
    }
    outputs.push_back(ir::HostTensor::zeros(graph.type(v).dtype, shape));
  }
  size_t arena_size = static_cast<size_t>((plan.arena_bytes + 63) / 64 * 64 + 64);
  std::unique_ptr<uint8_t, decltype(&std::free)> arena(
      static_cast<uint8_t*>(std::aligned_alloc(64, arena_size)), &std::free);
  std::vector<void*> pointers;
  for (const ir::PlanBuffer& b : plan.buffers) {
    auto i = static_cast<size_t>(b.index);
    switch (b.kind) {
      case Kind::Input: pointers.push_back(const_cast<uint8_t*>(inputs.at(i).data.data())); break;
      case Kind::Output: pointers.push_back(outputs.at(i).data.data()); break;
      case Kind::Weight: pointers.push_back(const_cast<uint8_t*>(graph.weights.at(i).data->data())); break;
      case Kind::Arena: pointers.push_back(arena.get() + b.offset); break;
    }
  }
  // A parallel_for that splits [0, n) into up to three chunks run last-first: kernels must
  // compute the same for any split and order (the runtime's pool runs chunks concurrently).
  aotrace_kernel_ctx ctx{nullptr, [](void*, int64_t n, aotrace_parallel_body body, void* closure) {
                           int64_t chunk = (n + 2) / 3;
                           for (int64_t begin = (n - 1) / chunk * chunk; begin >= 0; begin -= chunk)
                             body(closure, begin, std::min(n, begin + chunk));
                         }};
  for (const ir::KernelCall& call : plan.calls) {
    std::vector<void*> args;
    for (int32_t b : call.buffers) args.push_back(pointers.at(static_cast<size_t>(b)));
    auto fn = reinterpret_cast<aotrace_kernel_fn>(lib.symbol(call.symbol));
    fn(args.data(), symbols.data(), &ctx);
  }
  return outputs;
}

std::vector<ir::HostTensor> compile_and_run(const ir::Graph& graph,
                                            const std::vector<ir::HostTensor>& inputs,
                                            LoweredVariant* lowered_out, const Options& options) {
  LoweredVariant lowered = lower_graph(graph, "test_", options);
  LoadedLibrary lib(link_cpu_library({lowered.object}, options));
  auto outputs = run_plan(lib, lowered.plan, lowered.graph, inputs);
  if (lowered_out != nullptr) *lowered_out = std::move(lowered);
  return outputs;
}

ir::HostTensor random_tensor(std::vector<int64_t> shape, uint32_t seed, double lo, double hi,
                             ir::DType dtype) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  ir::HostTensor t = ir::HostTensor::zeros(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, ir::is_floating(dtype) ? dist(rng) : std::floor(dist(rng)));
  return t;
}

std::shared_ptr<const ir::Bytes> random_weight_bytes(std::vector<int64_t> shape, uint32_t seed) {
  return std::make_shared<const ir::Bytes>(random_tensor(std::move(shape), seed).data);
}

std::string compare(const ir::HostTensor& actual, const ir::HostTensor& expected, double rtol,
                    double atol) {
  if (actual.shape != expected.shape) return "shapes differ";
  if (actual.dtype != expected.dtype) return "dtypes differ";
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.get(i), e = expected.get(i);
    bool same = (std::isnan(a) && std::isnan(e)) || a == e;  // NaNs match, and so do equal infs
    if (!same && !(std::fabs(a - e) <= atol + rtol * std::fabs(e)))
      return "element " + std::to_string(i) + ": got " + std::to_string(a) + ", expected " +
             std::to_string(e);
  }
  return "";
}

}  // namespace aotrace::lowering::testing
