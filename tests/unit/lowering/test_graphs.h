// Small graph-building helpers shared by the lowering tests.
#pragma once

#include <cstring>

#include <initializer_list>
#include <string>
#include <utility>

#include "ir/ir.h"
#include "tests/unit/lowering/plan_runner.h"

namespace aotrace::lowering::testing {

// A CPU tensor type of dtype `t`.
inline ir::TensorType typed(ir::DType t, std::vector<int64_t> dims) {
  return ir::TensorType{t, ir::Device{}, ir::Shape(dims.begin(), dims.end())};
}

inline ir::TensorType f32(std::vector<int64_t> dims) {
  ir::Shape s(dims.begin(), dims.end());
  return ir::TensorType{ir::DType::f32, ir::Device{}, s};
}

// Attributes from a list of name/value pairs: attrs({{"axis", int64_t{1}}, {"eps", 1e-5}}).
inline ir::Attrs attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> items) {
  ir::Attrs a;
  for (const auto& [k, v] : items) a.set(k, v);
  return a;
}

// An f32 weight `name` of shape `dims` with random contents from `seed`, sourced as L['self'].name.
inline ir::ValueId weight(ir::Graph& g, const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
  return g.add_weight(name, f32(dims), "L['self']." + name, random_weight_bytes(dims, seed));
}

// The same as `t` (f32, f16 or bf16): the f32 weight's values rounded to nearest even.
inline ir::ValueId typed_weight(ir::Graph& g, ir::DType t, const std::string& name, std::vector<int64_t> dims,
                                uint32_t seed) {
  std::shared_ptr<const ir::Bytes> f = random_weight_bytes(dims, seed);
  if (t == ir::DType::f32) return g.add_weight(name, f32(dims), "L['self']." + name, f);
  auto bytes = std::make_shared<ir::Bytes>(f->size() / 2);
  for (size_t i = 0; i < f->size() / 4; ++i) {
    float v;
    std::memcpy(&v, f->data() + 4 * i, 4);
    const uint16_t h = t == ir::DType::f16 ? ir::f32_to_f16(v) : ir::f32_to_bf16(v);
    std::memcpy(bytes->data() + 2 * i, &h, 2);
  }
  return g.add_weight(name, typed(t, dims), "L['self']." + name, bytes);
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

// x[start:end:step] along `axis`.
inline ir::ValueId slice(ir::Graph& g, ir::ValueId x, int64_t axis, int64_t start, int64_t end, int64_t step = 1) {
  return g.add(ir::OpKind::Slice, {x}, attrs({{"axis", axis}, {"start", start}, {"end", end}, {"step", step}}));
}

// topk(x, k, axis, largest), sorted: its values and indices.
inline std::vector<ir::ValueId> topk_of(ir::Graph& g, ir::ValueId x, int64_t k, int64_t axis, bool largest) {
  return g.add_node(ir::OpKind::TopK, {x}, attrs({{"k", k}, {"axis", axis}, {"largest", int64_t{largest}}, {"sorted", int64_t{1}}}));
}

// The transpose of a 2-D value.
inline ir::ValueId transpose(ir::Graph& g, ir::ValueId x) {
  return g.add(ir::OpKind::Permute, {x}, perm_attrs({1, 0}));
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
