// Pins the layout of the plugin ABI: a reordered or resized struct breaks this build, not
// a user's plugin. The sizes are those of ABI 2.1 and of the frozen 1.5 on LP64 (x86_64,
// aarch64); a minor version may only append members, so these numbers may grow in new
// minors but the offsets of existing members never change. The structs 1.x passed are
// 2.0's prefixes: render, compile and launch grew at their ends only.
#include "backends/plugin_api.h"

#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"

#include "backends/plugin_sdk.h"
#include "core/dtype.h"
#include "devices/plugin_api_v1.h"

namespace uopc {
namespace {

#define PIN_SIZE(type, bytes) \
  static_assert(sizeof(type) == (bytes), #type " changed size: ABI break")
#define PIN_OFFSET(type, member, bytes) \
  static_assert(offsetof(type, member) == (bytes), #type "." #member " moved: ABI break")

// What both majors pass.
PIN_SIZE(uopc_ext, 24);
PIN_SIZE(uopc_host_api, 40);
PIN_SIZE(uopc_backend_desc, 88);
PIN_SIZE(uopc_source, 32);
PIN_SIZE(uopc_device_props, 72);
PIN_SIZE(uopc_option, 32);
PIN_OFFSET(uopc_buffer_wrap_args, buffer, 56);
PIN_OFFSET(uopc_target_args, device_class, 40);
PIN_OFFSET(uopc_target_args, matrix_units, 120);
PIN_OFFSET(uopc_launch_args, grid, 64);

// ABI 2.0: the table and every call's args.
PIN_OFFSET(uopc_api, caps, 40);
PIN_OFFSET(uopc_api, device_count, 160);
PIN_OFFSET(uopc_api, launch, 280);
PIN_OFFSET(uopc_api, probe, 48);
PIN_OFFSET(uopc_api, queue_synchronize, 320);
PIN_OFFSET(uopc_api, render, 144);
PIN_OFFSET(uopc_compile_args, binary, 40);
PIN_OFFSET(uopc_launch_args, block, 76);
PIN_OFFSET(uopc_launch_args, done, 96);
PIN_OFFSET(uopc_launch_args, queue, 88);
PIN_OFFSET(uopc_render_args, name, 40);
PIN_OFFSET(uopc_render_args, source, 48);
PIN_SIZE(uopc_api, 336);
PIN_OFFSET(uopc_api, kernel_launch, 328);  // ABI 2.1
PIN_SIZE(uopc_backend_count_args, 24);
PIN_SIZE(uopc_backend_describe_args, 32);
PIN_SIZE(uopc_backend_get_args, 32);
PIN_SIZE(uopc_backend_supports_args, 40);
PIN_SIZE(uopc_backend_target_args, 144);  // 2.1 appended kernels
PIN_OFFSET(uopc_target_args, kernels, 128);
PIN_SIZE(uopc_kernel_desc, 56);
PIN_SIZE(uopc_kernel_launch_args, 72);
PIN_SIZE(uopc_blob_describe_args, 40);
PIN_SIZE(uopc_blob_destroy_args, 24);
PIN_SIZE(uopc_buffer_address_args, 32);
PIN_SIZE(uopc_buffer_alloc_args, 48);
PIN_SIZE(uopc_buffer_free_args, 24);
PIN_SIZE(uopc_buffer_wrap_args, 64);
PIN_SIZE(uopc_compile_args, 48);
PIN_SIZE(uopc_copy_args, 72);
PIN_SIZE(uopc_copy_d2h_args, 64);
PIN_SIZE(uopc_copy_h2d_args, 64);
PIN_SIZE(uopc_device_count_args, 24);
PIN_SIZE(uopc_device_describe_args, 32);
PIN_SIZE(uopc_device_get_args, 32);
PIN_SIZE(uopc_error_describe_args, 48);
PIN_SIZE(uopc_error_destroy_args, 24);
PIN_SIZE(uopc_event_destroy_args, 24);
PIN_SIZE(uopc_event_query_args, 32);
PIN_SIZE(uopc_event_wait_args, 32);
PIN_SIZE(uopc_initialize_args, 32);
PIN_SIZE(uopc_launch_args, 104);
PIN_SIZE(uopc_memory_info_args, 40);
PIN_SIZE(uopc_probe_args, 24);
PIN_SIZE(uopc_program_load_args, 64);
PIN_SIZE(uopc_program_unload_args, 24);
PIN_SIZE(uopc_queue_create_args, 32);
PIN_SIZE(uopc_queue_destroy_args, 24);
PIN_SIZE(uopc_queue_synchronize_args, 24);
PIN_SIZE(uopc_queue_wait_event_args, 32);
PIN_SIZE(uopc_render_args, 88);
PIN_SIZE(uopc_shutdown_args, 16);

// ABI 1.x, frozen at 1.5 (1.0's device table ended at 160 bytes, 1.1's plugin table at 128).
PIN_SIZE(uopc_op_query, 32);
PIN_SIZE(uopc_backend_api, 80);
PIN_SIZE(uopc_render_result, 56);
PIN_SIZE(uopc_device_api, 192);
PIN_SIZE(uopc_plugin_api, 136);
PIN_OFFSET(uopc_plugin_api, abi_major, 16);
PIN_OFFSET(uopc_plugin_api, probe, 48);
PIN_OFFSET(uopc_plugin_api, backend, 112);
PIN_OFFSET(uopc_plugin_api, device, 120);
PIN_OFFSET(uopc_plugin_api, initialize_with, 128);
PIN_OFFSET(uopc_device_api, device_count, 16);
PIN_OFFSET(uopc_device_api, launch, 112);
PIN_OFFSET(uopc_device_api, queue_synchronize, 152);
PIN_OFFSET(uopc_device_api, copy, 160);
PIN_OFFSET(uopc_device_api, memory_info, 168);
PIN_OFFSET(uopc_device_api, buffer_address, 176);
PIN_OFFSET(uopc_device_api, buffer_wrap, 184);
PIN_OFFSET(uopc_backend_api, compile, 56);
PIN_OFFSET(uopc_backend_api, render_kernel, 64);
PIN_OFFSET(uopc_backend_api, backend_target, 72);

TEST(PluginApi, DTypeValuesAreCoresDTypes) {
  EXPECT_EQ(UOPC_DTYPE_VOID, static_cast<int>(DType::kVoid));
  EXPECT_EQ(UOPC_DTYPE_BOOL, static_cast<int>(DType::kBool));
  EXPECT_EQ(UOPC_DTYPE_I32, static_cast<int>(DType::kI32));
  EXPECT_EQ(UOPC_DTYPE_U64, static_cast<int>(DType::kU64));
  EXPECT_EQ(UOPC_DTYPE_F16, static_cast<int>(DType::kF16));
  EXPECT_EQ(UOPC_DTYPE_BF16, static_cast<int>(DType::kBF16));
  EXPECT_EQ(UOPC_DTYPE_F64, static_cast<int>(DType::kF64));
  EXPECT_EQ(UOPC_DTYPE_F64 + 1, kNumDTypes);
}

TEST(PluginApi, ErrorCodesAreGrpcs) {
  EXPECT_EQ(UOPC_INVALID_ARGUMENT, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(UOPC_RESOURCE_EXHAUSTED, static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(UOPC_UNIMPLEMENTED, static_cast<int>(absl::StatusCode::kUnimplemented));
  EXPECT_EQ(UOPC_UNAUTHENTICATED, static_cast<int>(absl::StatusCode::kUnauthenticated));
  EXPECT_EQ(UOPC_DEVICE_LOST, 100);
}

TEST(PluginApi, VersionAndEntrySymbol) {
  EXPECT_EQ(UOPC_ABI_MAJOR, 2);
  EXPECT_EQ(UOPC_ABI_MINOR, 1);
  EXPECT_STREQ(UOPC_ENTRY_SYMBOL, "uopc_plugin_entry_v2");
  EXPECT_EQ(UOPC_ABI_V1_MAJOR, 1);
  EXPECT_EQ(UOPC_ABI_V1_MINOR, 5);
  EXPECT_STREQ(UOPC_ENTRY_SYMBOL_V1, "uopc_plugin_entry_v1");
}

// The list of calls is the table: one slot per call, in the list's order, nothing between.
TEST(PluginApi, TheTableIsTheListOfCalls) {
  std::vector<size_t> offsets;
#define UOPC_OFFSET_(call, returns, required) offsets.push_back(offsetof(uopc_api, call));
  UOPC_API_CALLS(UOPC_OFFSET_)
#undef UOPC_OFFSET_
  ASSERT_EQ(offsets.size(), 36u);
  EXPECT_EQ(offsets.front(), offsetof(uopc_api, caps) + sizeof(uint64_t));
  for (size_t k = 1; k < offsets.size(); ++k) EXPECT_EQ(offsets[k], offsets[k - 1] + sizeof(void*));
  EXPECT_EQ(offsets.back() + sizeof(void*), sizeof(uopc_api));
}

// plugin_sdk.h's out-of-memory error is a static of each file that includes it: an error
// one file of a plugin made is destroyed by another's error_destroy, which leaves the
// other file's copy alone too (it freed any copy but its own).
TEST(PluginSdk, AnOutOfMemoryErrorFromAnotherFileIsNotFreed) {
  uopc_error other_files = uopc_sdk_oom_error;  // (at another address, as in another file)
  uopc_sdk_error_destroy(&other_files);         // (free() of it would abort)
  EXPECT_EQ(uopc_sdk_error_code(&other_files), UOPC_RESOURCE_EXHAUSTED);
  uopc_error* e = uopc_sdk_error(UOPC_INTERNAL, "made %d", 1);
  EXPECT_EQ(uopc_sdk_error_code(e), UOPC_INTERNAL);
  uopc_sdk_error_destroy(e);
}

}  // namespace
}  // namespace uopc
