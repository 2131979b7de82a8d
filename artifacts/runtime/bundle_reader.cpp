// Reads bundle.fb into BundleData: verifier first, then version and features, then every field,
// then the consistency checks that make a hostile bundle an error instead of a crash.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bundle_data.h"
#include "bundle_generated.h"

namespace aotrace::rt {
namespace {

Status corrupt(const std::string& dir, const std::string& what) {
  return Status(StatusCode::data_loss, "bundle " + dir + " is corrupt: " + what);
}

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::vector<std::string> strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v) for (const auto* s : *v) out.push_back(str(s));
  return out;
}

std::vector<int64_t> longs(const flatbuffers::Vector<int64_t>* v) {
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>();
}

bool valid_dtype(fb::DType d) { return static_cast<uint8_t>(d) <= static_cast<uint8_t>(fb::DType::b8); }

Status check_version(const std::string& dir, const std::vector<uint8_t>& buf) {
  flatbuffers::Verifier probe_verifier(buf.data(), buf.size());
  if (!probe_verifier.VerifyBuffer<fb::BundleVersionProbe>(fb::BundleIdentifier()))
    return corrupt(dir, "bundle.fb is not an aotrace bundle (bad identifier or header)");
  const auto* probe = flatbuffers::GetRoot<fb::BundleVersionProbe>(buf.data());
  uint32_t major = probe->format_major(), minor = probe->format_minor();
  if (major > kFormatMajor)
    return Status(StatusCode::unsupported,
                  "bundle " + dir + " has format version " + std::to_string(major) + "." +
                      std::to_string(minor) + ", this runtime reads format version " +
                      std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor) +
                      " and older minors of major " + std::to_string(kFormatMajor) +
                      ": rebuild the runtime from the bundle's runtime/ folder");
  if (major < kFormatMajor)
    return Status(StatusCode::unsupported,
                  "bundle " + dir + " has format version " + std::to_string(major) + "." +
                      std::to_string(minor) + ", older than this runtime's major version " +
                      std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor));
  return Status::Ok();
}

constexpr char kFooterMagic[8] = {'A', 'O', 'T', 'B', 'X', 'X', 'H', '3'};
constexpr size_t kFooterSize = 16;

// Removes the footer (magic + XXH3 of the rest, format 1.1 on) from `buf`; its hash.
std::optional<uint64_t> strip_footer(std::vector<uint8_t>& buf) {
  if (buf.size() < kFooterSize || std::memcmp(buf.data() + buf.size() - kFooterSize, kFooterMagic, 8) != 0)
    return std::nullopt;
  uint64_t h = 0;
  for (int i = 0; i < 8; ++i) h |= uint64_t{buf[buf.size() - 8 + i]} << (8 * i);
  buf.resize(buf.size() - kFooterSize);
  return h;
}

// From format 1.1 on, bundle.fb carries a checksum: any changed byte is an error, even one the
// FlatBuffers verifier cannot notice (a string's content, a scalar).
Status check_footer(const std::string& dir, const std::vector<uint8_t>& buf,
                    std::optional<uint64_t> footer_hash) {
  const auto* probe = flatbuffers::GetRoot<fb::BundleVersionProbe>(buf.data());
  bool needs_footer = probe->format_major() > 1 || probe->format_minor() >= 1;
  if (!footer_hash)
    return needs_footer ? corrupt(dir, "bundle.fb lost its checksum footer (truncated?)") : Status::Ok();
  if (XXH3_64bits(buf.data(), buf.size()) != *footer_hash)
    return corrupt(dir, "bundle.fb does not match its checksum");
  return Status::Ok();
}

Status check_features(const std::string& dir, const fb::Bundle& b) {
  std::vector<std::string> known = known_features();
  for (const std::string& f : strings(b.required_features()))
    if (std::find(known.begin(), known.end(), f) == known.end())
      return Status(StatusCode::unsupported,
                    "bundle " + dir + " (format " + std::to_string(b.format_major()) + "." +
                        std::to_string(b.format_minor()) + ") requires feature '" + f +
                        "', unknown to this runtime (format " + std::to_string(kFormatMajor) +
                        "." + std::to_string(kFormatMinor) + ")");
  if (b.kernel_abi_version() != AOTRACE_KERNEL_ABI_VERSION)
    return Status(StatusCode::unsupported,
                  "bundle " + dir + " has kernel ABI version " +
                      std::to_string(b.kernel_abi_version()) + ", this runtime supports " +
                      std::to_string(AOTRACE_KERNEL_ABI_VERSION));
  return Status::Ok();
}

std::vector<TensorInfo> read_tensors(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>>* v,
                                     bool* ok) {
  std::vector<TensorInfo> out;
  if (!v) return out;
  for (const auto* t : *v) {
    if (!valid_dtype(t->dtype())) *ok = false;
    out.push_back({str(t->name()), static_cast<DType>(t->dtype()), longs(t->shape()),
                   str(t->source())});
  }
  return out;
}

GuardData read_guard(const fb::Guard& g) {
  GuardData d;
  d.kind = static_cast<GuardKind>(g.kind());
  d.input = g.input();
  d.dim = g.dim();
  d.value = g.value();
  d.value2 = g.value2();
  d.other_input = g.other_input();
  d.other_dim = g.other_dim();
  d.dtype = static_cast<DType>(g.dtype());
  d.device = static_cast<DeviceKind>(g.device());
  d.text = str(g.text());
  d.origin = str(g.origin());
  d.scalar = g.scalar();
  d.symbol = str(g.symbol());
  return d;
}

// The dynamic dims of `v` (format 1.5), checked so that running can never read out of range:
// every program well-formed over the symbols, every shape code naming a program, every symbol
// read from a dim that exists.
bool read_dynamic_dims(const fb::Variant& v, VariantData& d) {
  if (v.symbols())
    for (const auto* sym : *v.symbols())
      d.symbols.push_back({str(sym->name()), static_cast<size_t>(std::max(0, sym->input())),
                           static_cast<size_t>(std::max(0, sym->dim())), sym->min(), sym->max(),
                           std::max<int64_t>(1, sym->multiple_of())});
  if (v.dim_exprs())
    for (const auto* p : *v.dim_exprs()) {
      std::vector<int64_t> code = longs(p->code());
      if (!valid_sym_program(code, d.symbols.size())) return false;
      d.dim_exprs.push_back(std::move(code));
    }
  for (const SymbolData& sym : d.symbols)
    if (sym.input >= d.inputs.size() || sym.dim >= d.inputs[sym.input].shape.size() ||
        d.inputs[sym.input].shape[sym.dim] >= 0)
      return false;
  auto resolve = [&](std::vector<TensorInfo>& infos, std::vector<std::vector<int64_t>>& raw) {
    for (TensorInfo& t : infos) {
      raw.push_back(t.shape);
      t.dims.assign(t.shape.size(), "");
      for (size_t k = 0; k < t.shape.size(); ++k) {
        if (t.shape[k] >= 0) continue;
        const uint64_t e = static_cast<uint64_t>(-(t.shape[k] + 1));
        if (e >= d.dim_exprs.size()) return false;
        t.dims[k] = str(v.dim_exprs()->Get(static_cast<flatbuffers::uoffset_t>(e))->text());
        t.shape[k] = -1;
      }
    }
    return true;
  };
  return resolve(d.inputs, d.raw_input_shapes) && resolve(d.outputs, d.raw_output_shapes);
}

std::vector<OutputNode> read_output_nodes(const fb::Variant& v) {
  std::vector<OutputNode> out;
  if (!v.output_nodes()) return out;
  for (const auto* n : *v.output_nodes()) {
    OutputNode node;
    node.kind = static_cast<OutputNode::Kind>(n->kind());
    node.leaf = n->leaf();
    if (n->children()) node.children.assign(n->children()->begin(), n->children()->end());
    node.keys = strings(n->keys());
    node.value = str(n->value());
    out.push_back(std::move(node));
  }
  return out;
}

std::vector<BufferData> read_buffers(const fb::Plan& plan) {
  std::vector<BufferData> out;
  if (plan.buffers())
    for (const auto* b : *plan.buffers())
      out.push_back({static_cast<BufferKind>(b->kind()), b->index(), b->offset(), b->size_bytes()});
  return out;
}

VariantData read_variant(const fb::Variant& v, bool* ok) {
  VariantData d;
  d.name = str(v.name());
  d.profiles = strings(v.profiles());
  d.inputs = read_tensors(v.inputs(), ok);
  d.outputs = read_tensors(v.outputs(), ok);
  if (v.guards())
    for (const auto* g : *v.guards()) d.guards.push_back(read_guard(*g));
  if (const auto* plan = v.plan()) {
    d.buffers = read_buffers(*plan);
    if (plan->calls())
      for (const auto* c : *plan->calls()) {
        CallData call;
        call.symbol = str(c->symbol());
        call.what = str(c->what());
        if (c->buffers()) call.buffers.assign(c->buffers()->begin(), c->buffers()->end());
        d.calls.push_back(std::move(call));
      }
    d.arena_bytes = plan->arena_bytes();
    d.arena_bytes_at_min = plan->arena_bytes_at_min() > 0 ? plan->arena_bytes_at_min() : d.arena_bytes;
  }
  if (const auto* plan = v.cuda_plan()) {
    CudaPlanData& cuda = d.cuda.emplace();
    cuda.buffers = read_buffers(*plan);
    if (plan->calls())
      for (const auto* c : *plan->calls()) {
        CudaCallData call;
        call.symbol = str(c->symbol());
        call.what = str(c->what());
        if (c->buffers()) call.buffers.assign(c->buffers()->begin(), c->buffers()->end());
        if (c->threads()) call.threads = longs(c->threads()->code());
        call.block = c->block();
        cuda.calls.push_back(std::move(call));
      }
    cuda.arena_bytes = plan->arena_bytes();
  }
  if (v.assumptions())
    for (const auto* a : *v.assumptions()) d.assumptions.push_back({str(a->text()), str(a->origin())});
  if (v.golden())
    for (const auto* g : *v.golden()) d.golden.push_back({strings(g->inputs()), strings(g->outputs())});
  if (v.input_updates()) d.updated_inputs.assign(v.input_updates()->begin(), v.input_updates()->end());
  d.draws_random = v.draws_random();
  if (!read_dynamic_dims(v, d)) *ok = false;
  return d;
}

}  // namespace

bool valid_sym_program(const std::vector<int64_t>& code, size_t num_symbols) {
  size_t depth = 0;
  if (code.size() % 2 != 0) return false;
  for (size_t i = 0; i < code.size(); i += 2) {
    const int64_t op = code[i], arg = code[i + 1];
    if (op == 0 || op == 1) {
      if (op == 1 && (arg < 0 || static_cast<size_t>(arg) >= num_symbols)) return false;
      if (++depth > kMaxSymStack) return false;
    } else if (op >= 2 && op <= 7) {
      if (depth < 2) return false;
      --depth;
    } else {
      return false;
    }
  }
  return depth == 1;
}

Status validate_variant(const std::string& dir, const BundleData& b, const EntryData& e,
                        const VariantData& v);
Status validate_cpu_libraries(const std::string& dir, const BundleData& b);
Status validate_cuda_images(const std::string& dir, const BundleData& b);
Status validate_buckets(const std::string& dir, const EntryData& e);

Result<std::shared_ptr<BundleData>> read_bundle_fb(const std::string& dir,
                                                   const OpenOptions& /*options*/) {
  std::ifstream in(dir + "/bundle.fb", std::ios::binary);
  if (!in)
    return Status(StatusCode::not_found, "cannot open " + dir + "/bundle.fb: not a bundle directory");
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_bundle_fb(dir, std::move(buf));
}

Result<BundleInfo> read_bundle_info(const std::string& dir) {
  Result<std::shared_ptr<BundleData>> read = read_bundle_fb(dir, OpenOptions{});
  if (!read.ok()) return read.status();
  const BundleData& b = **read;
  BundleInfo info{b.dir, b.name, b.tool_version, b.toolchain, b.triple, b.format_major, b.format_minor,
                  b.kernel_abi_version, b.required_features, b.cpu_libraries, {}, b.weights, b.files, {}, b.cuda_math};
  for (const EntryData& e : b.entries) {
    EntryInfo& entry = info.entries.emplace_back(EntryInfo{e.name, e.output_tree, {}, e.buckets});
    for (const VariantData& v : e.variants) {
      VariantInfo& vi = entry.variants.emplace_back();
      vi.name = v.name;
      vi.profiles = v.profiles;
      vi.inputs = v.inputs;
      vi.outputs = v.outputs;
      vi.updated_inputs = v.updated_inputs;
      for (const GuardData& g : v.guards) vi.guards.push_back({g.text, g.origin});
      vi.assumptions = v.assumptions;
      for (const CallData& c : v.calls) vi.kernels.push_back(c.symbol);
      vi.arena_bytes = v.arena_bytes;
      vi.arena_bytes_at_min = v.arena_bytes_at_min;
      vi.golden_pairs = v.golden.size();
      vi.dynamic_dims = v.symbols;
      if (v.cuda) {
        for (const CudaCallData& c : v.cuda->calls) vi.cuda_kernels.push_back(c.symbol);
        vi.cuda_arena_bytes = v.cuda->arena_bytes;
      }
    }
  }
  info.cuda_images = b.cuda_images;
  return info;
}

Result<std::shared_ptr<BundleData>> parse_bundle_fb(const std::string& dir, std::vector<uint8_t> buf) {
  std::optional<uint64_t> footer_hash = strip_footer(buf);
  if (Status s = check_version(dir, buf); !s.ok()) return s;
  if (Status s = check_footer(dir, buf, footer_hash); !s.ok()) return s;
  flatbuffers::Verifier verifier(buf.data(), buf.size());
  if (!fb::VerifyBundleBuffer(verifier)) return corrupt(dir, "bundle.fb fails verification");
  const fb::Bundle& fbb = *fb::GetBundle(buf.data());
  if (Status s = check_features(dir, fbb); !s.ok()) return s;

  auto data = std::make_shared<BundleData>();
  data->dir = dir;
  data->name = str(fbb.name());
  data->tool_version = str(fbb.tool_version());
  data->toolchain = str(fbb.toolchain());
  data->triple = str(fbb.triple());
  data->format_major = fbb.format_major();
  data->format_minor = fbb.format_minor();
  data->kernel_abi_version = fbb.kernel_abi_version();
  data->required_features = strings(fbb.required_features());
  data->cpu_libraries.push_back({str(fbb.cpu_library()), str(fbb.cpu()), strings(fbb.required_cpu_features())});
  if (fbb.faster_cpu_libraries())
    for (const auto* l : *fbb.faster_cpu_libraries())
      data->cpu_libraries.push_back({str(l->path()), str(l->cpu()), strings(l->required_cpu_features())});
  if (fbb.cuda_images())
    for (const auto* image : *fbb.cuda_images())
      data->cuda_images.push_back({str(image->path()), str(image->arch()), image->ptx()});
  data->cuda_math = str(fbb.cuda_math());
  if (fbb.files())
    for (const auto* f : *fbb.files()) data->files.push_back({str(f->path()), f->size(), f->xxh3()});
  bool ok = true;
  if (fbb.weights())
    for (const auto* w : *fbb.weights()) {
      if (!valid_dtype(w->dtype())) ok = false;
      data->weights.push_back({str(w->name()), static_cast<DType>(w->dtype()), longs(w->shape()),
                               w->offset(), w->size()});
    }
  if (fbb.entries())
    for (const auto* e : *fbb.entries()) {
      EntryData entry;
      entry.name = str(e->name());
      if (e->variants())
        for (const auto* v : *e->variants()) entry.variants.push_back(read_variant(*v, &ok));
      if (e->variants() && e->variants()->size() > 0) {
        entry.output_tree = str(e->variants()->Get(0)->output_tree());
        entry.output_nodes = read_output_nodes(*e->variants()->Get(0));
      }
      if (e->buckets())
        for (const auto* d : *e->buckets()) {
          BucketData bucket;
          bucket.name = str(d->name());
          bucket.sizes = longs(d->sizes());
          for (auto [from, to] : {std::pair{d->inputs(), &bucket.inputs}, std::pair{d->outputs(), &bucket.outputs}})
            if (from)
              for (const auto* a : *from)  // a negative index or axis wraps: validate_buckets refuses it
                to->push_back({static_cast<size_t>(a->index()), static_cast<size_t>(a->axis()), a->pad()});
          entry.buckets.push_back(std::move(bucket));
        }
      data->entries.push_back(std::move(entry));
    }
  if (!ok) return corrupt(dir, "unknown dtype in bundle.fb");
  if (Status s = validate_cpu_libraries(dir, *data); !s.ok()) return s;
  if (Status s = validate_cuda_images(dir, *data); !s.ok()) return s;
  for (const EntryData& e : data->entries) {
    if (e.variants.empty()) return corrupt(dir, "entry '" + e.name + "' has no variants");
    for (const VariantData& v : e.variants)
      if (Status s = validate_variant(dir, *data, e, v); !s.ok()) return s;
    if (Status s = validate_buckets(dir, e); !s.ok()) return s;
  }
  return data;
}

}  // namespace aotrace::rt
