// cuda_weight_layout (pipeline pass "cuda-weight-layout"): a matmul whose B operand is a view of
// a weight (movement ops only: a linear layer's permute(W [N, K]), the q/k/v rows of attention's
// in_proj sliced then permuted) reads a new weight instead, holding that view's values in its
// own [..., K, N] row-major layout, computed now with the movement ops' reference
// implementations. On the GPU a thread computes one output (m, n) and neighbouring threads have
// neighbouring n: with B as [K, N] their loads of B are adjacent (one memory transaction per
// warp), where through the permute each thread read its own row of W (32 transactions per warp
// load). A weight the plans no longer read is not stored (compile stores what plans read). Warp
// matmuls (cuda_backend.h) keep B as it is: their lanes walk K, along Linear's weight rows.
// The CPU has its own layout pass (cpu/pack_weights.cpp, panels for its GEMM).
// Test: lowering_tests Cuda.LinearWeightsAreStoredKByN, and every reference check's CUDA run.
#include <map>
#include <optional>

#include "lowering/cuda/cuda_backend.h"
#include "lowering/passes.h"

namespace aotrace::lowering::cuda {
ir::Graph cuda_weight_layout(ir::Graph old) {
  std::vector<int> producer(old.num_values(), -1);
  for (size_t i = 0; i < old.nodes.size(); ++i)
    for (ir::ValueId r : old.nodes[i].results) producer[static_cast<size_t>(r)] = static_cast<int>(i);
  const std::vector<int> weight = weight_indices(old);
  GraphCopy c = copy_signature(old);
  std::map<ir::ValueId, ir::ValueId> laid_out;  // old B operand → its new weight

  // The new weight holding view `v` of a weight, or -1 when `v` is not such a view (or needs no
  // new layout: no permute on the way).
  auto lay_out = [&](ir::ValueId v) -> ir::ValueId {
    if (auto it = laid_out.find(v); it != laid_out.end()) return it->second;
    std::vector<const ir::Node*> chain;  // from v back towards the weight
    ir::ValueId at = v;
    bool permuted = false;
    while (producer[static_cast<size_t>(at)] >= 0) {
      const ir::Node& n = old.nodes[static_cast<size_t>(producer[static_cast<size_t>(at)])];
      const ir::OpInfo& info = ir::op_info(n.op);
      if (info.category != ir::OpCategory::Movement || n.operands.size() != 1 || n.results.size() != 1 ||
          !info.reference)
        return -1;
      permuted |= n.op == ir::OpKind::Permute;
      chain.push_back(&n);
      at = n.operands[0];
    }
    const int w = weight[static_cast<size_t>(at)];
    const ir::TensorType& out = old.type(v);
    auto out_dims = out.static_shape();
    auto w_dims = old.type(at).static_shape();
    if (w < 0 || !permuted || !out_dims || !w_dims || out.dtype != ir::DType::f32) return -1;
    const ir::Graph::Weight& src = old.weights[static_cast<size_t>(w)];
    ir::HostTensor t{old.type(at).dtype, *w_dims, *src.data};
    std::string how = "";
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const ir::Node& n = **it;
      std::vector<ir::HostTensor> args;
      args.push_back(std::move(t));
      std::vector<ir::HostTensor> r = ir::op_info(n.op).reference(args, n.attrs);
      AOT_CHECK(r.size() == 1, "cuda-weight-layout: a movement op with several results");
      t = std::move(r[0]);
      how += std::string(how.empty() ? "" : ".") + std::string(ir::op_info(n.op).name);
    }
    AOT_CHECK(t.shape == *out_dims && t.dtype == out.dtype, "cuda-weight-layout: the view's values have another type");
    // The source names the tensor across variants (the bundle stores each source once); the
    // view's attributes are part of it (two slices of one weight differ).
    std::string source;
    if (!src.source.empty()) {
      source = "cuda_layout(" + src.source;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) source += ", " + (*it)->attrs.str();
      source += ")";
    }
    const ir::ValueId nw = c.graph.add_weight(src.name + ".cuda_" + how, out, source,
                                              std::make_shared<const ir::Bytes>(std::move(t.data)));
    laid_out.emplace(v, nw);
    return nw;
  };

  const ir::SymBindings max = max_bindings(old);
  for (const ir::Node& n : old.nodes) {
    std::vector<ir::ValueId> operands;
    for (ir::ValueId o : n.operands) operands.push_back(c.map.at(static_cast<size_t>(o)));
    if (n.op == ir::OpKind::Matmul && n.operands.size() == 2 && !warp_matmul(old, n, max))
      if (ir::ValueId nw = lay_out(n.operands[1]); nw >= 0) operands[1] = nw;
    copy_node(c, n, operands);
  }
  // The views left without uses go (the graph's own DCE would keep them computed in kernels).
  return dce(finish_copy(std::move(c), old));
}

}  // namespace aotrace::lowering::cuda
