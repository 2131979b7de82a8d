// BundleSpec → bundle.fb (schema artifacts/schema/bundle.fbs), through the FlatBuffers object
// API. Deterministic: the same spec and files give the same bytes.
#include <algorithm>

#include <flatbuffers/flatbuffers.h>
#include <xxhash.h>

#include "artifacts/runtime/aotrace_kernel_abi.h"
#include "artifacts/writer_private.h"
#include "bundle_generated.h"

namespace aotrace::artifacts {
namespace {

static_assert(static_cast<int>(ir::DType::b8) == static_cast<int>(fb::DType::b8),
              "ir::DType and the schema's DType must have the same order");
static_assert(static_cast<int>(ir::Guard::Kind::PaddingMask) ==
                  static_cast<int>(fb::GuardKind::PaddingMask),
              "ir::Guard::Kind and the schema's GuardKind must have the same order");

fb::DType to_fb(ir::DType d) { return static_cast<fb::DType>(d); }

std::string origin_str(const SourceLoc& loc) { return loc.known() ? loc.str() : std::string(); }

// The postfix program of a size (bundle.fbs SymProgram) over the variant's symbols.
void sym_program(const ir::SymExpr& e, const std::vector<SymbolSpec>& symbols, std::vector<int64_t>& code) {
  const ir::SymNode& n = e.node();
  using Kind = ir::SymNode::Kind;
  switch (n.kind) {
    case Kind::Const: code.insert(code.end(), {0, n.value}); return;
    case Kind::Symbol: {
      for (size_t i = 0; i < symbols.size(); ++i)
        if (symbols[i].name == n.name) {
          code.insert(code.end(), {1, static_cast<int64_t>(i)});
          return;
        }
      internal_error("size " + e.str() + " uses symbol " + n.name + ", which no input binds");
    }
    default: break;
  }
  const int64_t op = n.kind == Kind::Add ? 2 : n.kind == Kind::Mul ? 3 : n.kind == Kind::FloorDiv ? 4
                   : n.kind == Kind::Mod ? 5 : n.kind == Kind::Min ? 6 : 7;
  sym_program(n.args[0], symbols, code);
  for (size_t i = 1; i < n.args.size(); ++i) {
    sym_program(n.args[i], symbols, code);
    code.insert(code.end(), {op, 0});
  }
}

std::unique_ptr<fb::TensorInfoT> tensor_info(const TensorSpec& t, const VariantSpec& v, fb::VariantT& table) {
  auto info = std::make_unique<fb::TensorInfoT>();
  info->name = t.name;
  info->dtype = to_fb(t.dtype);
  for (const ir::SymExpr& d : t.shape) {
    if (auto c = d.as_constant()) {
      info->shape.push_back(*c);
      continue;
    }
    // A symbolic size: the index of its program (one per distinct expression) as -1 - k.
    const std::string text = d.str();
    size_t k = 0;
    while (k < table.dim_exprs.size() && table.dim_exprs[k]->text != text) ++k;
    if (k == table.dim_exprs.size()) {
      auto p = std::make_unique<fb::SymProgramT>();
      sym_program(d, v.symbols, p->code);
      p->text = text;
      table.dim_exprs.push_back(std::move(p));
    }
    info->shape.push_back(-1 - static_cast<int64_t>(k));
  }
  info->source = t.source;
  return info;
}

std::unique_ptr<fb::GuardT> guard_table(const ir::Guard& g) {
  auto t = std::make_unique<fb::GuardT>();
  t->kind = static_cast<fb::GuardKind>(g.kind);
  t->input = g.input;
  t->dim = g.dim;
  t->value = g.value;
  t->value2 = g.value2;
  t->other_input = g.other_input;
  t->other_dim = g.other_dim;
  t->dtype = to_fb(g.dtype);
  t->device = g.device.kind == ir::Device::Kind::cpu ? fb::DeviceKind::cpu : fb::DeviceKind::cuda;
  t->device_index = g.device.index;
  t->source = g.source;
  t->text = g.str();
  t->origin = origin_str(g.origin);
  t->scalar = g.scalar;
  t->symbol = g.symbol;
  return t;
}

// Appends `tree` and its subtrees in preorder; returns the index of `tree`'s node.
int32_t flatten_output_tree(const ir::OutputTree& tree,
                            std::vector<std::unique_ptr<fb::OutputNodeT>>& nodes) {
  auto node = std::make_unique<fb::OutputNodeT>();
  node->kind = static_cast<fb::OutputKind>(tree.kind);
  node->leaf = tree.leaf;
  node->keys = tree.keys;
  node->value = tree.value;
  int32_t me = static_cast<int32_t>(nodes.size());
  nodes.push_back(std::move(node));
  for (const ir::OutputTree& child : tree.children) {
    int32_t c = flatten_output_tree(child, nodes);
    nodes[static_cast<size_t>(me)]->children.push_back(c);
  }
  return me;
}

std::unique_ptr<fb::PlanT> plan_table(const ir::ExecutionPlan& plan, const std::vector<SymbolSpec>& symbols) {
  auto t = std::make_unique<fb::PlanT>();
  for (const ir::PlanBuffer& b : plan.buffers)
    t->buffers.emplace_back(static_cast<fb::BufferKind>(b.kind), b.index, b.offset, b.size_bytes);
  for (const ir::KernelCall& c : plan.calls) {
    auto call = std::make_unique<fb::KernelCallT>();
    call->symbol = c.symbol;
    call->buffers = c.buffers;
    call->what = c.what;
    if (c.block > 0) {  // a CUDA launch
      call->threads = std::make_unique<fb::SymProgramT>();
      sym_program(c.threads, symbols, call->threads->code);
      call->threads->text = c.threads.str();
      call->block = c.block;
    }
    t->calls.push_back(std::move(call));
  }
  t->arena_bytes = plan.arena_bytes;
  t->arena_bytes_at_min = plan.arena_bytes_at_min;
  return t;
}

std::unique_ptr<fb::VariantT> variant_table(const std::string& entry, const VariantSpec& v) {
  auto t = std::make_unique<fb::VariantT>();
  t->name = v.name;
  t->profiles = v.profiles;
  for (const SymbolSpec& sym : v.symbols) {
    auto st = std::make_unique<fb::SymbolT>();
    st->name = sym.name;
    st->input = sym.input;
    st->dim = sym.dim;
    st->min = sym.range.min;
    st->max = sym.range.max;
    st->multiple_of = sym.range.multiple_of;
    t->symbols.push_back(std::move(st));
  }
  for (const TensorSpec& in : v.inputs) t->inputs.push_back(tensor_info(in, v, *t));
  for (const TensorSpec& out : v.outputs) t->outputs.push_back(tensor_info(out, v, *t));
  t->output_tree = v.output_tree.str();
  flatten_output_tree(v.output_tree, t->output_nodes);
  for (const ir::Guard& g : v.guards) t->guards.push_back(guard_table(g));
  for (const ir::Assumption& a : v.assumptions) {
    auto at = std::make_unique<fb::AssumptionT>();
    at->text = a.text;
    at->origin = origin_str(a.origin);
    t->assumptions.push_back(std::move(at));
  }
  t->plan = plan_table(v.plan, v.symbols);
  if (v.cuda_plan) t->cuda_plan = plan_table(*v.cuda_plan, v.symbols);
  t->input_updates = v.updated_inputs;
  t->draws_random = v.draws_random;
  for (size_t k = 0; k < v.golden.size(); ++k) {
    auto g = std::make_unique<fb::GoldenPairT>();
    for (size_t i = 0; i < v.golden[k].inputs.size(); ++i)
      g->inputs.push_back(golden_path(entry, v.name, k, "in", i));
    for (size_t i = 0; i < v.golden[k].outputs.size(); ++i)
      g->outputs.push_back(golden_path(entry, v.name, k, "out", i));
    t->golden.push_back(std::move(g));
  }
  return t;
}

}  // namespace

std::vector<uint8_t> build_bundle_fb(const BundleSpec& spec, const std::vector<FileRecord>& files,
                                     const std::vector<WeightPlacement>& placements,
                                     const std::string& cpu_library) {
  fb::BundleT b;
  b.format_major = kBundleFormatMajor;
  b.format_minor = kBundleFormatMinor;
  b.kernel_abi_version = AOTRACE_KERNEL_ABI_VERSION;
  b.name = spec.name;
  b.tool_version = std::string("aotrace ") + AOTRACE_VERSION;
  b.toolchain = spec.toolchain;
  b.triple = spec.triple;
  b.cpu_library = cpu_library;
  for (const FileRecord& f : files) {
    auto t = std::make_unique<fb::FileInfoT>();
    t->path = f.path;
    t->size = f.size;
    t->xxh3 = f.xxh3;
    b.files.push_back(std::move(t));
  }
  for (size_t i = 0; i < spec.weights.size(); ++i) {
    auto t = std::make_unique<fb::WeightInfoT>();
    t->name = spec.weights[i].name;
    t->dtype = to_fb(spec.weights[i].dtype);
    t->shape = spec.weights[i].shape;
    t->offset = placements[i].offset;
    t->size = placements[i].size;
    b.weights.push_back(std::move(t));
  }
  for (const EntrySpec& e : spec.entries) {
    auto t = std::make_unique<fb::EntryT>();
    t->name = e.name;
    // Runtimes before format 1.3 cannot read constants in the output tree, nor before 1.4
    // write updated inputs back, nor before 1.8 run CUDA kernels: they refuse the bundle naming
    // the feature, while bundles without them stay readable to them.
    auto require = [&](const char* feature) {
      if (std::find(b.required_features.begin(), b.required_features.end(), feature) == b.required_features.end())
        b.required_features.push_back(feature);
    };
    for (const VariantSpec& v : e.variants) {
      t->variants.push_back(variant_table(e.name, v));
      for (const auto& node : t->variants.back()->output_nodes)
        if (node->kind == fb::OutputKind::Constant) require("output-constants");
      if (!v.updated_inputs.empty()) require("input-updates");
      if (v.draws_random) require("random");
      if (!v.symbols.empty()) require("dynamic-dims");
      for (const ir::Guard& g : v.guards)
        if (g.kind == ir::Guard::Kind::ValueEq) require("scalar-inputs");
        else if (g.kind == ir::Guard::Kind::PaddingMask) require("value-guards");
        else if (g.kind == ir::Guard::Kind::Device && g.device.kind == ir::Device::Kind::cuda)
          require("cuda-inputs");  // an older runtime would hold the guard on the CPU too
    }
    for (const BucketSpec& bs : e.buckets) {
      auto d = std::make_unique<fb::BucketedDimT>();
      d->name = bs.dim;
      d->sizes = bs.sizes;
      for (const auto* side : {&bs.inputs, &bs.outputs})
        for (const BucketSpec::Axis& a : *side) {
          auto axis = std::make_unique<fb::BucketAxisT>();
          axis->index = a.index;
          axis->axis = a.axis;
          axis->pad = a.pad;
          (side == &bs.inputs ? d->inputs : d->outputs).push_back(std::move(axis));
        }
      t->buckets.push_back(std::move(d));
    }
    if (!e.buckets.empty()) require("padding-buckets");
    b.entries.push_back(std::move(t));
  }
  // A CUDA-only bundle: an older runtime would find no CPU kernels to run.
  if (!spec.cuda_images.empty() && spec.cpu_library.empty()) b.required_features.push_back("cuda");
  b.cpu = spec.cpu;
  b.required_cpu_features = spec.cpu_features;
  for (const CpuLibrarySpec& l : spec.faster_cpu_libraries) {
    auto t = std::make_unique<fb::CpuLibraryT>();
    t->path = faster_cpu_library_path(spec.triple, l.cpu);
    t->cpu = l.cpu;
    t->required_cpu_features = l.cpu_features;
    b.faster_cpu_libraries.push_back(std::move(t));
  }
  for (const CudaImageSpec& image : spec.cuda_images) {
    auto t = std::make_unique<fb::CudaImageT>();
    t->path = cuda_image_path(image);
    t->arch = image.arch;
    t->ptx = image.ptx;
    b.cuda_images.push_back(std::move(t));
  }
  b.cuda_math = spec.cuda_math;
  // A 1.8 runtime would run these kernels but hold their golden vectors to f32's tolerance (its
  // selftest would report a good bundle as failing): it refuses the bundle by name instead.
  if (!spec.cuda_math.empty()) b.required_features.push_back("cuda-math");
  flatbuffers::FlatBufferBuilder builder;
  builder.ForceDefaults(true);  // every scalar present, so tools can patch any of them in place
  fb::FinishBundleBuffer(builder, fb::Bundle::Pack(builder, &b));
  std::vector<uint8_t> out(builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize());
  uint64_t hash = XXH3_64bits(out.data(), out.size());
  out.insert(out.end(), kBundleFooterMagic, kBundleFooterMagic + 8);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(hash >> (8 * i)));
  return out;
}

}  // namespace aotrace::artifacts
