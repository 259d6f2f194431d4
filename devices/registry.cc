#include "devices/registry.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "core/status_macros.h"

namespace uopc {
namespace {

std::vector<std::string> Split(const char* env, absl::string_view seps) {
  std::vector<std::string> out;
  if (!env) return out;
  for (absl::string_view p : absl::StrSplit(env, absl::ByAnyChar(seps), absl::SkipEmpty()))
    out.emplace_back(p);
  return out;
}

std::vector<std::string> ScanDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (absl::StartsWith(n, "libuopc_plugin_") && absl::EndsWith(n, ".so"))
      out.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string ExePath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : "";
}

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? buf : p;
}

}  // namespace

DiscoveryOptions DiscoveryOptions::FromEnvironment() {
  DiscoveryOptions o;
  std::string exe = ExePath();
  if (!exe.empty()) {
    std::string dir = exe.substr(0, exe.rfind('/'));
    o.dirs = {dir, dir + "/uopc_plugins"};
    std::string runfiles = std::getenv("RUNFILES_DIR")  ? std::getenv("RUNFILES_DIR")
                           : std::getenv("TEST_SRCDIR") ? std::getenv("TEST_SRCDIR")
                                                        : exe + ".runfiles";
    DIR* d = opendir((runfiles + "/uopc/backends").c_str());
    if (d) {
      std::vector<std::string> subs;
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') subs.push_back(runfiles + "/uopc/backends/" + e->d_name);
      closedir(d);
      std::sort(subs.begin(), subs.end());
      o.dirs.insert(o.dirs.end(), subs.begin(), subs.end());
    }
  }
  for (const std::string& d : Split(std::getenv("UOPC_PLUGIN_DIRS"), ":")) o.dirs.push_back(d);
  o.paths = Split(std::getenv("UOPC_PLUGINS"), ",:");
  o.required = Split(std::getenv("UOPC_DEVICES"), ",");
  return o;
}

DeviceRegistry& DeviceRegistry::Get() {
  static DeviceRegistry* registry = Discover(DiscoveryOptions::FromEnvironment()).release();
  return *registry;
}

std::unique_ptr<DeviceRegistry> DeviceRegistry::Discover(const DiscoveryOptions& options) {
  auto r = std::make_unique<DeviceRegistry>();
  std::vector<std::string> candidates;
  for (const std::string& dir : options.dirs)
    for (std::string& f : ScanDir(dir)) candidates.push_back(std::move(f));
  candidates.insert(candidates.end(), options.paths.begin(), options.paths.end());
  std::vector<std::string> seen;  // real paths: one file found twice loads once
  for (const std::string& path : candidates) {
    std::string real = RealPath(path);
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
    seen.push_back(real);
    absl::StatusOr<std::unique_ptr<Plugin>> p = Plugin::Load(path);
    if (p.ok()) {
      auto same = std::find_if(r->plugins_.begin(), r->plugins_.end(),
                               [&](const auto& q) { return q->name() == (*p)->name(); });
      if (same != r->plugins_.end()) {
        p = absl::AlreadyExistsError(absl::StrCat("plugin ", path, ": plugin '", (*p)->name(),
                                                  "' is already loaded from ", (*same)->path()));
      }
    }
    if (!p.ok()) {  // (a plugin for hardware this machine lacks is no news: kept, not logged)
      if (options.log_failures && !absl::IsUnavailable(p.status()))
        std::cerr << "uopc: " << p.status().message() << "\n";
      r->failures_.push_back({path, p.status()});
      continue;
    }
    const Plugin& plugin = **p;
    r->plugins_.push_back(std::move(*p));
    uopc_device_count_args count{};
    const uint32_t n = plugin.Call(&count).ok() ? count.count : 0;  // (none: a backend only)
    if (n > kMaxDevicesPerPlugin) {
      r->failures_.push_back(
          {plugin.path(), absl::OutOfRangeError(absl::StrCat(
                              "plugin ", plugin.name(), " (", plugin.path(), ") reports ", n,
                              " devices; at most ", kMaxDevicesPerPlugin,
                              " are accepted (a broken plugin?)"))});
      if (options.log_failures) std::cerr << "uopc: " << r->failures_.back().status.message() << "\n";
      continue;
    }
    for (uint32_t i = 0; i < n; ++i) {
      absl::StatusOr<std::unique_ptr<Device>> d = Device::Open(plugin, i);
      if (!d.ok()) {
        r->failures_.push_back({plugin.path(), d.status()});
        continue;
      }
      if (r->GetDevice((*d)->name()).ok()) {
        r->failures_.push_back(
            {plugin.path(), absl::AlreadyExistsError(
                                absl::StrCat("device ", (*d)->name(), " is provided twice"))});
        continue;
      }
      r->devices_.push_back(std::move(*d));
    }
  }
  r->required_names_ = options.required;
  for (const std::string& name : options.required) {
    if (absl::StatusOr<Device*> d = r->GetDevice(name); !d.ok()) {
      r->required_ = absl::NotFoundError(absl::StrCat(
          "UOPC_DEVICES asks for ", name, ", which is not available: ", d.status().message()));
      break;
    }
  }
  return r;
}

std::vector<Device*> DeviceRegistry::devices() const {
  std::vector<Device*> out;
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

std::vector<Device*> DeviceRegistry::DevicesOf(const Plugin& plugin) const {
  std::vector<Device*> out;
  for (const auto& d : devices_)
    if (&d->plugin() == &plugin) out.push_back(d.get());
  return out;
}

std::string DeviceRegistry::WhatIsMissing() const {
  std::vector<std::string> names;
  for (const auto& d : devices_) names.push_back(d->name());
  std::string out = absl::StrCat("devices: ", names.empty() ? "none" : absl::StrJoin(names, ", "));
  for (const Failure& f : failures_) absl::StrAppend(&out, "; not loaded: ", f.status.message());
  if (plugins_.empty() && failures_.empty())
    absl::StrAppend(&out, "; no plugin found (set UOPC_PLUGIN_DIRS or UOPC_PLUGINS)");
  return out;
}

absl::StatusOr<Device*> DeviceRegistry::GetDevice(absl::string_view name) const {
  if (absl::StartsWithIgnoreCase(name, "rank") && name.find('/') != absl::string_view::npos) {
    const absl::string_view rank_text = name.substr(4, name.find('/') - 4),
                            local = name.substr(name.find('/') + 1);
    int rank = -1;
    if (!absl::SimpleAtoi(rank_text, &rank) || rank < 0)
      return absl::NotFoundError(absl::StrCat(
          "no device ", name, " (a device of another rank is named rankN/NAME: rank1/CPU:0)"));
    std::lock_guard<std::mutex> lock(mu_);
    if (job_rank_ < 0)
      return absl::NotFoundError(absl::StrCat(
          "no device ", name, ": it is rank ", rank,
          "'s, and this process is in no job (start it under uopc_launch, and join the job)"));
    ASSIGN_OR_RETURN(Device * like, GetDevice(local));
    if (rank == job_rank_) return like;
    const std::string full = absl::StrCat("rank", rank, "/", like->name());
    for (const auto& p : peers_)
      if (p->name() == full) return p.get();
    peers_.push_back(Device::Peer(rank, *like));
    return peers_.back().get();
  }
  std::string want(name);
  if (want.find(':') == std::string::npos) want += ":0";
  for (const auto& d : devices_)
    if (absl::EqualsIgnoreCase(d->name(), want)) return d.get();
  return absl::NotFoundError(absl::StrCat("no device ", want, " (", WhatIsMissing(), ")"));
}

void DeviceRegistry::SetJobRank(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  job_rank_ = rank;
}

int DeviceRegistry::job_rank() const {
  std::lock_guard<std::mutex> lock(mu_);
  return job_rank_;
}

absl::StatusOr<Device*> DeviceRegistry::Default() const {
  if (!required_.ok()) return required_;
  if (!required_names_.empty()) return GetDevice(required_names_.front());
  if (devices_.empty())
    return absl::NotFoundError(absl::StrCat("no device at all (", WhatIsMissing(), ")"));
  return devices_.front().get();
}

}  // namespace uopc
