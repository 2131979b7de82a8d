// Consistency checks on a bundle read from bundle.fb: every index in range, every buffer the
// size its tensor needs. After these, running a variant cannot read or write out of bounds
// (provided the kernels are what the plan says).
#include <limits>

#include "bundle_data.h"

namespace aotrace::rt {
namespace {

constexpr int64_t kMaxBytes = int64_t{1} << 46;  // 64 TiB: anything larger is corruption

// Bytes of a tensor of `shape`, or -1 when a dim is negative or the size is absurd.
int64_t bytes_of(DType dtype, const std::vector<int64_t>& shape) {
  int64_t n = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxBytes / d)) return -1;
    n *= d;
  }
  return n;
}

// The bytes of each input and output of a variant with every symbol at its maximum (what the
// plan's buffers are sized for); -1 for an invalid shape.
struct TensorBytes {
  std::vector<int64_t> inputs, outputs;
};

TensorBytes tensor_bytes(const VariantData& v) {
  std::vector<int64_t> max_symbols;
  for (const SymbolData& s : v.symbols) max_symbols.push_back(s.max);
  TensorBytes out;
  for (size_t i = 0; i < v.inputs.size(); ++i)
    out.inputs.push_back(bytes_of(v.inputs[i].dtype, concrete_shape(v, v.raw_input_shapes[i], max_symbols.data())));
  for (size_t i = 0; i < v.outputs.size(); ++i)
    out.outputs.push_back(bytes_of(v.outputs[i].dtype, concrete_shape(v, v.raw_output_shapes[i], max_symbols.data())));
  return out;
}

bool valid_guard(const GuardData& g, size_t num_inputs) {
  auto in_range = [&](int i) { return i >= 0 && static_cast<size_t>(i) < num_inputs; };
  return static_cast<uint8_t>(g.kind) <= static_cast<uint8_t>(GuardKind::PaddingMask) &&
         in_range(g.input) && g.dim >= 0 && g.other_dim >= 0 &&
         (g.kind != GuardKind::DimsEqual || in_range(g.other_input)) &&
         static_cast<uint8_t>(g.dtype) <= static_cast<uint8_t>(DType::b8) &&
         (g.kind != GuardKind::DimMultiple || g.value > 0);
}

// `arena_bytes`: of the plan the buffer belongs to (the CPU's or the GPU's).
std::string check_buffer(const BufferData& b, const BundleData& bundle, const VariantData& v, const TensorBytes& bytes,
                         int64_t arena_bytes) {
  auto tensor_size_matches = [&](const std::vector<int64_t>& sizes) {
    return b.index >= 0 && static_cast<size_t>(b.index) < sizes.size() && sizes[static_cast<size_t>(b.index)] == b.size_bytes;
  };
  switch (b.kind) {
    case BufferKind::Input:
      if (v.draws_random && b.index == static_cast<int64_t>(v.inputs.size()))  // the generator state
        return b.size_bytes == 16 ? "" : "random generator buffer is not 16 bytes";
      return tensor_size_matches(bytes.inputs) ? "" : "input buffer does not match its input";
    case BufferKind::Output: {
      if (tensor_size_matches(bytes.outputs)) return "";
      // The new value of an input updated in place (after the outputs).
      const int64_t k = b.index - static_cast<int64_t>(v.outputs.size());
      if (k < 0 || static_cast<size_t>(k) >= v.updated_inputs.size())
        return "output buffer does not match its output";
      const size_t in = static_cast<size_t>(v.updated_inputs[static_cast<size_t>(k)]);
      return bytes.inputs[in] == b.size_bytes ? "" : "output buffer does not match its updated input";
    }
    case BufferKind::Weight:
      if (b.index < 0 || static_cast<size_t>(b.index) >= bundle.weights.size())
        return "weight index out of range";
      return b.size_bytes >= 0 &&
                     static_cast<uint64_t>(b.size_bytes) <=
                         bundle.weights[static_cast<size_t>(b.index)].size
                 ? ""
                 : "weight buffer larger than its weight";
    case BufferKind::Arena:
      if (b.offset < 0 || b.size_bytes < 0 || b.offset % 64 != 0 ||
          b.offset > arena_bytes - b.size_bytes)
        return "arena buffer outside the arena";
      return "";
  }
  return "unknown buffer kind";
}

std::string check_output_nodes(const EntryData& e, size_t num_outputs) {
  const auto& nodes = e.output_nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const OutputNode& n = nodes[i];
    if (static_cast<uint8_t>(n.kind) > static_cast<uint8_t>(OutputNode::Kind::Constant))
      return "unknown output node kind";
    if (n.kind == OutputNode::Kind::Constant && (!n.children.empty() || n.value.empty()))
      return "constant output node without a value, or with children";
    if (n.kind == OutputNode::Kind::Leaf &&
        (n.leaf < 0 || static_cast<size_t>(n.leaf) >= num_outputs))
      return "output leaf out of range";
    for (int c : n.children)
      if (c <= static_cast<int>(i) || static_cast<size_t>(c) >= nodes.size())
        return "output node child out of order";
    if (n.kind == OutputNode::Kind::Dict && n.keys.size() != n.children.size())
      return "dict output node without one key per child";
  }
  return "";
}

bool listed(const BundleData& b, const std::string& path) {
  for (const FileData& f : b.files)
    if (f.path == path) return true;
  return false;
}

std::string check_variant(const BundleData& bundle, const EntryData& e, const VariantData& v) {
  const VariantData& first = e.variants.front();
  if (v.inputs.size() != first.inputs.size() || v.outputs.size() != first.outputs.size())
    return "variants disagree on the number of inputs or outputs";
  const TensorBytes bytes = tensor_bytes(v);
  for (size_t i = 0; i < v.inputs.size(); ++i)
    if (bytes.inputs[i] < 0) return "tensor '" + v.inputs[i].name + "' has an invalid shape";
  for (size_t i = 0; i < v.outputs.size(); ++i)
    if (bytes.outputs[i] < 0) return "tensor '" + v.outputs[i].name + "' has an invalid shape";
  for (const GuardData& g : v.guards)
    if (!valid_guard(g, v.inputs.size())) return "invalid guard '" + g.text + "'";
  for (int32_t i : v.updated_inputs)  // before check_buffer reads the inputs they name
    if (i < 0 || static_cast<size_t>(i) >= v.inputs.size()) return "updated input out of range";
  if (v.arena_bytes < 0 || v.arena_bytes > kMaxBytes) return "invalid arena size";
  for (const BufferData& b : v.buffers)
    if (std::string why = check_buffer(b, bundle, v, bytes, v.arena_bytes); !why.empty()) return why;
  for (const CallData& c : v.calls) {
    if (c.symbol.empty()) return "kernel call without a symbol";
    for (int32_t i : c.buffers)
      if (i < 0 || static_cast<size_t>(i) >= v.buffers.size())
        return "kernel call '" + c.symbol + "' names a buffer out of range";
  }
  if (v.cuda.has_value() != !bundle.cuda_images.empty()) return "a CUDA plan without CUDA images, or the reverse";
  if (v.cuda) {
    const CudaPlanData& cuda = *v.cuda;
    if (cuda.arena_bytes < 0 || cuda.arena_bytes > kMaxBytes) return "invalid CUDA arena size";
    for (const BufferData& b : cuda.buffers)
      if (std::string why = check_buffer(b, bundle, v, bytes, cuda.arena_bytes); !why.empty()) return "CUDA plan: " + why;
    for (const CudaCallData& c : cuda.calls) {
      if (c.symbol.empty()) return "CUDA kernel call without a symbol";
      // Every CUDA kernel aotrace writes is built for blocks of 256 threads (lowering/cuda's
      // kBlock: the PTX computes its thread's index with that constant).
      if (c.block != 256) return "CUDA kernel '" + c.symbol + "' has block size " + std::to_string(c.block) + ", not 256";
      if (!valid_sym_program(c.threads, v.symbols.size())) return "CUDA kernel '" + c.symbol + "' has an invalid thread count";
      for (int32_t i : c.buffers)
        if (i < 0 || static_cast<size_t>(i) >= cuda.buffers.size())
          return "CUDA kernel call '" + c.symbol + "' names a buffer out of range";
    }
  }
  for (const GoldenData& g : v.golden) {
    if (g.inputs.size() != v.inputs.size() + (v.draws_random ? 1 : 0) ||
        g.outputs.size() != v.outputs.size() + v.updated_inputs.size())
      return "golden pair without one file per input and output";
    for (const auto* paths : {&g.inputs, &g.outputs})
      for (const std::string& p : *paths)
        if (!listed(bundle, p)) return "golden file '" + p + "' is not listed in bundle.fb";
  }
  return check_output_nodes(e, v.outputs.size());
}

}  // namespace

// Faster kernel libraries (format 1.2): each a distinct file of the bundle, besides a baseline.
Status validate_cpu_libraries(const std::string& dir, const BundleData& b) {
  const auto& libs = b.cpu_libraries;
  for (size_t i = 1; i < libs.size(); ++i) {
    std::string why;
    if (libs[0].path.empty()) why = "faster CPU libraries without a baseline cpu_library";
    else if (!listed(b, libs[i].path)) why = "CPU library '" + libs[i].path + "' is not listed in bundle.fb";
    for (size_t j = 0; j < i && why.empty(); ++j)
      if (libs[j].path == libs[i].path) why = "CPU library '" + libs[i].path + "' is listed twice";
    if (!why.empty()) return Status(StatusCode::data_loss, "bundle " + dir + " is corrupt: " + why);
  }
  return Status::Ok();
}

// CUDA images (format 1.8): each a distinct file of the bundle.
Status validate_cuda_images(const std::string& dir, const BundleData& b) {
  for (size_t i = 0; i < b.cuda_images.size(); ++i) {
    const CudaImageInfo& image = b.cuda_images[i];
    std::string why;
    if (image.arch.empty() || !listed(b, image.path)) why = "CUDA image '" + image.path + "' is not listed in bundle.fb";
    for (size_t j = 0; j < i && why.empty(); ++j)
      if (b.cuda_images[j].path == image.path) why = "CUDA image '" + image.path + "' is listed twice";
    if (!why.empty()) return Status(StatusCode::data_loss, "bundle " + dir + " is corrupt: " + why);
  }
  return Status::Ok();
}

Status validate_variant(const std::string& dir, const BundleData& bundle, const EntryData& e,
                        const VariantData& v) {
  std::string why = check_variant(bundle, e, v);
  if (why.empty()) return Status::Ok();
  return Status(StatusCode::data_loss, "bundle " + dir + " is corrupt: entry '" + e.name +
                                           "' variant '" + v.name + "': " + why);
}

// Bucketed dims (format 1.7): ascending positive sizes, axes inside every variant's inputs and
// outputs.
Status validate_buckets(const std::string& dir, const EntryData& e) {
  for (const BucketData& b : e.buckets) {
    std::string why;
    if (b.sizes.empty()) why = "no sizes";
    for (size_t i = 0; i < b.sizes.size() && why.empty(); ++i)
      if (b.sizes[i] < 1 || (i > 0 && b.sizes[i] <= b.sizes[i - 1])) why = "sizes not ascending and positive";
    if (b.inputs.empty() && why.empty()) why = "no input axis";
    for (const VariantData& v : e.variants)
      for (auto [axes, infos] : {std::pair{&b.inputs, &v.inputs}, std::pair{&b.outputs, &v.outputs}})
        for (const BucketData::Axis& a : *axes)
          if (why.empty() && (a.index >= infos->size() || a.axis >= (*infos)[a.index].shape.size()))
            why = "an axis outside variant '" + v.name + "'";
    if (!why.empty())
      return Status(StatusCode::data_loss, "bundle " + dir + " is corrupt: entry '" + e.name + "' bucketed dim '" +
                                               b.name + "': " + why);
  }
  return Status::Ok();
}

}  // namespace aotrace::rt
