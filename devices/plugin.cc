#include "devices/plugin.h"

#include <algorithm>
#include <cctype>
#include <iostream>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "core/env.h"
#include "devices/plugin_v1.h"

namespace uopc {
namespace {

const uopc_host_api kHost = {
    .struct_size = sizeof(uopc_host_api),
    .ext = nullptr,
    .abi_major = UOPC_ABI_MAJOR,
    .abi_minor = UOPC_ABI_MINOR,
    .reserved = 0,
    .log = Plugin::Log,
    .log_ctx = nullptr,
};

// The table of ABI 2.0 ends with queue_synchronize: a smaller table is corrupt.
constexpr uint64_t kMinTable =
    offsetof(uopc_api, queue_synchronize) + sizeof(uopc_api::queue_synchronize);

// Whether a call of need `required` (R, B, D or O: plugin_api.h) must be in a table of `caps`.
bool Required(char required, uint64_t caps) {
  return required == 'R' || (required == 'B' && (caps & UOPC_PLUGIN_CAP_BACKEND)) ||
         (required == 'D' && (caps & UOPC_PLUGIN_CAP_DEVICE));
}

}  // namespace

void Plugin::Log(void*, uopc_log_level level, const char* msg, uint64_t len) {
  if (level < UOPC_LOG_WARNING && EnvInt("UOPC_DEBUG", 0, 9, 0) < 1) return;
  std::cerr << std::string(msg, len) << "\n";
}

absl::StatusOr<std::unique_ptr<Plugin>> Plugin::Load(const std::string& path) {
  auto fail = [&](absl::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat("plugin ", path, ": ", why));
  };
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat("plugin ", path, ": no such file"));
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return fail(absl::StrCat("cannot be loaded: ", dlerror()));
  std::unique_ptr<Plugin> p(new Plugin());
  p->handle_ = h;
  p->path_ = path;
  const std::string speaks = absl::StrCat("ABI ", UOPC_ABI_MAJOR, ".", UOPC_ABI_MINOR, " and 1.x");
  if (auto entry = reinterpret_cast<uopc_plugin_entry_v2_fn>(dlsym(h, UOPC_ENTRY_SYMBOL))) {
    const uopc_api* api = entry(&kHost);
    if (!api)
      return fail(absl::StrCat("its entry returned no table: it refuses this host (", speaks, ")"));
    if (api->abi_major != UOPC_ABI_MAJOR)
      return fail(absl::StrCat("plugin ABI ", api->abi_major, ".", api->abi_minor,
                               " from its " UOPC_ENTRY_SYMBOL "; this host speaks ", speaks,
                               " (a table's major must be its entry's)"));
    if (api->struct_size < kMinTable)
      return fail(absl::StrCat("its table is ", api->struct_size, " bytes; ABI ", UOPC_ABI_MAJOR,
                               ".0 needs ", kMinTable));
    p->api_ = api;
#define UOPC_REQUIRE_(call, returns, required)                       \
  if (Required(#required[0], api->caps) && !p->Has(&uopc_api::call)) \
    return fail("its table has no " #call                            \
                ", which a plugin of its caps must have (see "       \
                "plugin_api.h; plugin_sdk.h fills a stub for every call)");
    UOPC_API_CALLS(UOPC_REQUIRE_)
#undef UOPC_REQUIRE_
    p->Describe(*api);
  } else if (auto entry_v1 =
                 reinterpret_cast<uopc_plugin_entry_fn>(dlsym(h, UOPC_ENTRY_SYMBOL_V1))) {
    const uopc_plugin_api* api = entry_v1(PluginV1::Host());
    if (!api)
      return fail(absl::StrCat("its entry returned no table: it refuses this host (", speaks, ")"));
    absl::StatusOr<std::unique_ptr<PluginV1>> v1 = PluginV1::Check(api);
    if (!v1.ok()) return fail(v1.status().message());
    p->v1_ = *std::move(v1);
    p->Describe(*api);
  } else {
    // Look for another major's entry, to say which ABI the plugin was built for.
    for (int major = 3; major < 16; ++major)
      if (dlsym(h, absl::StrCat("uopc_plugin_entry_v", major).c_str()))
        return fail(
            absl::StrCat("built for plugin ABI major ", major, "; this host speaks ", speaks));
    return fail("no " UOPC_ENTRY_SYMBOL " or " UOPC_ENTRY_SYMBOL_V1
                " symbol (not a uopc plugin, or built for another ABI)");
  }
  if (absl::Status s = p->Start(); !s.ok()) {
    if (absl::IsUnavailable(s))
      return absl::UnavailableError(
          absl::StrCat("plugin ", path, ": unusable on this machine (", s.message(), ")"));
    return fail(absl::StrCat("initialize failed: ", s.message()));
  }
  return p;
}

template <typename Table>
void Plugin::Describe(const Table& t) {
  name_ = t.name ? t.name : "?";
  version_ = t.version ? t.version : "?";
  abi_major_ = t.abi_major;
  abi_minor_ = t.abi_minor;
  uop_format_ = t.uop_format_version;
  caps_ = t.caps;
}

absl::Status Plugin::Start() {
  uopc_probe_args probe{};
  absl::Status s = Call(&probe);
  if (!s.ok() && !absl::IsUnimplemented(s)) return absl::UnavailableError(s.message());
  const bool refused = s.ok() && probe.score <= 0;  // (without a reason: initialize may say)
  std::vector<std::pair<std::string, std::string>> named = EnvironmentOptions(name_);
  std::vector<uopc_option> options;
  for (const auto& [k, v] : named) {
    uopc_option o{};
    o.struct_size = sizeof o;
    o.name = k.c_str();
    o.value = v.c_str();
    options.push_back(o);
  }
  uopc_initialize_args init{};
  init.options = options.data();
  init.num_options = options.size();
  s = Call(&init);
  if (refused) {
    if (s.ok()) {
      uopc_shutdown_args down{};
      Call(&down).IgnoreError();
    }
    return absl::UnavailableError(s.ok() || absl::IsUnimplemented(s) ? "its probe said no"
                                                                      : s.message());
  }
  if (absl::IsUnimplemented(s)) return absl::OkStatus();  // nothing to initialize
  if (absl::IsUnavailable(s)) return absl::FailedPreconditionError(s.message());
  return s;
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

Plugin::~Plugin() = default;  // never dlclose: see plugin_api.h

std::string Plugin::Version() const {
  return absl::StrCat(version_, " (ABI ", abi_major_, ".", abi_minor_, ", uop format ", uop_format_,
                      ")");
}

absl::Status Plugin::StatusOf(uopc_code code, absl::string_view message) {
  if (code == UOPC_DEVICE_LOST)
    return absl::UnavailableError(absl::StrCat("DEVICE_LOST: ", message));
  if (code <= UOPC_OK || code > UOPC_UNAUTHENTICATED)  // (an error must have a code)
    return absl::UnknownError(absl::StrCat("(code ", code, ") ", message));
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

absl::Status Plugin::Take(uopc_error* e) const {
  if (!e) return absl::OkStatus();
  if (v1_) return v1_->Take(e);
  uopc_error_describe_args d{};
  d.struct_size = sizeof d;
  d.error = e;
  api_->error_describe(&d);
  absl::Status s = StatusOf(
      d.code, absl::string_view(d.message ? d.message : "", d.message ? d.message_size : 0));
  uopc_error_destroy_args x{};
  x.struct_size = sizeof x;
  x.error = e;
  api_->error_destroy(&x);
  return s;
}

std::vector<std::string> Plugin::AbsentCalls() const {
  std::vector<std::string> out;
  if (!api_) return out;
#define UOPC_ABSENT_(call, returns, required) \
  if (!Has(&uopc_api::call)) out.push_back(#call);
  UOPC_API_CALLS(UOPC_ABSENT_)
#undef UOPC_ABSENT_
  return out;
}

absl::Status Plugin::Missing(const char* call) const {
  return absl::UnimplementedError(
      absl::StrCat("plugin ", name_, " (ABI ", abi_major_, ".", abi_minor_, ") has no ", call));
}

// Each call: its args' size set, the plugin's own slot (or its 1.x slots), the error taken.
#define UOPC_RESULT_E(expr) return Take(expr)
#define UOPC_RESULT_V(expr) \
  expr;                     \
  return absl::OkStatus()
#define UOPC_PLUGIN_CALL_(call, returns, required)            \
  absl::Status Plugin::Call(uopc_##call##_args* args) const { \
    args->struct_size = sizeof *args;                         \
    if (v1_) return v1_->Call(args);                          \
    if (!Has(&uopc_api::call)) return Missing(#call);         \
    UOPC_RESULT_##returns(api_->call(args));                  \
  }
UOPC_API_CALLS(UOPC_PLUGIN_CALL_)
#undef UOPC_PLUGIN_CALL_

}  // namespace uopc
