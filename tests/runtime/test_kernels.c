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

/* The 'add' and 'add_nested' entries of parallel_bundle_spec (tiny_bundle.h): z = x + y. */
struct add_closure {
  const float* x;
  const float* y;
  float* z;
  const aotrace_kernel_ctx* ctx;
  int64_t cols;
};

static void add_body(void* closure, int64_t begin, int64_t end) {
  struct add_closure* c = (struct add_closure*)closure;
  for (int64_t i = begin; i < end; ++i) c->z[i] = c->x[i] + c->y[i];
}

/* A parallel loop over rows whose body runs a parallel loop over the row's columns (nested:
 * the inner loop runs inline on the thread of the outer chunk). */
static void add_rows_body(void* closure, int64_t begin, int64_t end) {
  struct add_closure* c = (struct add_closure*)closure;
  for (int64_t r = begin; r < end; ++r) {
    struct add_closure row = {c->x + r * c->cols, c->y + r * c->cols, c->z + r * c->cols, c->ctx, 0};
    c->ctx->parallel_for(c->ctx->pool, c->cols, add_body, &row);
  }
}

EXPORT void k_add_n16(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) {
  struct add_closure c = {(const float*)b[0], (const float*)b[1], (float*)b[2], ctx, 0};
  add_body(&c, 0, 16);  /* too small to be worth a parallel loop */
}
EXPORT void k_add_n100003(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) {
  struct add_closure c = {(const float*)b[0], (const float*)b[1], (float*)b[2], ctx, 0};
  ctx->parallel_for(ctx->pool, 100003, add_body, &c);
}
EXPORT void k_add_nested_64x1000(void* const* b, const int64_t* s, const aotrace_kernel_ctx* ctx) {
  struct add_closure c = {(const float*)b[0], (const float*)b[1], (float*)b[2], ctx, 1000};
  ctx->parallel_for(ctx->pool, 64, add_rows_body, &c);
}
