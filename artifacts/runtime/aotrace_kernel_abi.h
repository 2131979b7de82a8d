/* The kernel calling convention, shared by generated kernels and the runtime.
 * Versioned like a public API (artifacts/COMPATIBILITY.md): a change that breaks existing
 * kernels bumps AOTRACE_KERNEL_ABI_VERSION and the bundle format major.
 *
 * Every kernel in cpu/<triple>.so is an exported C function:
 *
 *   void kernel(void* const* buffers, const int64_t* symbols, const aotrace_kernel_ctx* ctx);
 *
 *   buffers  pointers to the call's buffers, in the order of the plan's KernelCall::buffers;
 *            every buffer is contiguous, row-major, at least 16-byte aligned (arena: 64).
 *   symbols  values of the variant's shape symbols (its dynamic dims), in the order of the
 *            bundle's Variant.symbols (ir::Graph::symbols); kernels of static variants ignore it.
 *   ctx      services of the runtime; kernels may ignore it.
 *
 * Kernels are pure: they read their inputs, write their outputs, keep no state, and may be
 * called concurrently with distinct output buffers.
 */
#ifndef AOTRACE_KERNEL_ABI_H
#define AOTRACE_KERNEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AOTRACE_KERNEL_ABI_VERSION 1

typedef void (*aotrace_parallel_body)(void* closure, int64_t begin, int64_t end);

typedef struct aotrace_kernel_ctx {
  void* pool;
  /* Runs body(closure, begin, end) over disjoint contiguous ranges covering [0, n), possibly
   * at the same time on several threads (the calling thread is one of them); returns when
   * every range is done. n <= 0 calls nothing. How many ranges and threads is the runtime's
   * choice (at most a few ranges per thread; one call body(closure, 0, n) when the runtime has
   * one thread, n == 1, or the pool is busy): bodies must give the same result for any split.
   * A body may call parallel_for itself: that call runs its whole range on the body's thread.
   * Bodies must not throw or longjmp out. */
  void (*parallel_for)(void* pool, int64_t n, aotrace_parallel_body body, void* closure);
} aotrace_kernel_ctx;

typedef void (*aotrace_kernel_fn)(void* const* buffers, const int64_t* symbols,
                                  const aotrace_kernel_ctx* ctx);

#ifdef __cplusplus
}
#endif

#endif /* AOTRACE_KERNEL_ABI_H */
