// Reference implementations of arange, argmax/argmin, cumsum, slice, flip, pad, concat, gather,
// index_select and topk: plain loops over row-major tensors, values read and written as double.
// Many ops view a tensor as [outer, n, inner] around their axis.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/ir.h"
#include "ir/ir_private.h"

namespace aotrace::ir {
namespace {

using Tensors = std::span<const HostTensor>;

// A tensor viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  AxisView(const std::vector<int64_t>& shape, int64_t axis) {
    if (shape.empty()) return;  // 0-d: [1, 1, 1]
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      int64_t s = shape[static_cast<size_t>(d)];
      if (d < axis) outer *= s;
      else if (d == axis) n = s;
      else inner *= s;
    }
  }
  int64_t at(int64_t o, int64_t i, int64_t k) const { return (o * n + i) * inner + k; }
};

std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

// An index read from an index tensor, wrapped once if negative; user_error when out of range.
int64_t checked_index(std::string_view op, double raw, int64_t size) {
  auto i = static_cast<int64_t>(raw);
  if (i < 0) i += size;
  if (i < 0 || i >= size)
    user_error(std::string(op) + ": index " + std::to_string(static_cast<int64_t>(raw)) +
               " is out of bounds for a dim of size " + std::to_string(size));
  return i;
}

// a before b in a topk/argmax order: NaN is the largest value.
bool greater(double a, double b) {
  if (std::isnan(b)) return false;
  if (std::isnan(a)) return true;
  return a > b;
}

}  // namespace

ReferenceFn reference_arange(InferFn infer) {
  return with_results(infer, [](Tensors, const Attrs& attrs, std::vector<HostTensor>& out) {
    double start = attrs.f("start"), step = attrs.f("step");
    for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set(i, start + static_cast<double>(i) * step);
  });
}

// The first index of the max (min); a NaN wins over everything (first NaN).
ReferenceFn reference_arg_reduce(InferFn infer, bool is_max) {
  return with_results(infer, [is_max](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    AxisView v(in[0].shape, attrs.ints("axes")[0]);
    if (v.n == 0 && out[0].numel() > 0)
      user_error(std::string(is_max ? "argmax" : "argmin") + ": cannot reduce an empty dim");
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t k = 0; k < v.inner; ++k) {
        int64_t best = 0;
        double bv = in[0].get(v.at(o, 0, k));
        for (int64_t i = 1; i < v.n && !std::isnan(bv); ++i) {
          double x = in[0].get(v.at(o, i, k));
          if (std::isnan(x) || (is_max ? x > bv : x < bv)) best = i, bv = x;
        }
        out[0].set(o * v.inner + k, static_cast<double>(best));
      }
  });
}

ReferenceFn reference_cumsum(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    AxisView v(in[0].shape, attrs.i("axis"));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t k = 0; k < v.inner; ++k) {
        double acc = 0;
        for (int64_t i = 0; i < v.n; ++i) {
          acc += in[0].get(v.at(o, i, k));
          out[0].set(v.at(o, i, k), acc);
        }
      }
  });
}

ReferenceFn reference_scatter(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    const auto axis = static_cast<size_t>(attrs.i("axis"));
    const bool accumulate = attrs.i("accumulate") != 0;
    const HostTensor &self = in[0], &index = in[1], &src = in[2];
    for (int64_t i = 0; i < self.numel(); ++i) out[0].set(i, self.get(i));
    const auto out_strides = row_major_strides(self.shape), src_strides = row_major_strides(src.shape);
    for (int64_t i = 0; i < index.numel(); ++i) {
      auto idx = unravel(i, index.shape);
      const double v = src.get(ravel(idx, src_strides));
      const auto q = static_cast<int64_t>(index.get(i));
      if (q < 0 || q >= self.shape[axis])
        user_error("scatter: index " + std::to_string(q) + " is out of bounds for a dim of size " + std::to_string(self.shape[axis]));
      idx[axis] = q;
      const int64_t o = ravel(idx, out_strides);
      out[0].set(o, accumulate ? out[0].get(o) + v : v);
    }
  });
}

ReferenceFn reference_slice(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    int64_t axis = attrs.i("axis"), start = attrs.i("start"), step = attrs.i("step");
    AxisView src(in[0].shape, axis), dst(out[0].shape, axis);
    for (int64_t o = 0; o < dst.outer; ++o)
      for (int64_t i = 0; i < dst.n; ++i)
        for (int64_t k = 0; k < dst.inner; ++k)
          out[0].set(dst.at(o, i, k), in[0].get(src.at(o, start + i * step, k)));
  });
}

ReferenceFn reference_flip(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    const auto& shape = in[0].shape;
    auto strides = row_major_strides(shape);
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      auto idx = unravel(i, shape);
      for (auto a : attrs.ints("axes")) idx[static_cast<size_t>(a)] = shape[static_cast<size_t>(a)] - 1 - idx[static_cast<size_t>(a)];
      out[0].set(i, in[0].get(ravel(idx, strides)));
    }
  });
}

ReferenceFn reference_pad(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    const auto& low = attrs.ints("low");
    double value = attrs.f("value");
    auto strides = row_major_strides(in[0].shape);
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      auto idx = unravel(i, out[0].shape);
      bool inside = true;
      for (size_t d = 0; d < idx.size(); ++d) {
        idx[d] -= low[d];
        inside = inside && idx[d] >= 0 && idx[d] < in[0].shape[d];
      }
      out[0].set(i, inside ? in[0].get(ravel(idx, strides)) : value);
    }
  });
}

ReferenceFn reference_concat(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    int64_t axis = attrs.i("axis");
    AxisView dst(out[0].shape, axis);
    int64_t offset = 0;
    for (const auto& t : in) {
      AxisView src(t.shape, axis);
      for (int64_t o = 0; o < src.outer; ++o)
        for (int64_t i = 0; i < src.n; ++i)
          for (int64_t k = 0; k < src.inner; ++k)
            out[0].set(dst.at(o, offset + i, k), t.get(src.at(o, i, k)));
      offset += src.n;
    }
  });
}

ReferenceFn reference_gather(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    auto axis = static_cast<size_t>(attrs.i("axis"));
    const HostTensor &x = in[0], &index = in[1];
    auto strides = row_major_strides(x.shape);
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      auto idx = unravel(i, index.shape);
      idx[axis] = checked_index("gather", index.get(i), x.shape[axis]);
      out[0].set(i, x.get(ravel(idx, strides)));
    }
  });
}

ReferenceFn reference_search_sorted(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    const HostTensor &sorted = in[0], &values = in[1];
    const bool right = attrs.i("right") != 0;
    const int64_t n = sorted.shape.back(), rows = sorted.numel() / std::max<int64_t>(n, 1);
    const int64_t per_row = sorted.shape.size() == 1 ? values.numel() : values.numel() / std::max<int64_t>(rows, 1);
    for (int64_t i = 0; i < values.numel(); ++i) {
      const int64_t row = sorted.shape.size() == 1 ? 0 : i / std::max<int64_t>(per_row, 1);
      const double v = values.get(i);
      int64_t lo = 0, hi = n;
      while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        const double s = sorted.get(row * n + mid);
        if (right ? !(s > v) : !(s >= v)) lo = mid + 1;
        else hi = mid;
      }
      out[0].set(i, static_cast<double>(lo));
    }
  });
}

ReferenceFn reference_index_select(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    int64_t axis = attrs.i("axis");
    AxisView src(in[0].shape, axis), dst(out[0].shape, axis);
    for (int64_t i = 0; i < dst.n; ++i) {
      int64_t j = checked_index("index_select", in[1].get(i), src.n);
      for (int64_t o = 0; o < dst.outer; ++o)
        for (int64_t k = 0; k < dst.inner; ++k)
          out[0].set(dst.at(o, i, k), in[0].get(src.at(o, j, k)));
    }
  });
}

ReferenceFn reference_topk(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    int64_t k = attrs.i("k");
    bool largest = flag(attrs, "largest");
    AxisView src(in[0].shape, attrs.i("axis"));
    AxisView dst(out[0].shape.empty() ? std::vector<int64_t>{} : out[0].shape, attrs.i("axis"));
    std::vector<int64_t> order(static_cast<size_t>(src.n));
    for (int64_t o = 0; o < src.outer; ++o)
      for (int64_t c = 0; c < src.inner; ++c) {
        std::iota(order.begin(), order.end(), 0);
        auto value = [&](int64_t i) { return in[0].get(src.at(o, i, c)); };
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return largest ? greater(value(a), value(b)) : greater(value(b), value(a));
        });
        for (int64_t i = 0; i < k; ++i) {
          out[0].set(dst.at(o, i, c), value(order[static_cast<size_t>(i)]));
          out[1].set(dst.at(o, i, c), static_cast<double>(order[static_cast<size_t>(i)]));
        }
      }
  });
}

}  // namespace aotrace::ir
