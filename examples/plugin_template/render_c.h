/* The backend's renderer (render_c.c). */
#ifndef FILEMAP_RENDER_C_H_
#define FILEMAP_RENDER_C_H_

#include <stddef.h>

#include "backends/kernel_form.h"

/* Whether kernels of dtype t are rendered (all but f16 and bf16). */
int filemap_renders_dtype(uopc_dtype t);

/* The C function `name` of a kernel (free it), or NULL with why[why_size] saying why. */
char* filemap_render_c(const uopc_kernel_form* form, const char* name, char* why, size_t why_size);

/* What every binary defines once before its kernels: includes and helpers. */
const char* filemap_c_prelude(void);

#endif /* FILEMAP_RENDER_C_H_ */
