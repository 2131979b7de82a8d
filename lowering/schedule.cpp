// schedule: turns the fused kernels into an ordered list of kernel calls over buffers.
//   - buffers: one per input, read weight and output position, and one arena buffer per other
//     materialised value;
//   - buffers are sized for the symbols' maxima (dynamic dims: the arena fits every size);
//   - kernels in topological order (a kernel only reads values of earlier kernels), each with
//     its loop nest: the root's shape (SymExprs), row-major, innermost dim contiguous (what the LLVM loop
//     vectoriser wants); a reduction adds its loops inside, per output element;
//   - every Output buffer is written by a kernel: an output that aliases an input, a weight or
//     another output gets a copy kernel;
//   - kernels whose code is the same (kernel_code: resnet's repeated blocks, a transformer's
//     layers) share one symbol, so codegen emits each function once.
// Test: lowering_tests Schedule.*, EndToEnd.OutputAliases*, Schedule.RepeatedLayersShareTheirKernels.
#include <algorithm>
#include <functional>
#include <map>

#include "lowering/passes.h"

namespace aotrace::lowering {

// Bytes of `v` with every symbol at `at` (the memory plan lays the arena out for the maxima).
static int64_t bytes_of(const ir::Graph& g, const ir::SymBindings& at, ir::ValueId v) {
  int64_t n = planned_size(g.type(v).numel(), at);
  return n * static_cast<int64_t>(ir::dtype_size(g.type(v).dtype));
}

// The graph nodes kernel `k` computes (its root's and every inlined value's), in graph order.
static std::vector<int> kernel_nodes(const ir::Graph& g, const std::vector<int>& producer, const ScheduledKernel& k) {
  std::vector<bool> seen(g.num_values(), false);
  for (ir::ValueId r : k.read_values) seen[static_cast<size_t>(r)] = true;
  std::vector<int> nodes;
  std::vector<ir::ValueId> stack{k.root};
  while (!stack.empty()) {
    const ir::ValueId v = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(v)]) continue;
    seen[static_cast<size_t>(v)] = true;
    const int n = producer[static_cast<size_t>(v)];
    if (n < 0) continue;  // an input or weight
    nodes.push_back(n);
    for (ir::ValueId o : g.nodes[static_cast<size_t>(n)].operands) stack.push_back(o);
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

// What kernel `k` computes, for profiles: its reduction (with its operand types) or root op, the
// ops it fuses in graph order, and the user's line of the reduction or root.
static std::string kernel_text(const ir::Graph& g, const std::vector<int>& producer, const ScheduledKernel& k) {
  const std::vector<int>& nodes = k.nodes;
  if (nodes.empty()) return "copy " + g.type(k.root).str();
  const int main_node = k.reduction >= 0 ? producer[static_cast<size_t>(k.reduction)] : nodes.back();
  const ir::Node& main = g.nodes[static_cast<size_t>(main_node)];
  std::string s = std::string(ir::op_name(main.op)) + " " + g.type(main.results.at(0)).str();
  if (k.reduction >= 0) {
    s += " <-";
    for (size_t i = 0; i < main.operands.size(); ++i) s += (i ? ", " : " ") + g.type(main.operands[i]).str();
  }
  // The other ops, each once with its count: "+ add, relu, mul x2".
  std::vector<std::pair<std::string, int>> ops;
  for (int n : nodes) {
    if (n == main_node) continue;
    const std::string name(ir::op_name(g.nodes[static_cast<size_t>(n)].op));
    auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& p) { return p.first == name; });
    if (it == ops.end()) ops.emplace_back(name, 1);
    else ++it->second;
  }
  for (size_t i = 0; i < ops.size(); ++i)
    s += (i ? ", " : " + ") + ops[i].first + (ops[i].second > 1 ? " x" + std::to_string(ops[i].second) : "");
  const SourceLoc& loc = main.loc.known() ? main.loc : g.nodes[static_cast<size_t>(nodes.back())].loc;
  if (loc.known()) {
    const size_t slash = loc.file.find_last_of('/');
    s += " (" + (slash == std::string::npos ? loc.file : loc.file.substr(slash + 1)) + ":" + std::to_string(loc.line) + ")";
  }
  return s;
}

// The code of kernel `k` as text: what its function computes, independent of which values it
// reads and writes. The root's producer and every inlined value down to the materialised
// values it reads (named by their position among the kernel's reads, with their types), each
// op with its attributes and result type; a value reached twice is referred back to. Kernels
// with equal text emit identical functions (the emitter reads nothing else of the graph but the
// symbols' ranges, shared by the variant), so they share one (resnet's repeated blocks).
static std::string kernel_code(const ir::Graph& g, const std::vector<int>& producer, const ScheduledKernel& k) {
  std::map<ir::ValueId, size_t> read_index, seen;
  for (size_t r = 0; r < k.read_values.size(); ++r) read_index.emplace(k.read_values[r], r);
  std::string s = "loops";
  for (const ir::SymExpr& e : k.loop_extents) s += " " + e.str();
  s += "\n";
  std::function<void(ir::ValueId)> visit = [&](ir::ValueId v) {
    if (auto it = seen.find(v); it != seen.end()) {
      s += "@" + std::to_string(it->second) + "\n";
      return;
    }
    seen.emplace(v, seen.size());
    if (v == k.reduction) s += "reduction ";
    // A copy kernel reads its own root.
    if (auto it = read_index.find(v); it != read_index.end()) {
      s += "read " + std::to_string(it->second) + " " + g.type(v).str() + "\n";
      return;
    }
    const ir::Node& n = g.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])];
    size_t result = 0;
    while (n.results[result] != v) ++result;
    s += std::string(ir::op_name(n.op)) + "#" + std::to_string(result) + " " + n.attrs.str() + " -> " + g.type(v).str() + "\n";
    for (ir::ValueId o : n.operands) visit(o);
  };
  visit(k.root);
  return s;
}

Schedule schedule(FusedGraph fused, const std::string& symbol_prefix) {
  using Kind = ir::PlanBuffer::Kind;
  const ir::Graph& g = fused.graph;
  Schedule s;
  std::vector<int32_t> holder(g.num_values(), -1);  // value → the buffer that holds it
  const ir::SymBindings max = max_bindings(g), min = min_bindings(g);
  auto add_buffer = [&](Kind kind, int64_t index, ir::ValueId v) {
    s.buffers.push_back(LogicalBuffer{kind, index, v, bytes_of(g, max, v), bytes_of(g, min, v)});
    return static_cast<int32_t>(s.buffers.size() - 1);
  };
  for (size_t i = 0; i < g.inputs.size(); ++i)
    holder[static_cast<size_t>(g.inputs[i].value)] =
        add_buffer(Kind::Input, static_cast<int64_t>(i), g.inputs[i].value);
  // Weights only where a kernel or an output reads them: a weight that pack_weights replaced by
  // its panels is not stored in the bundle twice.
  std::vector<bool> read(g.num_values(), false);
  for (const FusedKernel& k : fused.kernels)
    for (ir::ValueId r : k.reads) read[static_cast<size_t>(r)] = true;
  for (ir::ValueId v : g.outputs) read[static_cast<size_t>(v)] = true;
  for (size_t i = 0; i < g.weights.size(); ++i)
    if (read[static_cast<size_t>(g.weights[i].value)])
      holder[static_cast<size_t>(g.weights[i].value)] =
          add_buffer(Kind::Weight, static_cast<int64_t>(i), g.weights[i].value);
  std::vector<int32_t> output_buffer;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    ir::ValueId v = g.outputs[i];
    output_buffer.push_back(add_buffer(Kind::Output, static_cast<int64_t>(i), v));
    if (holder[static_cast<size_t>(v)] < 0) holder[static_cast<size_t>(v)] = output_buffer.back();
  }
  for (const FusedKernel& k : fused.kernels)
    if (holder[static_cast<size_t>(k.root)] < 0)
      holder[static_cast<size_t>(k.root)] = add_buffer(Kind::Arena, 0, k.root);

  std::vector<int> producer(g.num_values(), -1);  // value → the node that computes it
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ir::ValueId r : g.nodes[n].results) producer[static_cast<size_t>(r)] = static_cast<int>(n);
  auto add_kernel = [&](ir::ValueId root, ir::ValueId reduction, int32_t out,
                        const std::vector<ir::ValueId>& reads) {
    ScheduledKernel sk;
    sk.symbol = symbol_prefix + "k" + std::to_string(s.kernels.size());
    sk.root = root;
    sk.reduction = reduction;
    sk.buffers.push_back(out);
    for (ir::ValueId r : reads) {
      AOT_CHECK(holder[static_cast<size_t>(r)] >= 0, "kernel reads an unmaterialised value");
      sk.buffers.push_back(holder[static_cast<size_t>(r)]);
      sk.read_values.push_back(r);
    }
    sk.loop_extents = g.type(root).shape;
    sk.nodes = kernel_nodes(g, producer, sk);
    sk.what = kernel_text(g, producer, sk);
    s.kernels.push_back(std::move(sk));
  };
  for (const FusedKernel& k : fused.kernels)
    add_kernel(k.root, k.reduction, holder[static_cast<size_t>(k.root)], k.reads);
  // Outputs not written by their own kernel: copies, after everything they could read.
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (holder[static_cast<size_t>(g.outputs[i])] != output_buffer[i])
      add_kernel(g.outputs[i], -1, output_buffer[i], {g.outputs[i]});

  // Kernels that compute the same code share its function: the plan calls it with their own
  // buffers, codegen emits it once.
  std::map<std::string, std::string> symbol_of_code;
  for (ScheduledKernel& k : s.kernels) {
    auto [it, first] = symbol_of_code.emplace(kernel_code(g, producer, k), k.symbol);
    if (!first) k.symbol = it->second;
  }

  s.fused = std::move(fused);
  return s;
}

}  // namespace aotrace::lowering
