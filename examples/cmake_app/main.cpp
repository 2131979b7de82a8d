// Loads the bundle that aotrace_add_bundle compiled (mlp.aot next to this program, or argv[1]),
// runs its golden vectors through the C API, then runs `forward` through the C++ API on each
// variant's golden input and compares with the golden output that torch eager gave.
#include <aotrace/aotrace_c.h>
#include <aotrace/aotrace_runtime.h>
#include <aotrace/npy.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace rt = aotrace::rt;

// The largest |a - b| of two f32 tensors of the same shape, or -1 when the shapes differ.
static double max_abs_diff(const rt::Tensor& a, const rt::Tensor& b) {
  if (a.dtype() != rt::DType::f32 || b.dtype() != rt::DType::f32 || a.shape() != b.shape())
    return -1;
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    d = std::max(d, std::fabs(double(a.data_as<float>()[i]) - double(b.data_as<float>()[i])));
  return d;
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : MLP_BUNDLE;

  // The C API: open, selftest (every variant on its golden vectors), close.
  aotrace_bundle* cb = nullptr;
  size_t checked = 0;
  if (aotrace_bundle_open(dir.c_str(), &cb) != 0 || aotrace_bundle_selftest(cb, &checked) != 0) {
    std::fprintf(stderr, "cmake_app: %s\n", aotrace_last_error());
    aotrace_bundle_close(cb);
    return 1;
  }
  aotrace_bundle_close(cb);
  std::printf("selftest: %zu golden pair(s) ok\n", checked);

  // The C++ API: each variant's golden input through Entry::run, compared with its output.
  rt::Result<rt::Bundle> bundle = rt::Bundle::open(dir);
  if (!bundle.ok()) {
    std::fprintf(stderr, "cmake_app: %s\n", bundle.status().message().c_str());
    return 1;
  }
  rt::Result<rt::Entry> entry = bundle->entry("forward");
  if (!entry.ok()) {
    std::fprintf(stderr, "cmake_app: %s\n", entry.status().message().c_str());
    return 1;
  }
  std::printf("bundle %s (%s kernels), entry forward with %zu variant(s)\n", bundle->name().c_str(),
              bundle->cpu().c_str(), entry->num_variants());
  for (size_t v = 0; v < entry->num_variants(); ++v) {
    const std::string golden = dir + "/golden/forward." + entry->variant_name(v) + ".0.";
    rt::Result<rt::Tensor> x = rt::npy_read(golden + "in0.npy");
    rt::Result<rt::Tensor> want = rt::npy_read(golden + "out0.npy");
    if (!x.ok() || !want.ok()) {
      std::fprintf(stderr, "cmake_app: %s\n",
                   (x.ok() ? want.status() : x.status()).message().c_str());
      return 1;
    }
    rt::Result<size_t> chosen = entry->select({x->ref()});
    rt::Result<std::vector<rt::Tensor>> outs = entry->run({x->ref()});
    if (!chosen.ok() || !outs.ok()) {
      std::fprintf(stderr, "cmake_app: %s\n",
                   (chosen.ok() ? outs.status() : chosen.status()).message().c_str());
      return 1;
    }
    const rt::Tensor& y = (*outs)[0];
    double diff = max_abs_diff(y, *want);
    std::printf("x %s -> variant %s, output %s, max |aotrace - torch| %.3g\n",
                rt::shape_str(x->shape()).c_str(), entry->variant_name(*chosen).c_str(),
                rt::shape_str(y.shape()).c_str(), diff);
    if (diff < 0 || diff > 1e-4) {
      std::fprintf(stderr, "cmake_app: variant %s differs from its golden output\n",
                   entry->variant_name(v).c_str());
      return 1;
    }
  }
  std::printf("cmake_app ok\n");
  return 0;
}
