/* The backend's calls (backend.c), for the plugin's table (filemap_plugin.c). */
#ifndef FILEMAP_BACKEND_H_
#define FILEMAP_BACKEND_H_

#include "backends/plugin_api.h"
#include "backends/plugin_sdk.h"

/* An option of initialize for the backend ("cc"); others are ignored. */
void filemap_backend_option(const char* key, const char* value);

uopc_error* filemap_backend_count(uopc_backend_count_args* a);
uopc_error* filemap_backend_get(uopc_backend_get_args* a);
uopc_error* filemap_backend_describe(uopc_backend_describe_args* a);
uopc_error* filemap_backend_supports(uopc_backend_supports_args* a);
uopc_error* filemap_render(uopc_render_args* a);
uopc_error* filemap_compile(uopc_compile_args* a);

#endif /* FILEMAP_BACKEND_H_ */
