// Reference implementations of conv and pool: direct loops in double. One spatial dim is
// computed as two with a leading spatial size of 1.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ir.h"
#include "ir/ir_private.h"
#include "ir/winograd.h"

namespace aotrace::ir {
namespace {

using Tensors = std::span<const HostTensor>;

std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

// Per-spatial-dim attribute as two values (H, W); 1-D ops get `one_d_h` for H.
std::array<int64_t, 2> hw(const Attrs& attrs, const char* key, size_t spatial, int64_t one_d_h) {
  const auto& v = attrs.ints(key);
  if (spatial == 1) return {one_d_h, v[0]};
  return {v[0], v[1]};
}

// [N, C, *spatial] as N, C, H, W.
std::array<int64_t, 4> nchw(const std::vector<int64_t>& s) {
  if (s.size() == 3) return {s[0], s[1], 1, s[2]};
  return {s[0], s[1], s[2], s[3]};
}

}  // namespace

ReferenceFn reference_conv(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    size_t sp = in[0].shape.size() - 2;
    auto [N, C, H, W] = nchw(in[0].shape);
    auto [O, Cg, KH, KW] = nchw(in[1].shape);
    auto [N2, O2, OH, OW] = nchw(out[0].shape);
    auto stride = hw(attrs, "stride", sp, 1), dil = hw(attrs, "dilation", sp, 1);
    auto low = hw(attrs, "pad_low", sp, 0);
    int64_t groups = attrs.i("groups"), Og = O / groups;
    std::vector<double> x = values(in[0]), w = values(in[1]);
    std::vector<double> bias = in.size() == 3 ? values(in[2]) : std::vector<double>(static_cast<size_t>(O), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o) {
        int64_t g = o / Og;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = bias[static_cast<size_t>(o)];
            for (int64_t c = 0; c < Cg; ++c) {
              int64_t ci = g * Cg + c;
              for (int64_t kh = 0; kh < KH; ++kh) {
                int64_t ih = oh * stride[0] - low[0] + kh * dil[0];
                if (ih < 0 || ih >= H) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  int64_t iw = ow * stride[1] - low[1] + kw * dil[1];
                  if (iw < 0 || iw >= W) continue;
                  acc += x[static_cast<size_t>(((n * C + ci) * H + ih) * W + iw)] *
                         w[static_cast<size_t>(((o * Cg + c) * KH + kh) * KW + kw)];
                }
              }
            }
            out[0].set(((n * O + o) * OH + oh) * OW + ow, acc);
          }
      }
    (void)N2, (void)O2;
  });
}

// torch's max_pool / avg_pool windows: see ops.def.
ReferenceFn reference_pool(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    size_t sp = in[0].shape.size() - 2;
    auto [N, C, H, W] = nchw(in[0].shape);
    auto [N2, C2, OH, OW] = nchw(out[0].shape);
    auto k = hw(attrs, "kernel", sp, 1), stride = hw(attrs, "stride", sp, 1);
    auto pad = hw(attrs, "padding", sp, 0), dil = hw(attrs, "dilation", sp, 1);
    const bool is_max = attrs.s("kind") == "max";
    const bool include_pad = flag(attrs, "count_include_pad");
    std::vector<double> x = values(in[0]);
    for (int64_t nc = 0; nc < N * C; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const double* plane = x.data() + nc * H * W;
          double r;
          if (is_max) {
            r = -std::numeric_limits<double>::infinity();
            for (int64_t kh = 0; kh < k[0]; ++kh)
              for (int64_t kw = 0; kw < k[1]; ++kw) {
                int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
                int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                double v = plane[ih * W + iw];
                if (v > r || std::isnan(v)) r = v;
                if (std::isnan(r)) break;
              }
          } else {
            int64_t h0 = oh * stride[0] - pad[0], w0 = ow * stride[1] - pad[1];
            int64_t h1 = std::min(h0 + k[0], H + pad[0]), w1 = std::min(w0 + k[1], W + pad[1]);
            int64_t pool_size = (h1 - h0) * (w1 - w0);
            h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
            h1 = std::min(h1, H), w1 = std::min(w1, W);
            double sum = 0;
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) sum += plane[ih * W + iw];
            r = sum / static_cast<double>(include_pad ? pool_size : (h1 - h0) * (w1 - w0));
          }
          out[0].set((nc * OH + oh) * OW + ow, r);
        }
    (void)N2, (void)C2;
  });
}

ReferenceFn reference_winograd_input(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    auto [N, C, H, W] = nchw(in[0].shape);
    const winograd::Transform& f = winograd::transform(attrs.i("tile"));
    const auto &pad = attrs.ints("pad_low"), &size = attrs.ints("out");
    const int64_t tH = winograd::tiles(size[0], f.m), tW = winograd::tiles(size[1], f.m), T = tH * tW;
    std::vector<double> x = values(in[0]);
    for (int64_t ab = 0; ab < f.points(); ++ab)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t th = 0; th < tH; ++th)
            for (int64_t tw = 0; tw < tW; ++tw) {
              double v = 0;
              for (int64_t i = 0; i < f.n; ++i)
                for (int64_t j = 0; j < f.n; ++j) {
                  int64_t ih = f.m * th + i - pad[0], iw = f.m * tw + j - pad[1];
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                  v += f.BT[ab / f.n][i] * f.BT[ab % f.n][j] * x[static_cast<size_t>(((n * C + c) * H + ih) * W + iw)];
                }
              out[0].set((ab * C + c) * N * T + n * T + th * tW + tw, v);
            }
  });
}

ReferenceFn reference_winograd_output(InferFn infer) {
  return with_results(infer, [](Tensors in, const Attrs& attrs, std::vector<HostTensor>& out) {
    auto [N, O, OH, OW] = nchw(out[0].shape);
    const winograd::Transform& f = winograd::transform(attrs.i("tile"));
    const int64_t tW = winograd::tiles(OW, f.m), T = winograd::tiles(OH, f.m) * tW;
    std::vector<double> m = values(in[0]);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t x = 0; x < OW; ++x) {
            double v = 0;
            for (int64_t ab = 0; ab < f.points(); ++ab)
              v += f.AT[y % f.m][ab / f.n] * f.AT[x % f.m][ab % f.n] *
                   m[static_cast<size_t>((ab * O + o) * N * T + n * T + (y / f.m) * tW + x / f.m)];
            out[0].set(((n * O + o) * OH + y) * OW + x, v);
          }
  });
}

}  // namespace aotrace::ir
