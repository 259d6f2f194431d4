#include "backends/cuda/nvrtc.h"

#include <algorithm>
#include <cstdlib>

#include <dlfcn.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace uopc {
namespace {

// The first of `names` that dlopen finds, trying each folder first; the reasons otherwise.
void* Open(const std::vector<std::string>& folders, const std::vector<std::string>& names,
           std::string* why) {
  for (const std::string& dir : folders)
    for (const std::string& n : names)
      if (void* h = dlopen((dir + "/" + n).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  for (const std::string& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    absl::StrAppend(why, why->empty() ? "" : "; ", dlerror());
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<const Nvrtc*> Nvrtc::Load() {
  static const absl::StatusOr<const Nvrtc*> loaded = []() -> absl::StatusOr<const Nvrtc*> {
    std::vector<std::string> folders;
    if (const char* p = std::getenv("UOPC_CUDA_PATH"); p && *p) folders.push_back(absl::StrCat(p, "/lib64"));
    folders.push_back("/usr/local/cuda/lib64");
    std::string why;
    void* h = Open(folders, {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}, &why);
    if (!h)
      return absl::NotFoundError(absl::StrCat("NVRTC not found (looked in ",
                                              absl::StrJoin(folders, ", "),
                                              " and the loader's path: ", why, ")"));
    auto n = std::unique_ptr<Nvrtc>(new Nvrtc());
    bool ok = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      ok = ok && fn;
    };
    int (*version)(int*, int*) = nullptr;
    int (*num_archs)(int*) = nullptr;
    int (*archs)(int*) = nullptr;
    sym(n->create_, "nvrtcCreateProgram");
    sym(n->compile_, "nvrtcCompileProgram");
    sym(n->destroy_, "nvrtcDestroyProgram");
    sym(n->log_size_, "nvrtcGetProgramLogSize");
    sym(n->log_, "nvrtcGetProgramLog");
    sym(n->cubin_size_, "nvrtcGetCUBINSize");
    sym(n->cubin_, "nvrtcGetCUBIN");
    sym(n->ptx_size_, "nvrtcGetPTXSize");
    sym(n->ptx_, "nvrtcGetPTX");
    sym(n->error_, "nvrtcGetErrorString");
    sym(version, "nvrtcVersion");
    sym(num_archs, "nvrtcGetNumSupportedArchs");
    sym(archs, "nvrtcGetSupportedArchs");
    if (!ok) return absl::FailedPreconditionError("NVRTC lacks a function the CUDA backend needs");
    int major = 0, minor = 0, count = 0;
    version(&major, &minor);
    n->version_ = absl::StrCat(major, ".", minor);
    if (num_archs(&count) == 0 && count > 0) {
      n->archs_.resize(count);
      archs(n->archs_.data());
    }
    return n.release();  // for the life of the process, as the library is
  }();
  return loaded;
}

absl::StatusOr<Nvrtc::Binary> Nvrtc::Compile(const std::string& source, int arch,
                                             const std::vector<std::string>& options) const {
  // a cubin for a known arch; else PTX of the newest arch below it, which the driver JITs
  const bool cubin = std::find(archs_.begin(), archs_.end(), arch) != archs_.end();
  int target = arch;
  if (!cubin) {
    target = 0;
    for (int a : archs_)
      if (a < arch) target = std::max(target, a);
    if (target == 0)
      return absl::FailedPreconditionError(absl::StrCat(
          "NVRTC ", version_, " knows no architecture at or below sm_", arch));
  }
  std::vector<std::string> opts = options;
  opts.push_back(absl::StrCat("--gpu-architecture=", cubin ? "sm_" : "compute_", target));
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  Program p = nullptr;
  if (int rc = create_(&p, source.c_str(), "uopc.cu", 0, nullptr, nullptr); rc != 0)
    return absl::InternalError(absl::StrCat("NVRTC: cannot create a program: ", error_(rc)));
  int rc = compile_(p, static_cast<int>(argv.size()), argv.data());
  size_t n = 0;
  std::string log;
  if (log_size_(p, &n) == 0 && n > 1) {
    log.resize(n);
    log_(p, log.data());
    log.resize(n - 1);
  }
  if (rc != 0) {
    destroy_(&p);
    if (log.size() > 4000) log = log.substr(0, 4000) + "...";
    return absl::InternalError(absl::StrCat("NVRTC ", version_, " failed (", error_(rc), ", ",
                                            absl::StrJoin(opts, " "), ") on generated CUDA:\n",
                                            log));
  }
  Binary b;
  b.ptx = !cubin;
  b.log = std::move(log);
  size_t size = 0;
  if ((cubin ? cubin_size_(p, &size) : ptx_size_(p, &size)) == 0) {
    b.bytes.resize(size);
    if (cubin) cubin_(p, b.bytes.data()); else ptx_(p, b.bytes.data());
  }
  destroy_(&p);
  if (b.bytes.empty()) return absl::InternalError("NVRTC produced no binary");
  return b;
}

namespace {

// The number in `line` just before `what` ("0" in "0 bytes spill stores"), else -1.
int64_t NumberBefore(absl::string_view line, absl::string_view what) {
  const size_t at = line.find(what);
  if (at == absl::string_view::npos || at == 0) return -1;
  size_t begin = line.find_last_not_of("0123456789", at - 1);
  begin = begin == absl::string_view::npos ? 0 : begin + 1;
  int64_t v = -1;
  return absl::SimpleAtoi(line.substr(begin, at - begin), &v) ? v : -1;
}

}  // namespace

std::vector<PtxasInfo> ParsePtxasInfo(absl::string_view log) {
  constexpr absl::string_view kEntry = "Compiling entry function '";
  std::vector<PtxasInfo> out;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (size_t at = line.find(kEntry); at != absl::string_view::npos) {
      absl::string_view name = line.substr(at + kEntry.size());
      out.push_back({std::string(name.substr(0, name.find('\'')))});
      continue;
    }
    if (out.empty()) continue;
    // "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"; "Used 32 registers"
    PtxasInfo& k = out.back();
    auto take = [&](absl::string_view what, int64_t* v) {
      if (int64_t n = NumberBefore(line, what); n >= 0) *v = n;
    };
    take(" bytes stack frame", &k.stack_bytes);
    take(" bytes spill stores", &k.spill_store_bytes);
    take(" bytes spill loads", &k.spill_load_bytes);
    if (int64_t n = NumberBefore(line, " registers"); n >= 0) k.registers = static_cast<int>(n);
  }
  return out;
}

}  // namespace uopc
