// Small graph-building helpers shared by the lowering tests.
#pragma once

#include "ir/ir.h"

namespace aotrace::lowering::testing {

inline ir::TensorType f32(std::vector<int64_t> dims) {
  ir::Shape s(dims.begin(), dims.end());
  return ir::TensorType{ir::DType::f32, ir::Device{}, s};
}

inline ir::Attrs reduce_attrs(std::vector<int64_t> axes, bool keepdim) {
  ir::Attrs a;
  a.set("axes", std::move(axes)).set("keepdim", int64_t{keepdim});
  return a;
}

inline ir::Attrs perm_attrs(std::vector<int64_t> perm) {
  ir::Attrs a;
  a.set("perm", std::move(perm));
  return a;
}

inline ir::Attrs shape_attrs(std::vector<int64_t> dims) {
  ir::Attrs a;
  a.set("shape", ir::Shape(dims.begin(), dims.end()));
  return a;
}

inline void set_outputs(ir::Graph& g, std::vector<ir::ValueId> outs) {
  ir::OutputTree tree;
  if (outs.size() == 1) {
    tree.leaf = 0;
  } else {
    tree.kind = ir::OutputTree::Kind::Tuple;
    for (size_t i = 0; i < outs.size(); ++i) {
      ir::OutputTree leaf;
      leaf.leaf = static_cast<int>(i);
      tree.children.push_back(leaf);
    }
  }
  g.set_outputs(std::move(outs), tree);
}

inline std::vector<std::string> op_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes) names.emplace_back(ir::op_name(n.op));
  return names;
}

}  // namespace aotrace::lowering::testing
