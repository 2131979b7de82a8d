// Padding buckets (format 1.7, bundle.fbs BucketedDim): a call whose bucketed dim is not one of
// the buckets is padded up to the smallest bucket that holds it, input by input and axis by
// axis with the input's pad value, and the outputs of that bucket's variant are cut back along
// the axes that follow the dim. compile proved for each bucket that the padding leaves the
// valid region of every output as eager computes it (driver/buckets.cpp).
#include <cstring>

#include "bundle_data.h"

namespace aotrace::rt {
namespace {

Status invalid(const std::string& msg) { return Status(StatusCode::invalid_argument, msg); }

// Element strides of `t` (row-major when it has none).
std::vector<int64_t> strides_of(const TensorRef& t) {
  if (!t.strides.empty()) return t.strides;
  std::vector<int64_t> s(t.shape.size(), 1);
  for (size_t d = t.shape.size(); d-- > 1;) s[d - 1] = s[d] * t.shape[d];
  return s;
}

// Copies the `shape` region at the origin of `src` (strides in elements) into `dst`, a
// contiguous tensor at least that big in every dim.
void copy_region(const TensorRef& src, const std::vector<int64_t>& shape, Tensor& dst) {
  for (int64_t d : shape)
    if (d == 0) return;
  const size_t es = dtype_size(src.dtype);
  const std::vector<int64_t> ss = strides_of(src), ds = strides_of(dst.ref());
  const auto* from = static_cast<const uint8_t*>(src.data);
  auto* to = static_cast<uint8_t*>(dst.data());
  const size_t rank = shape.size();
  if (rank == 0) return void(std::memcpy(to, from, es));
  std::vector<int64_t> idx(rank, 0);
  const bool inner_contiguous = ss.back() == 1;
  while (true) {
    int64_t so = 0, dof = 0;
    for (size_t d = 0; d + 1 < rank; ++d) so += idx[d] * ss[d], dof += idx[d] * ds[d];
    if (inner_contiguous) {
      std::memcpy(to + dof * es, from + so * es, static_cast<size_t>(shape.back()) * es);
    } else {
      for (int64_t j = 0; j < shape.back(); ++j) std::memcpy(to + (dof + j) * es, from + (so + j * ss.back()) * es, es);
    }
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// `t` filled with `value` in its dtype.
Status fill(Tensor& t, double value) {
  const size_t es = dtype_size(t.dtype());
  uint8_t bytes[8] = {};
  if (t.dtype() == DType::f16 || t.dtype() == DType::bf16) {
    if (value != 0) return invalid(std::string("a pad value other than 0 for a ") + dtype_name(t.dtype()) + " input");
  } else {
    Result<Tensor> one = scalar_tensor(t.dtype(), value);
    if (!one.ok()) return one.status();
    std::memcpy(bytes, one->data(), es);
  }
  auto* p = static_cast<uint8_t*>(t.data());
  for (int64_t i = 0; i < t.numel(); ++i) std::memcpy(p + static_cast<size_t>(i) * es, bytes, es);
  return Status::Ok();
}

}  // namespace

Status bucket_call(const EntryData& e, const std::vector<TensorRef>& inputs, BucketedCall& call) {
  call.inputs = inputs;
  const std::vector<TensorInfo>& infos = e.variants.front().inputs;
  std::vector<std::vector<int64_t>> shapes;
  for (const TensorRef& t : inputs) shapes.push_back(t.shape);
  std::vector<double> pad(inputs.size(), 0);
  std::vector<bool> grows(inputs.size(), false);
  for (const BucketData& b : e.buckets) {
    int64_t size = -1;
    const BucketData::Axis* first = nullptr;
    for (const BucketData::Axis& a : b.inputs) {
      if (a.index >= inputs.size() || a.axis >= inputs[a.index].shape.size())
        return invalid("input '" + infos[a.index].name + "' has rank " +
                       std::to_string(a.index < inputs.size() ? inputs[a.index].shape.size() : 0) + ", but its dim " +
                       std::to_string(a.axis) + " is the bucketed dim '" + b.name + "'");
      const int64_t n = inputs[a.index].shape[a.axis];
      if (first && n != size)
        return invalid("input '" + infos[a.index].name + "' dim " + std::to_string(a.axis) + " is " + std::to_string(n) +
                       " but input '" + infos[first->index].name + "' dim " + std::to_string(first->axis) + " is " +
                       std::to_string(size) + ": both are the bucketed dim '" + b.name + "' and must agree");
      if (!first) first = &a, size = n;
    }
    int64_t bucket = -1;
    for (int64_t s : b.sizes)
      if (s >= size) {
        bucket = s;
        break;
      }
    if (bucket < 0)
      return invalid("entry '" + e.name + "': dim '" + b.name + "' is " + std::to_string(size) + " (input '" +
                     infos[first->index].name + "' dim " + std::to_string(first->axis) + "), above the last bucket " +
                     std::to_string(b.sizes.back()) + ": no variant takes it; add a bucket of at least " +
                     std::to_string(size) + " to `" + b.name + ": {buckets: [...]}` in the spec, or call with at most " +
                     std::to_string(b.sizes.back()));
    call.sizes.push_back(size);
    call.buckets.push_back(bucket);
    if (bucket == size) continue;
    for (const BucketData::Axis& a : b.inputs) {
      shapes[a.index][a.axis] = bucket;
      pad[a.index] = a.pad;
      grows[a.index] = true;
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!grows[i]) continue;
    if (inputs[i].device != DeviceKind::cpu)
      return invalid("input '" + infos[i].name + "' of entry '" + e.name + "' is in GPU memory and must be padded up to its "
                     "bucket, which the runtime does on the host: pass it in host memory, or at a bucket's size");
    Tensor t(inputs[i].dtype, shapes[i]);
    if (t.numel() > 0 && !t.data()) return Status(StatusCode::io_error, "cannot allocate the padded input '" + infos[i].name + "'");
    if (Status s = fill(t, pad[i]); !s.ok()) return invalid("input '" + infos[i].name + "': " + s.message());
    copy_region(inputs[i], inputs[i].shape, t);
    call.padded.push_back(std::move(t));
    call.inputs[i] = call.padded.back().ref();
    call.any_padded = true;
  }
  return Status::Ok();
}

Status unbucket_outputs(const EntryData& e, const BucketedCall& call, std::vector<Tensor>& outputs) {
  if (!call.any_padded) return Status::Ok();
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& t : outputs) shapes.push_back(t.shape());
  std::vector<bool> cut(outputs.size(), false);
  for (size_t k = 0; k < e.buckets.size(); ++k) {
    if (call.sizes[k] == call.buckets[k]) continue;
    for (const BucketData::Axis& a : e.buckets[k].outputs)
      if (a.index < outputs.size() && a.axis < shapes[a.index].size()) {
        shapes[a.index][a.axis] = call.sizes[k];
        cut[a.index] = true;
      }
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!cut[o]) continue;
    Tensor t(outputs[o].dtype(), shapes[o]);
    if (t.numel() > 0 && !t.data()) return Status(StatusCode::io_error, "cannot allocate an output");
    copy_region(outputs[o].ref(), shapes[o], t);
    outputs[o] = std::move(t);
  }
  return Status::Ok();
}

}  // namespace aotrace::rt
