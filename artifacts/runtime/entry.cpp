// Entry: variant selection and running a variant's plan (DESIGN §5).
#include <chrono>
#include <cstring>

#include "bundle_data.h"

namespace aotrace::rt {
namespace {

Status invalid(const std::string& msg) { return Status(StatusCode::invalid_argument, msg); }

// After the guards chose `v`: each tensor must be exactly what the variant was compiled for
// (dynamic dims: the sizes `symbols` give).
Status check_tensors(const EntryData& e, const VariantData& v, const std::vector<TensorInfo>& infos,
                     const std::vector<std::vector<int64_t>>& raw, const int64_t* symbols,
                     const std::vector<TensorRef>& tensors, const char* role, bool on_gpu) {
  if (tensors.size() != infos.size())
    return invalid("entry '" + e.name + "' has " + std::to_string(infos.size()) + " " + role +
                   "s, got " + std::to_string(tensors.size()));
  for (size_t i = 0; i < infos.size(); ++i) {
    const TensorInfo& info = infos[i];
    const TensorRef& t = tensors[i];
    bool same_shape = t.shape.size() == raw[i].size();
    for (size_t d = 0; same_shape && d < raw[i].size(); ++d) same_shape = t.shape[d] == dim_size(v, raw[i][d], symbols);
    if (t.dtype != info.dtype || !same_shape || !t.is_contiguous() || (t.device == DeviceKind::cuda && !on_gpu))
      return invalid("variant " + v.name + " of entry '" + e.name + "' needs " + role + " '" +
                     info.name + "' as a contiguous " + (on_gpu ? "" : "cpu ") + dtype_name(info.dtype) +
                     " tensor of shape " + shape_str(concrete_shape(v, raw[i], symbols)) + ", got " +
                     dtype_name(t.dtype) + " " + shape_str(t.shape) +
                     (t.device == DeviceKind::cuda && !on_gpu
                          ? " on cuda (the bundle was opened for the CPU: open it with OpenOptions::device = cuda)"
                          : ""));
    if (t.device == DeviceKind::cuda && reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
      return invalid(std::string(role) + " '" + info.name + "' of entry '" + e.name +
                     "' is GPU memory aligned to less than 16 bytes; the kernels need 16 (cuMemAlloc gives 256)");
    if (!t.data && t.nbytes() > 0)
      return invalid(std::string(role) + " '" + info.name + "' of entry '" + e.name + "' has no data");
  }
  return Status::Ok();
}

// The kernels write an output while later ones still read the inputs, and their code assumes
// that a buffer it writes shares no memory with one it reads (the compiler's alias scopes): an
// output buffer that overlaps an input or another output is refused, not silently miscomputed.
Status check_disjoint(const EntryData& e, const VariantData& v, const std::vector<TensorRef>& inputs,
                      const std::vector<TensorRef>& outputs) {
  auto overlap = [](const TensorRef& x, const TensorRef& y) {
    auto lo_x = reinterpret_cast<uintptr_t>(x.data), lo_y = reinterpret_cast<uintptr_t>(y.data);
    return x.device == y.device && x.nbytes() > 0 && y.nbytes() > 0 && lo_x < lo_y + y.nbytes() &&
           lo_y < lo_x + x.nbytes();
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    auto refuse = [&](const std::string& other) {
      return invalid("output '" + v.outputs[o].name + "' of entry '" + e.name + "' overlaps " + other +
                     " in memory: the kernels write the outputs while they still read the inputs; give each "
                     "output a buffer of its own");
    };
    for (size_t i = 0; i < inputs.size(); ++i)
      if (overlap(outputs[o], inputs[i])) return refuse("input '" + v.inputs[i].name + "'");
    for (size_t p = 0; p < o; ++p)
      if (overlap(outputs[o], outputs[p])) return refuse("output '" + v.outputs[p].name + "'");
  }
  return Status::Ok();
}

void* buffer_pointer(const BundleData& b, uint8_t* arena, const BufferData& buf,
                     const std::vector<TensorRef>& inputs, const std::vector<TensorRef>& outputs,
                     const int64_t* rng) {
  size_t index = static_cast<size_t>(buf.index);
  switch (buf.kind) {
    case BufferKind::Input: return index == inputs.size() ? const_cast<int64_t*>(rng) : inputs[index].data;
    case BufferKind::Output: return outputs[index].data;
    case BufferKind::Weight: return const_cast<uint8_t*>(b.weight_ptr(index));
    case BufferKind::Arena: return arena + buf.offset;
  }
  return nullptr;
}

}  // namespace

void bind_symbols(const VariantData& v, const std::vector<TensorRef>& inputs, int64_t* out) {
  for (size_t k = 0; k < v.symbols.size(); ++k) {
    const SymbolData& sym = v.symbols[k];
    out[k] = sym.input < inputs.size() && sym.dim < inputs[sym.input].shape.size() ? inputs[sym.input].shape[sym.dim] : 0;
  }
}

int64_t eval_sym_program(const std::vector<int64_t>& p, const int64_t* symbols) {
  // The reader checked the program: stack depth, symbol indices.
  int64_t stack[kMaxSymStack];
  size_t n = 0;
  for (size_t i = 0; i < p.size(); i += 2) {
    const int64_t op = p[i], arg = p[i + 1];
    if (op == 0) { stack[n++] = arg; continue; }
    if (op == 1) { stack[n++] = symbols[arg]; continue; }
    const int64_t b = stack[--n], a = stack[n - 1];
    int64_t r = 0;
    switch (op) {
      case 2: r = a + b; break;
      case 3: r = a * b; break;
      case 4: case 5: {  // Python's floor division and modulo; 0 for a zero divisor
        if (b == 0) break;
        int64_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        r = op == 4 ? q : a - q * b;
        break;
      }
      case 6: r = a < b ? a : b; break;
      default: r = a > b ? a : b; break;
    }
    stack[n - 1] = r;
  }
  return n > 0 ? stack[0] : 0;
}

int64_t dim_size(const VariantData& v, int64_t code, const int64_t* symbols) {
  if (code >= 0) return code;
  return eval_sym_program(v.dim_exprs[static_cast<size_t>(-(code + 1))], symbols);
}

std::vector<int64_t> concrete_shape(const VariantData& v, const std::vector<int64_t>& codes, const int64_t* symbols) {
  std::vector<int64_t> shape;
  for (int64_t c : codes) shape.push_back(dim_size(v, c, symbols));
  return shape;
}

Status start_thread_pool(BundleData& b, int num_threads) {
  if (num_threads < 0)
    return invalid("num_threads must be 0 (the default) or positive, got " + std::to_string(num_threads));
  b.pool = std::make_unique<ThreadPool>(num_threads > 0 ? num_threads : default_num_threads());
  b.kernel_ctx = b.pool->kernel_ctx();
  return Status::Ok();
}

int Bundle::num_threads() const { return data_->pool ? data_->pool->num_threads() : 1; }

// Runs `v`'s kernels with scratch memory from its slot pool: concurrent runs take different
// slots; a steady state allocates nothing.
Status run_variant(const BundleData& b, const EntryData& e, const VariantData& v,
                   const std::vector<TensorRef>& inputs, const std::vector<TensorRef>& outputs,
                   const int64_t* rng, double* kernel_seconds) {
  // The symbols' values of this call (read from the inputs; the guards checked their ranges).
  int64_t symbols_here[8];
  std::vector<int64_t> symbols_heap;
  int64_t* symbols = symbols_here;
  if (v.symbols.size() > 8) {
    symbols_heap.resize(v.symbols.size());
    symbols = symbols_heap.data();
  }
  bind_symbols(v, inputs, symbols);
  const bool on_gpu = b.cuda != nullptr;
  if (Status s = check_tensors(e, v, v.inputs, v.raw_input_shapes, symbols, inputs, "input", on_gpu); !s.ok()) return s;
  if (Status s = check_tensors(e, v, v.outputs, v.raw_output_shapes, symbols, outputs, "output", on_gpu); !s.ok()) return s;
  if (Status s = check_disjoint(e, v, inputs, outputs); !s.ok()) return s;
  // The generator state of this call: the entry's seed and its next offset.
  int64_t state[2] = {0, 0};
  if (v.draws_random && !rng) {
    state[0] = static_cast<int64_t>(e.rng->seed.load());
    state[1] = static_cast<int64_t>(e.rng->next_offset.fetch_add(1));
    rng = state;
  }
  if (on_gpu) return run_variant_cuda(b, v, inputs, outputs, symbols, rng, kernel_seconds);
  // Inputs updated in place: their new values go to scratch tensors after the outputs, then
  // into the caller's memory once every kernel has run.
  std::vector<Tensor> updated;
  std::vector<TensorRef> all_outputs;
  const std::vector<TensorRef>* plan_outputs = &outputs;
  if (!v.updated_inputs.empty()) {
    all_outputs = outputs;
    for (int32_t i : v.updated_inputs) {
      const TensorInfo& info = v.inputs[static_cast<size_t>(i)];
      updated.emplace_back(info.dtype, inputs[static_cast<size_t>(i)].shape);
      if (!updated.back().data() && updated.back().nbytes() > 0)
        return Status(StatusCode::io_error, "cannot allocate the new value of input '" + info.name + "'");
      all_outputs.push_back(updated.back().ref());
    }
    plan_outputs = &all_outputs;
  }
  std::unique_ptr<RunSlot> slot = v.slots->take();
  if (!slot)
    return Status(StatusCode::io_error, "cannot allocate the arena of variant " + v.name + " (" +
                                            std::to_string(v.arena_bytes) + " bytes)");
  for (size_t i = 0; i < v.buffers.size(); ++i)
    slot->pointers[i] = buffer_pointer(b, slot->arena.get(), v.buffers[i], inputs, *plan_outputs, rng);
  for (size_t c = 0; c < v.calls.size(); ++c) {
    const CallData& call = v.calls[c];
    slot->args.clear();
    for (int32_t i : call.buffers) slot->args.push_back(slot->pointers[static_cast<size_t>(i)]);
    if (!kernel_seconds) {
      call.fn(slot->args.data(), symbols, &b.kernel_ctx);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    call.fn(slot->args.data(), symbols, &b.kernel_ctx);
    kernel_seconds[c] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  v.slots->give_back(std::move(slot));
  for (size_t k = 0; k < updated.size(); ++k)
    if (updated[k].nbytes() > 0)
      std::memcpy(inputs[static_cast<size_t>(v.updated_inputs[k])].data, updated[k].data(), updated[k].nbytes());
  return Status::Ok();
}


const std::string& Entry::name() const { return data_->name; }
size_t Entry::num_inputs() const { return data_->variants.front().inputs.size(); }
size_t Entry::num_outputs() const { return data_->variants.front().outputs.size(); }
size_t Entry::num_variants() const { return data_->variants.size(); }
const std::string& Entry::variant_name(size_t v) const { return data_->variants.at(v).name; }
const std::vector<std::string>& Entry::variant_profiles(size_t v) const { return data_->variants.at(v).profiles; }
const std::vector<TensorInfo>& Entry::inputs(size_t v) const { return data_->variants.at(v).inputs; }
const std::vector<TensorInfo>& Entry::outputs(size_t v) const { return data_->variants.at(v).outputs; }
const std::string& Entry::output_tree() const { return data_->output_tree; }
const std::vector<int32_t>& Entry::updated_inputs(size_t v) const { return data_->variants.at(v).updated_inputs; }

void Entry::manual_seed(uint64_t seed) const {
  data_->rng->seed.store(seed);
  data_->rng->next_offset.store(0);
}

bool Entry::draws_random(size_t v) const { return data_->variants.at(v).draws_random; }

DeviceKind Entry::input_device(size_t v, size_t input) const {
  for (const GuardData& g : data_->variants.at(v).guards)
    if (g.kind == GuardKind::Device && static_cast<size_t>(g.input) == input) return g.device;
  return DeviceKind::cpu;
}

bool Entry::stays_on_host(size_t input) const {
  for (size_t v = 0; v < data_->variants.size(); ++v)
    if (scalar_input(v, input)) return true;
  return false;
}

bool Entry::scalar_input(size_t v, size_t input, double* value) const {
  for (const GuardData& g : data_->variants.at(v).guards)
    if (g.kind == GuardKind::ValueEq && static_cast<size_t>(g.input) == input) {
      if (value) *value = g.scalar;
      return true;
    }
  return false;
}
const std::vector<OutputNode>& Entry::output_nodes() const { return data_->output_nodes; }

std::vector<std::string> Entry::guard_texts(size_t v) const {
  std::vector<std::string> texts;
  for (const GuardData& g : data_->variants.at(v).guards) texts.push_back(g.text);
  return texts;
}

namespace {

// The first variant whose guards all hold for `inputs` (already padded to their buckets).
Result<size_t> select_variant(const EntryData& e, const std::vector<TensorRef>& inputs) {
  if (e.variants.empty()) return invalid("entry '" + e.name + "' has no variants");
  const size_t n = e.variants.front().inputs.size();
  if (inputs.size() != n)
    return invalid("entry '" + e.name + "' takes " + std::to_string(n) + " inputs, got " + std::to_string(inputs.size()));
  for (size_t v = 0; v < e.variants.size(); ++v)
    if (first_failed_guard(e.variants[v].guards, inputs) == e.variants[v].guards.size()) return v;
  // A miss: evaluate again to name the failed guards (no allocation on the hit path).
  std::vector<size_t> failed(e.variants.size());
  for (size_t v = 0; v < e.variants.size(); ++v) failed[v] = first_failed_guard(e.variants[v].guards, inputs);
  return no_variant_status(e, inputs, failed);
}

// The inputs a call runs on: the caller's, or (bucketed dims, format 1.7) copies padded up to
// the buckets, kept in `call`. Entries without buckets pay nothing.
Result<const std::vector<TensorRef>*> call_inputs(const EntryData& e, const std::vector<TensorRef>& inputs,
                                                  BucketedCall& call) {
  if (e.buckets.empty() || e.variants.empty() || inputs.size() != e.variants.front().inputs.size()) return &inputs;
  if (Status s = bucket_call(e, inputs, call); !s.ok()) return s;
  return call.any_padded ? &call.inputs : &inputs;
}

// The outputs of `variant` for these inputs, allocated, and references to them.
Status allocate_outputs(const VariantData& variant, const std::vector<TensorRef>& inputs, std::vector<Tensor>& outputs,
                        std::vector<TensorRef>& refs) {
  std::vector<int64_t> symbols(variant.symbols.size());
  bind_symbols(variant, inputs, symbols.data());
  for (size_t o = 0; o < variant.outputs.size(); ++o) {
    const TensorInfo& info = variant.outputs[o];
    outputs.emplace_back(info.dtype, concrete_shape(variant, variant.raw_output_shapes[o], symbols.data()));
    if (!outputs.back().data())
      return Status(StatusCode::io_error, "cannot allocate output '" + info.name + "'");
    refs.push_back(outputs.back().ref());
  }
  return Status::Ok();
}


// Runs the variant `inputs` select (call_inputs' result for `call`) into outputs allocated here,
// cut back to the call's sizes where `call` padded.
Result<std::vector<Tensor>> run_call(const BundleData& b, const EntryData& e, const std::vector<TensorRef>& inputs,
                                     const BucketedCall& call, size_t* out_variant) {
  Result<size_t> v = select_variant(e, inputs);
  if (!v.ok()) return v.status();
  if (out_variant) *out_variant = *v;
  const VariantData& variant = e.variants[*v];
  std::vector<Tensor> outputs;
  std::vector<TensorRef> refs;
  if (Status s = allocate_outputs(variant, inputs, outputs, refs); !s.ok()) return s;
  if (Status s = run_variant(b, e, variant, inputs, refs); !s.ok()) return s;
  if (Status s = unbucket_outputs(e, call, outputs); !s.ok()) return s;
  return outputs;
}


}  // namespace

Result<size_t> Entry::select(const std::vector<TensorRef>& inputs) const {
  BucketedCall call;
  Result<const std::vector<TensorRef>*> in = call_inputs(*data_, inputs, call);
  if (!in.ok()) return in.status();
  return select_variant(*data_, **in);
}

Status Entry::run_into(const std::vector<TensorRef>& inputs,
                       const std::vector<TensorRef>& outputs) const {
  return run_into(inputs, outputs, nullptr);
}

Status Entry::run_into(const std::vector<TensorRef>& inputs, const std::vector<TensorRef>& outputs,
                       size_t* out_variant) const {
  BucketedCall call;
  Result<const std::vector<TensorRef>*> in = call_inputs(*data_, inputs, call);
  if (!in.ok()) return in.status();
  if (call.any_padded) {
    // A padded call runs into the bucket's outputs, which are cut back into the caller's.
    for (const TensorRef& o : outputs)
      if (o.device != DeviceKind::cpu)
        return invalid("entry '" + data_->name + "' pads this call up to a bucket and cuts its outputs back on the "
                       "host: pass the outputs in host memory, or call at a bucket's size");
    Result<std::vector<Tensor>> r = run_call(*bundle_, *data_, **in, call, out_variant);
    if (!r.ok()) return r.status();
    if (outputs.size() != r->size())
      return invalid("entry '" + data_->name + "' has " + std::to_string(r->size()) + " outputs, got " +
                     std::to_string(outputs.size()) + " buffers");
    for (size_t o = 0; o < outputs.size(); ++o) {
      const Tensor& t = (*r)[o];
      if (outputs[o].shape != t.shape() || outputs[o].dtype != t.dtype() || !outputs[o].is_contiguous())
        return invalid("output " + std::to_string(o) + " is " + dtype_name(t.dtype()) + shape_str(t.shape()) +
                       ": its buffer must be a contiguous tensor of that dtype and shape");
      if (t.nbytes() > 0) std::memcpy(outputs[o].data, t.data(), t.nbytes());
    }
    return Status::Ok();
  }
  Result<size_t> v = select_variant(*data_, inputs);
  if (!v.ok()) return v.status();
  if (out_variant) *out_variant = *v;
  return run_variant(*bundle_, *data_, data_->variants[*v], inputs, outputs);
}

std::vector<Entry::DynamicDim> Entry::dynamic_dims(size_t v) const {
  std::vector<DynamicDim> out;
  for (const SymbolData& s : data_->variants.at(v).symbols)
    out.push_back({s.name, s.min, s.max, s.multiple_of, s.input, s.dim});
  return out;
}

Result<std::vector<std::vector<int64_t>>> Entry::output_shapes(size_t v, const std::vector<TensorRef>& inputs) const {
  const VariantData& variant = data_->variants.at(v);
  if (inputs.size() != variant.inputs.size())
    return invalid("entry '" + data_->name + "' takes " + std::to_string(variant.inputs.size()) + " inputs, got " +
                   std::to_string(inputs.size()));
  for (const SymbolData& s : variant.symbols)
    if (s.dim >= inputs[s.input].shape.size())
      return invalid("input '" + variant.inputs[s.input].name + "' has rank " + std::to_string(inputs[s.input].shape.size()) +
                     ", variant " + variant.name + " reads its dim " + std::to_string(s.dim) + " (" + s.name + ")");
  std::vector<int64_t> symbols(variant.symbols.size());
  bind_symbols(variant, inputs, symbols.data());
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& raw : variant.raw_output_shapes) shapes.push_back(concrete_shape(variant, raw, symbols.data()));
  for (int32_t i : variant.updated_inputs) shapes.push_back(inputs[static_cast<size_t>(i)].shape);
  return shapes;
}


Result<std::vector<Tensor>> Entry::run(const std::vector<TensorRef>& inputs) const { return run(inputs, nullptr); }


Result<std::vector<Tensor>> Entry::run(const std::vector<TensorRef>& inputs, size_t* out_variant) const {
  BucketedCall call;
  Result<const std::vector<TensorRef>*> in = call_inputs(*data_, inputs, call);
  if (!in.ok()) return in.status();
  return run_call(*bundle_, *data_, **in, call, out_variant);
}

Result<std::vector<Entry::KernelTime>> Entry::profile(const std::vector<TensorRef>& inputs, int calls) const {
  if (calls < 1) return invalid("profile needs at least 1 call, got " + std::to_string(calls));
  BucketedCall call;  // a padded call profiles the bucket's variant on the padded inputs
  Result<const std::vector<TensorRef>*> in = call_inputs(*data_, inputs, call);
  if (!in.ok()) return in.status();
  Result<size_t> v = select_variant(*data_, **in);
  if (!v.ok()) return v.status();
  const VariantData& variant = data_->variants[*v];
  std::vector<Tensor> outputs;
  std::vector<TensorRef> refs;
  if (Status s = allocate_outputs(variant, **in, outputs, refs); !s.ok()) return s;
  // Inputs updated in place change between calls, as they would in a loop of real calls.
  if (Status s = run_variant(*bundle_, *data_, variant, **in, refs); !s.ok()) return s;  // warm-up
  // The calls of the plan that runs: the CUDA plan's on a bundle opened for cuda.
  std::vector<std::pair<const std::string*, const std::string*>> names;
  if (bundle_->cuda)
    for (const CudaCallData& c : variant.cuda->calls) names.emplace_back(&c.symbol, &c.what);
  else
    for (const CallData& c : variant.calls) names.emplace_back(&c.symbol, &c.what);
  std::vector<double> seconds(names.size(), 0.0);
  for (int c = 0; c < calls; ++c)
    if (Status s = run_variant(*bundle_, *data_, variant, **in, refs, nullptr, seconds.data()); !s.ok()) return s;
  std::vector<KernelTime> out;
  for (size_t k = 0; k < names.size(); ++k) out.push_back({*names[k].first, *names[k].second, 1e3 * seconds[k] / calls});
  return out;
}

}  // namespace aotrace::rt
