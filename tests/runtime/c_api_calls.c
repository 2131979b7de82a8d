/* The C API from C (this file is compiled as C): aotrace_entry_call on the tiny bundle
 * (tiny_bundle.h), then what the result says: the variant that ran and each output's dtype,
 * rank, shape and values; aotrace_entry_output_dtype; and the errors of both. */
#include <aotrace/aotrace_c.h>
#include <stdio.h>
#include <string.h>

static char failure[512];

static const char* fail(const char* what) {
  snprintf(failure, sizeof failure, "%s (last error: %s)", what, aotrace_last_error());
  return failure;
}

/* NULL when every check holds, else what failed. */
const char* c_api_call_tiny_bundle(const char* dir) {
  aotrace_bundle* b = NULL;
  aotrace_result* r = NULL;
  float x[8];
  int64_t shape[2] = {2, 4}, wrong_shape[2] = {3, 4};
  aotrace_tensor in = {0, 2, shape, x}, wrong = {0, 2, wrong_shape, x}, out;
  size_t variant = 99, o;
  const char* name = NULL;
  int dtype = -1, i;
  for (i = 0; i < 8; ++i) x[i] = (float)i;
  if (aotrace_bundle_open(dir, &b) != 0) return fail("aotrace_bundle_open");

  if (aotrace_entry_call(b, "forward", &in, 1, &r) != 0 || r == NULL) return fail("aotrace_entry_call");
  aotrace_result_variant(r, &variant, &name);
  if (variant != 1 || strcmp(name, "v1") != 0) return fail("the batch-2 input did not run variant v1");
  if (aotrace_result_num_outputs(r) != 2) return fail("the result does not have 2 outputs");
  for (o = 0; o < 2; ++o) {
    const float* y;
    if (aotrace_result_output(r, o, &out) != 0) return fail("aotrace_result_output");
    if (out.dtype != 0 || out.rank != 2 || out.shape[0] != 2 || out.shape[1] != 4) return fail("output shape or dtype");
    y = (const float*)out.data;
    for (i = 0; i < 8; ++i)
      if (y[i] != (o == 0 ? 2.0f : 1.0f) * (float)(i + i % 4 + 1)) return fail("output values");
  }
  if (aotrace_result_output(r, 2, &out) != 1 || strstr(aotrace_last_error(), "asked for output 2") == NULL)
    return fail("output 2 of 2 was not refused as invalid_argument");
  aotrace_result_close(r);

  if (aotrace_entry_call(b, "forward", &wrong, 1, &r) != 1 || r != NULL) return fail("a guard miss was not refused");
  if (strstr(aotrace_last_error(), "got 3") == NULL) return fail("the guard miss does not name the size");

  if (aotrace_entry_output_dtype(b, "forward", 1, 1, &dtype) != 0 || dtype != 0) return fail("aotrace_entry_output_dtype");
  if (aotrace_entry_output_dtype(b, "forward", 2, 0, &dtype) != 1 ||
      strstr(aotrace_last_error(), "has 2 variants, asked for variant 2") == NULL)
    return fail("variant 2 of 2 was not refused");
  aotrace_bundle_close(b);
  return NULL;
}
