// schedule: turns the fused kernels into an ordered list of kernel calls over buffers.
//   - buffers: one per input, read weight and output position, and one arena buffer per other
//     materialised value;
//   - buffers are sized for the symbols' maxima (dynamic dims: the arena fits every size);
//   - kernels in topological order (a kernel only reads values of earlier kernels), each with
//     its loop nest: the root's shape (SymExprs), row-major, innermost dim contiguous (what the LLVM loop
//     vectoriser wants); a reduction adds its loops inside, per output element;
//   - every Output buffer is written by a kernel: an output that aliases an input, a weight or
//     another output gets a copy kernel.
// Test: lowering_tests Schedule.*, EndToEnd.OutputAliases*.
#include "lowering/passes.h"

namespace aotrace::lowering {

// Bytes of `v` with every symbol at `at` (the memory plan lays the arena out for the maxima).
static int64_t bytes_of(const ir::Graph& g, const ir::SymBindings& at, ir::ValueId v) {
  int64_t n = planned_size(g.type(v).numel(), at);
  return n * static_cast<int64_t>(ir::dtype_size(g.type(v).dtype));
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
    s.kernels.push_back(std::move(sk));
  };
  for (const FusedKernel& k : fused.kernels)
    add_kernel(k.root, k.reduction, holder[static_cast<size_t>(k.root)], k.reads);
  // Outputs not written by their own kernel: copies, after everything they could read.
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (holder[static_cast<size_t>(g.outputs[i])] != output_buffer[i])
      add_kernel(g.outputs[i], -1, output_buffer[i], {g.outputs[i]});

  s.fused = std::move(fused);
  return s;
}

}  // namespace aotrace::lowering
