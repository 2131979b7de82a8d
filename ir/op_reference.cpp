// Reference implementations of the primitive ops: plain loops over row-major tensors, every
// value read and written as double (so i64 values beyond 2^53 lose precision; fine for a
// reference). Results are allocated with the dtype and shape the op's rule infers.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

using Tensors = std::span<const HostTensor>;

std::vector<int64_t> concrete(const Shape& shape) {
  std::vector<int64_t> out;
  for (const auto& d : shape) out.push_back(d.constant());
  return out;
}

}  // namespace

// Allocates the results from the rule's types for these operands, then runs the loop.
ReferenceFn with_results(InferFn infer, ReferenceLoop loop) {
  return [infer = std::move(infer), loop = std::move(loop)](Tensors in, const Attrs& attrs) {
    std::vector<TensorType> types;
    for (const auto& t : in) types.push_back(host_type(t));
    std::vector<HostTensor> out;
    for (const auto& t : infer(types, attrs))
      out.push_back(HostTensor::zeros(t.dtype, concrete(t.shape)));
    loop(in, attrs, out);
    return out;
  };
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

namespace {

// Maps a linear index of `out_shape` to the linear index of an operand broadcast to it
// (operand dims aligned right; a dim of size 1 always reads index 0).
class BroadcastIndex {
 public:
  BroadcastIndex(const std::vector<int64_t>& operand, const std::vector<int64_t>& out)
      : out_(out), strides_(out.size(), 0) {
    auto s = row_major_strides(operand);
    size_t lead = out.size() - operand.size();
    for (size_t i = 0; i < operand.size(); ++i)
      strides_[lead + i] = operand[i] == 1 ? 0 : s[i];
  }
  int64_t operator()(int64_t linear) const {
    int64_t offset = 0;
    for (size_t i = out_.size(); i-- > 0;) {
      offset += (linear % out_[i]) * strides_[i];
      linear /= out_[i];
    }
    return offset;
  }

 private:
  std::vector<int64_t> out_;
  std::vector<int64_t> strides_;
};

}  // namespace

ReferenceFn reference_full(InferFn infer) {
  return with_results(infer, [](Tensors, const Attrs& attrs, std::vector<HostTensor>& out) {
    double v = attrs.f("value");
    for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set(i, v);
  });
}

ReferenceFn reference_unary(InferFn infer, double (*fn)(double)) {
  return with_results(infer, [fn](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set(i, fn(in[0].get(i)));
  });
}

// bool: logical not; integers: bitwise not (two's complement, as torch's ~).
ReferenceFn reference_not(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    const bool logical = in[0].dtype == DType::b8;
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      double v = in[0].get(i);
      out[0].set(i, logical ? (v == 0 ? 1.0 : 0.0) : static_cast<double>(~static_cast<int64_t>(v)));
    }
  });
}

ReferenceFn reference_binary(InferFn infer, double (*fn)(double, double)) {
  return with_results(infer, [fn](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    BroadcastIndex ia(in[0].shape, out[0].shape), ib(in[1].shape, out[0].shape);
    for (int64_t i = 0; i < out[0].numel(); ++i)
      out[0].set(i, fn(in[0].get(ia(i)), in[1].get(ib(i))));
  });
}

ReferenceFn reference_where(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    const auto& shape = out[0].shape;
    BroadcastIndex ic(in[0].shape, shape), ia(in[1].shape, shape), ib(in[2].shape, shape);
    for (int64_t i = 0; i < out[0].numel(); ++i)
      out[0].set(i, in[0].get(ic(i)) != 0 ? in[1].get(ia(i)) : in[2].get(ib(i)));
  });
}

ReferenceFn reference_cast(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set(i, in[0].get(i));
  });
}

// Sum starts at 0; max (min) starts at -inf (+inf) and propagates NaN (as torch.amax/amin).
ReferenceFn reference_reduce(InferFn infer, ReduceKind kind) {
  return with_results(infer, [kind](Tensors in, const Attrs& attrs,
                                    std::vector<HostTensor>& out) {
    const bool is_max = kind != ReduceKind::sum;
    const double sign = kind == ReduceKind::min ? -1.0 : 1.0;
    const auto& axes = attrs.ints("axes");
    const auto& shape = in[0].shape;
    if (is_max && in[0].numel() == 0 && out[0].numel() > 0)
      user_error("reduce_max/min: cannot reduce an empty dimension of a tensor of shape " +
                 attr_value_str(shape));
    // Strides of the output seen with the input's rank: 0 along reduced axes.
    std::vector<int64_t> kept_shape = shape;
    for (auto a : axes) kept_shape[static_cast<size_t>(a)] = 1;
    auto kept_strides = row_major_strides(kept_shape);
    for (auto a : axes) kept_strides[static_cast<size_t>(a)] = 0;
    std::vector<double> acc(static_cast<size_t>(out[0].numel()),
                            is_max ? -sign * std::numeric_limits<double>::infinity() : 0.0);
    for (int64_t i = 0; i < in[0].numel(); ++i) {
      int64_t rest = i, o = 0;
      for (size_t d = shape.size(); d-- > 0;) {
        o += (rest % shape[d]) * kept_strides[d];
        rest /= shape[d];
      }
      double v = in[0].get(i);
      double& a = acc[static_cast<size_t>(o)];
      if (!is_max) a += v;
      else if (std::isnan(v) || std::isnan(a)) a = NAN;
      else a = sign * std::max(sign * a, sign * v);
    }
    for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set(i, acc[static_cast<size_t>(i)]);
  });
}

// torch.matmul. A 1-D left operand is a [1, K] row, a 1-D right operand a [K, 1] column; the
// result's layout is then the same as [batch..., M, N] with that dim of size 1.
ReferenceFn reference_matmul(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    const HostTensor &a = in[0], &b = in[1];
    auto as = a.shape, bs = b.shape;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    std::vector<int64_t> batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
    std::vector<int64_t> batch(out[0].shape.begin(),
                               out[0].shape.end() - (a.shape.size() >= 2) - (b.shape.size() >= 2));
    BroadcastIndex ia(batch_a, batch), ib(batch_b, batch);
    int64_t batches = 1;
    for (auto d : batch) batches *= d;
    for (int64_t p = 0; p < batches; ++p) {
      int64_t a0 = ia(p) * M * K, b0 = ib(p) * K * N, o0 = p * M * N;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double sum = 0;
          for (int64_t k = 0; k < K; ++k) sum += a.get(a0 + m * K + k) * b.get(b0 + k * N + n);
          out[0].set(o0 + m * N + n, sum);
        }
    }
  });
}

ReferenceFn reference_reshape(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    if (in[0].numel() != out[0].numel())
      user_error("reshape: cannot reshape " + attr_value_str(in[0].shape) + " to " +
                 attr_value_str(out[0].shape));
    out[0].data = in[0].data;
  });
}

ReferenceFn reference_permute(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    const auto& perm = attrs.ints("perm");
    auto in_strides = row_major_strides(in[0].shape);
    const auto& shape = out[0].shape;
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      int64_t rest = i, src = 0;
      for (size_t d = shape.size(); d-- > 0;) {
        src += (rest % shape[d]) * in_strides[static_cast<size_t>(perm[d])];
        rest /= shape[d];
      }
      out[0].set(i, in[0].get(src));
    }
  });
}

ReferenceFn reference_expand(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs&, std::vector<HostTensor>& out) {
    BroadcastIndex index(in[0].shape, out[0].shape);
    for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set(i, in[0].get(index(i)));
  });
}

}  // namespace aotrace::ir
