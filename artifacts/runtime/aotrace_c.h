/* C API of the aotrace runtime (STYLE 11: aotrace_<noun>_<verb>, out_ parameters, open/close).
 * Every function returns 0 on success or an aotrace::rt::StatusCode value; the message of the
 * last failure on this thread is aotrace_last_error(). */
#ifndef AOTRACE_C_H
#define AOTRACE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aotrace_bundle aotrace_bundle;

/* dtype: 0 f32, 1 f16, 2 bf16, 3 f64, 4 i64, 5 i32, 6 i8, 7 u8, 8 bool (the schema's order). */
typedef struct aotrace_tensor {
  int dtype;
  int rank;
  const int64_t* shape;
  void* data; /* contiguous, row-major */
} aotrace_tensor;

int aotrace_bundle_open(const char* dir, aotrace_bundle** out_bundle);
/* Same, with hashing of the files off when verify_hashes is 0 (sizes are always checked). */
int aotrace_bundle_open_with(const char* dir, int verify_hashes, aotrace_bundle** out_bundle);
/* Options of aotrace_bundle_open_with_options; aotrace_open_options_init sets the defaults. */
typedef struct aotrace_open_options {
  int verify_hashes; /* nonzero (default): XXH3 of every file; sizes are always checked */
  int num_threads;   /* threads of the kernels' parallel loops, the caller included;
                        0 (default): AOTRACE_NUM_THREADS if set, else the CPUs this process may use */
  int device;        /* 0 (default): the CPU kernels; 1: the CUDA kernels on GPU 0 (OpenOptions::device);
                        set by aotrace_open_options_init, which every caller must call first */
} aotrace_open_options;
void aotrace_open_options_init(aotrace_open_options* options);
int aotrace_bundle_open_with_options(const char* dir, const aotrace_open_options* options,
                                     aotrace_bundle** out_bundle);
void aotrace_bundle_close(aotrace_bundle* bundle);
/* Threads of the bundle's pool, the caller included (>= 1). */
int aotrace_bundle_num_threads(const aotrace_bundle* bundle);
/* Runs the bundle's golden vectors; out_checked (may be NULL): how many pairs matched. */
int aotrace_bundle_selftest(const aotrace_bundle* bundle, size_t* out_checked);
int aotrace_entry_num_outputs(const aotrace_bundle* bundle, const char* entry, size_t* out_count);
/* Seeds the entry's random numbers (torch.randn, dropout in training mode): Entry::manual_seed. */
int aotrace_entry_manual_seed(const aotrace_bundle* bundle, const char* entry, uint64_t seed);
/* Runs `entry`, writing into the caller's output buffers (of the selected variant's shapes).
 * Inputs the entry updates in place (x.add_(1) on an input) are written back into `inputs`. */
int aotrace_entry_run(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                      size_t num_inputs, const aotrace_tensor* outputs, size_t num_outputs);
/* The same for a bundle opened with device 1 (cuda), with every tensor's data a CUDA device
 * pointer on GPU 0 (cuMemAlloc, cudaMalloc; 16-byte aligned) except Python scalar inputs, which
 * stay in host memory. Returns once the outputs are written. aotrace_entry_run on such a bundle
 * takes host memory and copies it in and out. */
int aotrace_entry_run_device(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                             size_t num_inputs, const aotrace_tensor* outputs, size_t num_outputs);
/* The variant `entry` runs for these inputs (guards checked, nothing run): its index, and in
 * out_name (may be NULL) its name ("v1"), valid while the bundle is open. */
int aotrace_entry_select(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                         size_t num_inputs, size_t* out_variant, const char** out_name);
/* The shape of output `output` of the variant these inputs select (dynamic dims computed from
 * theirs), to size the buffers of aotrace_entry_run: its rank in *out_rank and its dims in
 * out_shape[0 .. rank). invalid_argument when max_rank is smaller than the rank (*out_rank set). */
int aotrace_entry_output_shape(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                               size_t num_inputs, size_t output, int64_t* out_shape, size_t max_rank,
                               size_t* out_rank);
/* The dtype code (as aotrace_tensor.dtype) of output `output` of variant `variant` (an index of
 * aotrace_entry_select), to allocate the buffers of aotrace_entry_run. */
int aotrace_entry_output_dtype(const aotrace_bundle* bundle, const char* entry, size_t variant, size_t output,
                               int* out_dtype);

/* A finished run whose outputs the runtime allocated (aotrace_entry_call): the variant that ran
 * and each output's dtype, shape and data, readable until aotrace_result_close. */
typedef struct aotrace_result aotrace_result;
/* Runs `entry` on `inputs` (guards checked; inputs the entry updates in place are written back
 * into `inputs`), allocating the outputs, which *out_result holds. NULL on failure. */
int aotrace_entry_call(const aotrace_bundle* bundle, const char* entry, const aotrace_tensor* inputs,
                       size_t num_inputs, aotrace_result** out_result);
/* The variant that ran: its index in *out_variant and its name ("v1") in *out_name, either may
 * be NULL; the name lives as long as the result. */
void aotrace_result_variant(const aotrace_result* result, size_t* out_variant, const char** out_name);
size_t aotrace_result_num_outputs(const aotrace_result* result);
/* Output `output` (in the flattened output order): its dtype, rank, shape and contiguous data,
 * which belong to the result. invalid_argument past the last output. */
int aotrace_result_output(const aotrace_result* result, size_t output, aotrace_tensor* out_tensor);
void aotrace_result_close(aotrace_result* result);

const char* aotrace_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AOTRACE_C_H */
