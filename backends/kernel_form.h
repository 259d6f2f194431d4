/* uopc kernel form, version 1: a kernel as a backend renders it, in plain C data.
 *
 * render receives each kernel as serialized core/uop.proto bytes (uopc_render_args.kernel).
 * uopc_kernel_form_read turns those bytes into this form: the kernel's program, in the order
 * a renderer prints it, each node an op with its dtype, its sources and its argument. A
 * plugin includes this header and plugin_api.h and links @uopc//backends:kernel_form; it
 * needs nothing else of uopc. examples/plugin_template renders C from it.
 *
 * The program. A node comes after its sources; the last node is the SINK, whose sources
 * are the kernel's statements. A RANGE opens a loop over [0, src[0]) (`name` says its kind:
 * "loop" and "reduce" are plain loops; "global" and "local" are the launch's grid and block
 * axes where the backend launches threads, plain loops where it does not); the END that
 * lists it among its sources after the first closes it, and every node between is inside
 * the loop. A node sits in the innermost loop its sources need (loop-invariant work comes
 * before the loop). A kernel whose block shares storage (a reduction across a block's threads)
 * has a local range that ends inside the grid, then a barrier, then the block's own work,
 * outside every local range: done alike by each of its threads, its stores to buffers by the
 * first. The ops (core/ops.h names them; their sources in order):
 *   const        a literal (arg CONST)
 *   var          a kernel parameter, an i32 in [lo, hi] (arg VAR; the launch passes it)
 *   buffer       kernel parameter `i` (the slot), `size` elements of `dtype` (arg PARAM)
 *   alloc        storage local to a run, `size` elements of `dtype` (arg PARAM; `i` names it);
 *                a thread's own; with `name` "shared" one that a block of threads shares;
 *                with `name` "warp" a register a thread whose warp exchanges them: in a local
 *                range thread l stores element l and reads element l or (l + c) % size, c a
 *                constant under the warp (a GPU's shuffle; c lanes past the warp unspecified)
 *   range        end                           end      statement, ranges it closes...
 *   index        buffer or alloc, flat index   load     index
 *   store        index, value                  after    value, statements it follows...
 *   barrier      statements every thread of the block has done before anything after it
 *                reads what they stored (CUDA's __syncthreads; nothing where a block's
 *                threads run in turn, a local range being a loop)
 *   add mul fdiv floordiv mod max cmplt cmpne cmpeq and or xor shl shr (2 sources),
 *   exp2 log2 sin sqrt recip trunc cast bitcast (1), where (cond, a, b), mulacc (a * b + c,
 *   rounded once): ALU ops with core/alu.h's meanings: floordiv rounds to -infinity and mod
 *   takes the divisor's sign (both 0 for a divisor of 0), shifts past the width give 0 (or
 *   -1: shr of a negative), a float cast to an integer saturates (NaN gives 0), max of a NaN
 *   is NaN, and integer add and mul wrap.
 * f16 and bf16 values are 16-bit floats; in memory they are their bits.
 *
 * Versioning. UOPC_KERNEL_FORM_VERSION changes when a reader of the old version could
 * misread the new; structs only grow at the end.
 */
#ifndef UOPC_BACKENDS_KERNEL_FORM_H_
#define UOPC_BACKENDS_KERNEL_FORM_H_

#include <stddef.h>
#include <stdint.h>

#include "backends/plugin_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UOPC_KERNEL_FORM_VERSION 1

/* Which members of a node hold its argument. */
typedef enum uopc_kernel_arg {
  UOPC_KERNEL_ARG_NONE = 0,
  UOPC_KERNEL_ARG_CONST = 1, /* i (integer and bool dtypes) or f (float dtypes) */
  UOPC_KERNEL_ARG_VAR = 2,   /* name, lo, hi */
  UOPC_KERNEL_ARG_PARAM = 3, /* i (the slot), size */
  UOPC_KERNEL_ARG_RANGE = 4, /* i (the loop's number, unique in the kernel), name (its kind) */
  UOPC_KERNEL_ARG_FORCE_I32 = 0x7fffffff
} uopc_kernel_arg;

typedef struct uopc_kernel_node {
  const char* op;      /* "range", "load", "add", ... */
  uopc_dtype dtype;    /* its value's; UOPC_DTYPE_VOID for a statement */
  uopc_kernel_arg arg; /* which of the members below apply */
  const uint32_t* src; /* indices of earlier nodes */
  uint32_t num_src;
  uint32_t reserved;
  int64_t i;
  double f;
  int64_t size;
  int64_t lo, hi;
  const char* name; /* a C identifier for a VAR */
} uopc_kernel_node;

typedef struct uopc_kernel_form {
  uint32_t version; /* UOPC_KERNEL_FORM_VERSION */
  uint32_t num_nodes;
  const uopc_kernel_node* nodes; /* the program */
  /* The launch convention (plugin_api.h): buffers by slot, then VARs sorted by name. */
  uint32_t num_buffers; /* slots: one more than the largest */
  uint32_t num_vars;
  const uint32_t* buffers; /* by slot: the index of its BUFFER node, or UINT32_MAX if unused */
  const uint32_t* vars;    /* the VAR nodes, sorted by name: launch vars[k] is vars[k]'s value */
} uopc_kernel_form;

/* Reads `size` bytes of a serialized kernel into its form, which the caller frees with
   uopc_kernel_form_free. NULL on error, with a message in why (why_size bytes, terminated),
   for bytes that are not a kernel of a format version this library reads, or a kernel that
   is not at loop level. */
uopc_kernel_form* uopc_kernel_form_read(const void* kernel, uint64_t size, char* why,
                                        size_t why_size);

void uopc_kernel_form_free(uopc_kernel_form* form);

#ifdef __cplusplus
}
#endif

#endif /* UOPC_BACKENDS_KERNEL_FORM_H_ */
