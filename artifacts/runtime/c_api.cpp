// The C API (aotrace_c.h) over the C++ runtime.
#include "aotrace_c.h"

#include <memory>

#include "aotrace_runtime.h"

using namespace aotrace::rt;

struct aotrace_bundle {
  Bundle bundle;
};

struct aotrace_result {
  std::vector<Tensor> outputs;
  size_t variant = 0;
  std::string variant_name;
};

namespace {

thread_local std::string last_error;

int report(const Status& s) {
  last_error = s.message();
  return static_cast<int>(s.code());
}

Status check_dtypes(const aotrace_tensor* tensors, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (tensors[i].dtype < 0 || tensors[i].dtype > static_cast<int>(DType::b8))
      return Status(StatusCode::invalid_argument, "unknown dtype code " + std::to_string(tensors[i].dtype));
  return Status::Ok();
}

std::vector<TensorRef> to_refs(const aotrace_tensor* tensors, size_t n) {
  std::vector<TensorRef> refs(n);
  for (size_t i = 0; i < n; ++i) {
    const aotrace_tensor& t = tensors[i];
    refs[i].dtype = static_cast<DType>(t.dtype);
    refs[i].shape.assign(t.shape, t.shape + (t.rank > 0 ? t.rank : 0));
    refs[i].data = t.data;
  }
  return refs;
}

}  // namespace

extern "C" {

int aotrace_bundle_open(const char* dir, aotrace_bundle** out_bundle) {
  return aotrace_bundle_open_with(dir, 1, out_bundle);
}

int aotrace_bundle_open_with(const char* dir, int verify_hashes, aotrace_bundle** out_bundle) {
  aotrace_open_options options;
  aotrace_open_options_init(&options);
  options.verify_hashes = verify_hashes;
  return aotrace_bundle_open_with_options(dir, &options, out_bundle);
}

void aotrace_open_options_init(aotrace_open_options* options) {
  options->verify_hashes = 1;
  options->num_threads = 0;
  options->device = 0;
}

int aotrace_bundle_open_with_options(const char* dir, const aotrace_open_options* options,
                                     aotrace_bundle** out_bundle) {
  *out_bundle = nullptr;
  OpenOptions o;
  if (options) {
    o.verify_hashes = options->verify_hashes != 0;
    o.num_threads = options->num_threads;
    if (options->device != 0 && options->device != 1)
      return report(Status(StatusCode::invalid_argument, "aotrace_open_options.device is 0 (cpu) or 1 (cuda), got " +
                                                             std::to_string(options->device)));
    o.device = options->device == 1 ? DeviceKind::cuda : DeviceKind::cpu;
  }
  auto b = Bundle::open(dir, o);
  if (!b.ok()) return report(b.status());
  *out_bundle = new aotrace_bundle{std::move(*b)};
  return 0;
}

void aotrace_bundle_close(aotrace_bundle* bundle) { delete bundle; }

int aotrace_bundle_num_threads(const aotrace_bundle* bundle) { return bundle->bundle.num_threads(); }

int aotrace_bundle_selftest(const aotrace_bundle* bundle, size_t* out_checked) {
  size_t checked = 0;
  Status s = bundle->bundle.selftest(&checked);
  if (out_checked) *out_checked = checked;
  return s.ok() ? 0 : report(s);
}

int aotrace_entry_num_outputs(const aotrace_bundle* bundle, const char* entry, size_t* out_count) {
  auto e = bundle->bundle.entry(entry);
  if (!e.ok()) return report(e.status());
  *out_count = e->num_outputs();
  return 0;
}

int aotrace_entry_manual_seed(const aotrace_bundle* bundle, const char* entry, uint64_t seed) {
  auto e = bundle->bundle.entry(entry);
  if (!e.ok()) return report(e.status());
  e->manual_seed(seed);
  return 0;
}

int aotrace_entry_run(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                      size_t num_inputs, const aotrace_tensor* outputs, size_t num_outputs) {
  if (Status s = check_dtypes(inputs, num_inputs); !s.ok()) return report(s);
  if (Status s = check_dtypes(outputs, num_outputs); !s.ok()) return report(s);
  auto e = bundle->bundle.entry(entry);
  if (!e.ok()) return report(e.status());
  Status s = e->run_into(to_refs(inputs, num_inputs), to_refs(outputs, num_outputs));
  return s.ok() ? 0 : report(s);
}

int aotrace_entry_run_device(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                             size_t num_inputs, const aotrace_tensor* outputs, size_t num_outputs) {
  if (Status s = check_dtypes(inputs, num_inputs); !s.ok()) return report(s);
  if (Status s = check_dtypes(outputs, num_outputs); !s.ok()) return report(s);
  auto e = bundle->bundle.entry(entry);
  if (!e.ok()) return report(e.status());
  std::vector<TensorRef> in = to_refs(inputs, num_inputs), out = to_refs(outputs, num_outputs);
  for (TensorRef& t : out) t.device = DeviceKind::cuda;
  for (size_t i = 0; i < in.size(); ++i)
    if (!(in[i].shape.empty() && e->stays_on_host(i))) in[i].device = DeviceKind::cuda;
  Status s = e->run_into(in, out);
  return s.ok() ? 0 : report(s);
}

int aotrace_entry_select(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                         size_t num_inputs, size_t* out_variant, const char** out_name) {
  if (Status s = check_dtypes(inputs, num_inputs); !s.ok()) return report(s);
  auto e = bundle->bundle.entry(entry);
  if (!e.ok()) return report(e.status());
  Result<size_t> v = e->select(to_refs(inputs, num_inputs));
  if (!v.ok()) return report(v.status());
  if (out_variant) *out_variant = *v;
  if (out_name) *out_name = e->variant_name(*v).c_str();  // owned by the bundle's data
  return 0;
}

int aotrace_entry_output_shape(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                               size_t num_inputs, size_t output, int64_t* out_shape, size_t max_rank,
                               size_t* out_rank) {
  if (Status s = check_dtypes(inputs, num_inputs); !s.ok()) return report(s);
  auto e = bundle->bundle.entry(entry);
  if (!e.ok()) return report(e.status());
  const std::vector<TensorRef> refs = to_refs(inputs, num_inputs);
  Result<size_t> v = e->select(refs);
  if (!v.ok()) return report(v.status());
  auto shapes = e->output_shapes(*v, refs);
  if (!shapes.ok()) return report(shapes.status());
  if (output >= e->num_outputs())
    return report(Status(StatusCode::invalid_argument, "entry '" + std::string(entry) + "' has " +
                                                           std::to_string(e->num_outputs()) + " outputs, asked for output " +
                                                           std::to_string(output)));
  const std::vector<int64_t>& shape = (*shapes)[output];
  if (out_rank) *out_rank = shape.size();
  if (shape.size() > max_rank)
    return report(Status(StatusCode::invalid_argument, "output " + std::to_string(output) + " has rank " +
                                                           std::to_string(shape.size()) + ", more than max_rank " +
                                                           std::to_string(max_rank)));
  for (size_t d = 0; d < shape.size(); ++d) out_shape[d] = shape[d];
  return 0;
}

int aotrace_entry_output_dtype(const aotrace_bundle* bundle, const char* entry, size_t variant, size_t output,
                               int* out_dtype) {
  auto e = bundle->bundle.entry(entry);
  if (!e.ok()) return report(e.status());
  if (variant >= e->num_variants())
    return report(Status(StatusCode::invalid_argument, "entry '" + std::string(entry) + "' has " +
                                                           std::to_string(e->num_variants()) + " variants, asked for variant " +
                                                           std::to_string(variant)));
  const std::vector<TensorInfo>& outputs = e->outputs(variant);
  if (output >= outputs.size())
    return report(Status(StatusCode::invalid_argument, "entry '" + std::string(entry) + "' has " +
                                                           std::to_string(outputs.size()) + " outputs, asked for output " +
                                                           std::to_string(output)));
  *out_dtype = static_cast<int>(outputs[output].dtype);
  return 0;
}

int aotrace_entry_call(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                       size_t num_inputs, aotrace_result** out_result) {
  *out_result = nullptr;
  try {  // the runtime returns statuses; only an allocation can throw here
    if (Status s = check_dtypes(inputs, num_inputs); !s.ok()) return report(s);
    auto e = bundle->bundle.entry(entry);
    if (!e.ok()) return report(e.status());
    auto result = std::make_unique<aotrace_result>();
    auto outputs = e->run(to_refs(inputs, num_inputs), &result->variant);
    if (!outputs.ok()) return report(outputs.status());
    result->outputs = std::move(*outputs);
    result->variant_name = e->variant_name(result->variant);
    *out_result = result.release();
    return 0;
  } catch (const std::exception& err) {
    return report(Status(StatusCode::io_error, std::string("aotrace_entry_call: ") + err.what()));
  }
}

void aotrace_result_variant(const aotrace_result* result, size_t* out_variant, const char** out_name) {
  if (out_variant) *out_variant = result->variant;
  if (out_name) *out_name = result->variant_name.c_str();
}

size_t aotrace_result_num_outputs(const aotrace_result* result) { return result->outputs.size(); }

int aotrace_result_output(const aotrace_result* result, size_t output, aotrace_tensor* out_tensor) {
  if (output >= result->outputs.size())
    return report(Status(StatusCode::invalid_argument, "the result has " + std::to_string(result->outputs.size()) +
                                                           " outputs, asked for output " + std::to_string(output)));
  const Tensor& t = result->outputs[output];
  out_tensor->dtype = static_cast<int>(t.dtype());
  out_tensor->rank = static_cast<int>(t.shape().size());
  out_tensor->shape = t.shape().data();
  out_tensor->data = const_cast<void*>(t.data());
  return 0;
}

void aotrace_result_close(aotrace_result* result) { delete result; }

const char* aotrace_last_error(void) { return last_error.c_str(); }

}  // extern "C"
