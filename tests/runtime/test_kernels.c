/* Hand-written kernels with the ABI of aotrace_kernel_abi.h, standing in for generated code in
 * the runtime tests: out0 = 2 * (x + bias), out1 = x + bias, for x of shape [B, 4]. */
#include <string.h>

#include "artifacts/runtime/aotrace_kernel_abi.h"

#define EXPORT __attribute__((visibility("default")))

static void add_bias_rows(void* const* b, int64_t rows) {
  const float* x = (const float*)b[0];
  const float* bias = (const float*)b[1];
  float* y = (float*)b[2];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < 4; ++c) y[r * 4 + c] = x[r * 4 + c] + bias[c];
}

struct scale_closure {
  const float* x;
  float* y;
};

static void scale_body(void* closure, int64_t begin, int64_t end) {
  struct scale_closure* c = (struct scale_closure*)closure;
  for (int64_t i = begin; i < end; ++i) c->y[i] = 2.0f * c->x[i];
}

static void scale2(void* const* b, int64_t n, const aotrace_kernel_ctx* ctx) {
  struct scale_closure c = {(const float*)b[0], (float*)b[1]};
  ctx->parallel_for(ctx->pool, n, scale_body, &c);
}

EXPORT void k_add_bias_b1(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) { add_bias_rows(b, 1); }
EXPORT void k_add_bias_b2(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) { add_bias_rows(b, 2); }
EXPORT void k_scale2_n4(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) { scale2(b, 4, ctx); }
EXPORT void k_scale2_n8(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) { scale2(b, 8, ctx); }
EXPORT void k_copy_n4(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) { memcpy(b[1], b[0], 16); }
EXPORT void k_copy_n8(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) { memcpy(b[1], b[0], 32); }
