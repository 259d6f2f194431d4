#include "devices/plugin.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>

#include "absl/strings/str_cat.h"

#include "core/env.h"

namespace uopc {
namespace {

void HostLog(void*, uopc_log_level level, const char* msg, uint64_t len) {
  if (level < UOPC_LOG_WARNING && EnvInt("UOPC_DEBUG", 0, 9, 0) < 1) return;
  std::cerr << std::string(msg, len) << "\n";
}

const uopc_host_api kHost = {
    .struct_size = sizeof(uopc_host_api),
    .ext = nullptr,
    .abi_major = UOPC_ABI_MAJOR,
    .abi_minor = UOPC_ABI_MINOR,
    .reserved = 0,
    .log = HostLog,
    .log_ctx = nullptr,
};

// The table of ABI 1.0 ends with `device`: a plugin table smaller than that is corrupt.
constexpr uint64_t kMinPluginTable = offsetof(uopc_plugin_api, device) + sizeof(void*);

}  // namespace

absl::StatusOr<std::unique_ptr<Plugin>> Plugin::Load(const std::string& path) {
  auto fail = [&](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat("plugin ", path, ": ", why));
  };
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat("plugin ", path, ": no such file"));
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return fail(absl::StrCat("cannot be loaded: ", dlerror()));
  auto entry = reinterpret_cast<uopc_plugin_entry_fn>(dlsym(h, UOPC_ENTRY_SYMBOL));
  if (!entry) {
    // Look for another major's entry, to say which ABI the plugin was built for.
    for (int major = 0; major < 16; ++major)
      if (major != UOPC_ABI_MAJOR && dlsym(h, absl::StrCat("uopc_plugin_entry_v", major).c_str()))
        return fail(absl::StrCat("built for plugin ABI major ", major, "; this host speaks ABI ",
                                 UOPC_ABI_MAJOR, ".", UOPC_ABI_MINOR));
    return fail("no " UOPC_ENTRY_SYMBOL " symbol (not a uopc plugin, or built for another ABI)");
  }
  const uopc_plugin_api* api = entry(&kHost);
  if (!api)
    return fail(absl::StrCat("its entry returned no table: it refuses this host (ABI ",
                             UOPC_ABI_MAJOR, ".", UOPC_ABI_MINOR, ")"));
  if (api->abi_major != UOPC_ABI_MAJOR)
    return fail(absl::StrCat("plugin ABI ", api->abi_major, ".", api->abi_minor,
                             "; this host speaks ABI ", UOPC_ABI_MAJOR, ".", UOPC_ABI_MINOR,
                             " (the major must match)"));
  if (api->struct_size < kMinPluginTable)
    return fail(absl::StrCat("its table is ", api->struct_size, " bytes; ABI ", UOPC_ABI_MAJOR,
                             ".0 needs ", kMinPluginTable));
  for (auto slot :
       {(void*)api->error_destroy, (void*)api->error_code, (void*)api->error_message,
        (void*)api->probe, (void*)api->initialize, (void*)api->blob_destroy, (void*)api->blob_data})
    if (!slot)
      return fail("its table has an empty slot (plugins fill every slot: see plugin_sdk.h)");
  std::unique_ptr<Plugin> p(new Plugin());
  p->handle_ = h;
  p->api_ = api;
  p->path_ = path;
  p->name_ = api->name ? api->name : "?";
  if (api->probe() <= 0) {  // unusable here: its initialize may say why (a missing driver)
    std::string why = "its probe said no";
    if (absl::Status s = p->Initialize(); !s.ok())
      why = std::string(s.message());
    else
      p->Take(api->shutdown()).IgnoreError();
    return absl::UnavailableError(
        absl::StrCat("plugin ", path, ": unusable on this machine (", why, ")"));
  }
  if (absl::Status s = p->Initialize(); !s.ok())
    return fail(absl::StrCat("initialize failed: ", s.message()));
  return p;
}

std::vector<std::pair<std::string, std::string>> Plugin::EnvironmentOptions(
    const std::string& plugin) {
  std::string prefix = "UOPC_";
  for (char c : plugin) prefix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  prefix += "_";
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq <= prefix.size() || kv.compare(0, prefix.size(), prefix))
      continue;
    std::string key = kv.substr(prefix.size(), eq - prefix.size());
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.emplace_back(key, kv.substr(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status Plugin::Initialize() const {
  if (!Has(api_, &uopc_plugin_api::initialize_with)) return Take(api_->initialize());
  std::vector<std::pair<std::string, std::string>> named = EnvironmentOptions(name_);
  std::vector<uopc_option> options;
  for (const auto& [k, v] : named) {
    uopc_option o{};
    o.struct_size = sizeof o;
    o.name = k.c_str();
    o.value = v.c_str();
    options.push_back(o);
  }
  uopc_initialize_args args{};
  args.struct_size = sizeof args;
  args.options = options.data();
  args.num_options = options.size();
  absl::Status s = Take(api_->initialize_with(&args));
  if (absl::IsUnimplemented(s)) return Take(api_->initialize());  // (an SDK stub)
  return s;
}

Plugin::~Plugin() = default;  // never dlclose: see plugin_api.h

std::string Plugin::Version() const {
  return absl::StrCat(api_->version ? api_->version : "?", " (ABI ", api_->abi_major, ".",
                      api_->abi_minor, ", uop format ", api_->uop_format_version, ")");
}

absl::Status Plugin::Take(uopc_error* e) const {
  if (!e) return absl::OkStatus();
  uopc_code code = api_->error_code(e);
  const char* msg = nullptr;
  uint64_t len = 0;
  api_->error_message(e, &msg, &len);
  std::string text(msg ? msg : "", msg ? len : 0);
  api_->error_destroy(e);
  if (code == UOPC_DEVICE_LOST) return absl::UnavailableError(absl::StrCat("DEVICE_LOST: ", text));
  if (code <= UOPC_OK || code > UOPC_UNAUTHENTICATED)
    return absl::UnknownError(absl::StrCat("(code ", code, ") ", text));
  return absl::Status(static_cast<absl::StatusCode>(code), text);
}

absl::Status Plugin::Missing(const char* fn) const {
  return absl::UnimplementedError(absl::StrCat("plugin ", name_, " (ABI ", api_->abi_major, ".",
                                               api_->abi_minor, ") has no ", fn));
}

}  // namespace uopc
