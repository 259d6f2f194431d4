#include "tests/backends/conformance/conformance.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include "core/alu.h"
#include "core/element.h"
#include "core/float16.h"
#include "core/interpreter.h"
#include "core/matmul_call.h"
#include "core/serialize.h"
#include "core/verify.h"
#include "passes/block_reduce.h"
#include "passes/launch_dims.h"
#include "passes/linearize.h"
#include "passes/reduce_to_accumulators.h"
#include "passes/thread_outer_loop.h"

namespace uopc {
namespace {

constexpr int64_t kN = 64;      // elements per case
constexpr int64_t kGuard = 16;  // guard elements on each side of an output
constexpr uint8_t kSentinel = 0xa5;
// The launch cases on a GPU: blocks of 4 threads (2 of them for the 8 sums of the
// reduction); a CPU's outer loop goes to its cores.
constexpr LaunchLimits kGpuLaunchCases{4, 1u << 31};

const DType kDTypes[] = {DType::kBool, DType::kI8,  DType::kU8,  DType::kI16, DType::kU16,
                         DType::kI32,  DType::kU32, DType::kI64, DType::kU64, DType::kF16,
                         DType::kBF16, DType::kF32, DType::kF64};

// ---- inputs ----

std::vector<Arg> Values(DType t, uint32_t seed, Ops op, int operand) {
  std::mt19937_64 rng(seed);
  std::vector<Arg> v;
  if (IsBool(t)) {
    for (int64_t k = 0; k < kN; ++k)
      v.push_back(Arg(static_cast<bool>((rng() >> (operand + 3)) & 1)));
    return v;
  }
  if (IsFloat(t)) {
    double tiny = t == DType::kF64   ? 4.9e-324
                  : t == DType::kF32 ? 1.4e-45
                  : t == DType::kF16 ? 5.96e-8
                                     : 9.2e-41;
    double big = t == DType::kF16 ? 65504 : t == DType::kBF16 ? 3.0e38 : 1e30;
    std::vector<double> edge = {0.0,  -0.0,  1.0,        -1.0,   0.5,      1.5,       -2.5,
                                3.0,  1e-3,  big,        -big,   INFINITY, -INFINITY, NAN,
                                tiny, -tiny, 2.0 * tiny, 6.1e-5, 0.1,      100.0};
    std::rotate(edge.begin(), edge.begin() + 3 * operand % edge.size(), edge.end());
    for (double e : edge) v.push_back(CastValue(Arg(e), DType::kF64, t));
    std::uniform_real_distribution<double> mant(1.0, 2.0);
    std::uniform_int_distribution<int> ex(-8, 8);
    while (static_cast<int64_t>(v.size()) < kN) {
      double d = std::ldexp(mant(rng), ex(rng)) * ((rng() & 1) ? -1 : 1);
      v.push_back(CastValue(Arg(d), DType::kF64, t));
    }
    return v;
  }
  int bits = DTypeSize(t) * 8;
  std::vector<int64_t> edge = {0,
                               1,
                               -1,
                               2,
                               -2,
                               3,
                               -7,
                               7,
                               100,
                               -100,
                               DTypeMin(t),
                               DTypeMax(t),
                               DTypeMin(t) + 1,
                               DTypeMax(t) - 1};
  if (t == DType::kU64) edge.push_back(static_cast<int64_t>(~uint64_t{0}));
  std::rotate(edge.begin(), edge.begin() + 5 * operand % edge.size(), edge.end());
  for (int64_t e : edge) v.push_back(CastValue(Arg(e), DType::kI64, t));
  while (static_cast<int64_t>(v.size()) < kN) {
    int64_t r = static_cast<int64_t>(rng());
    if (rng() % 3 == 0) r %= 1000;  // small values too
    v.push_back(CastValue(Arg(r), DType::kI64, t));
  }
  if (operand == 1 && (op == Ops::SHL || op == Ops::SHR))  // shift counts around the width
    for (int64_t k = 0; k < kN; ++k) v[k] = CastValue(Arg(k % (bits + 4) - 2), DType::kI64, t);
  if (operand == 1 && (op == Ops::FLOORDIV || op == Ops::MOD))  // division by zero is undefined
    for (Arg& a : v)
      if (!Truthy(a)) a = CastValue(Arg(int64_t{3}), DType::kI64, t);
  return v;
}

std::vector<uint8_t> Bytes(const std::vector<Arg>& v, DType t) {
  std::vector<uint8_t> out(v.size() * DTypeSize(t));
  for (size_t k = 0; k < v.size(); ++k) StoreElement(out.data(), t, static_cast<int64_t>(k), v[k]);
  return out;
}

// ---- comparison ----

// Float bits as an integer that orders like the values (for ulp distances).
int64_t Ordered(const uint8_t* p, DType t) {
  int64_t x;
  switch (DTypeSize(t)) {
    case 2: {
      int16_t v;
      std::memcpy(&v, p, 2);
      x = v;
      return x < 0 ? INT16_MIN - x : x;
    }
    case 4: {
      int32_t v;
      std::memcpy(&v, p, 4);
      x = v;
      return x < 0 ? INT32_MIN - x : x;
    }
    default: {
      std::memcpy(&x, p, 8);
      return x < 0 ? INT64_MIN - x : x;
    }
  }
}

// "" if `got` matches `want` (kN elements of t), else what differs first.
std::string Compare(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got, DType t,
                    int ulps, const std::vector<std::vector<Arg>>& inputs) {
  int size = DTypeSize(t);
  for (int64_t k = 0; k < kN; ++k) {
    const uint8_t *w = &want[k * size], *g = &got[k * size];
    if (!std::memcmp(w, g, size)) continue;
    if (IsFloat(t)) {
      double wv = LoadElement(w, t, 0).Get<double>(), gv = LoadElement(g, t, 0).Get<double>();
      if (std::isnan(wv) && std::isnan(gv)) continue;
      if (ulps > 0 && !std::isnan(wv) && !std::isnan(gv) && std::isinf(wv) == std::isinf(gv) &&
          std::llabs(Ordered(w, t) - Ordered(g, t)) <= ulps)
        continue;
    }
    std::string in;
    for (const auto& v : inputs) {
      const Arg& a = v[k];
      in += (in.empty() ? "" : ", ") + (a.Is<double>() ? absl::StrCat(a.Get<double>())
                                        : a.Is<bool>() ? absl::StrCat(a.Get<bool>())
                                                       : absl::StrCat(a.Get<int64_t>()));
    }
    auto show = [&](const uint8_t* p) {
      Arg a = LoadElement(p, t, 0);
      return a.Is<double>() ? absl::StrCat(a.Get<double>())
             : a.Is<bool>() ? absl::StrCat(a.Get<bool>())
                            : absl::StrCat(a.Get<int64_t>());
    };
    return absl::StrCat("element ", k, " (inputs ", in, "): got ", show(g), ", want ", show(w));
  }
  return "";
}

// ---- running kernels ----

struct KernelCase {
  std::string section, name;
  std::string op_row;  // support matrix row ("add"), empty if not in the matrix
  DType dtype = DType::kVoid;
  UOp kernel;
  std::vector<DType> in_types;
  std::vector<std::vector<Arg>> inputs;  // by slot 0..
  DType out_type = DType::kVoid;
  DType to = DType::kVoid;  // a cast's target, whose support is asked too
  int ulps = 0;
  std::vector<std::pair<std::string, int64_t>> vars;  // the kernel's VARs and their values
  bool map_launch = false;  // mapped to several blocks (threads) by the target's launch pass
};

std::vector<KernelCase> LoopCases();

class Suite {
 public:
  Suite(Device& d, const ConformanceOptions& o) : d_(d), opt_(o) {}
  ConformanceReport Run();

 private:
  void Add(ConformanceCase::Status s, const std::string& section, const std::string& name,
           const std::string& detail = "") {
    report_.cases.push_back({section, name, s, detail});
  }
  void Check(const std::string& section, const std::string& name, bool ok,
             const std::string& detail) {
    Add(ok ? ConformanceCase::kPass : ConformanceCase::kFail, section, name, ok ? "" : detail);
  }
  const Plugin& P() const { return d_.plugin(); }
  bool Wanted(const std::string& name) const {
    return opt_.filter.empty() || absl::StrContains(name, opt_.filter);
  }

  void Abi();
  void Memory();
  void WrappedMemory();
  void Queues();
  void Peers();
  void Supplied();
  std::string RunMatmul(const SuppliedKernel& k, const MatmulParams& p);
  /// `c.kernel` as the host gives it to this device: with map_launch, over several blocks.
  absl::StatusOr<UOp> AsLaunched(const KernelCase& c);
  void Kernels(std::vector<KernelCase> cases);
  std::string RunOne(const KernelCase& c, const Program& prog, uint32_t entry,
                     const LaunchDims& dims);
  bool Supports(const std::string& op, DType t);
  // The device's calls the suite makes itself, on its queue.
  absl::Status Alloc(uint64_t size, uopc_buffer** out);
  absl::Status Free(uopc_buffer* b);
  absl::Status CopyIn(uopc_buffer* dst, uint64_t offset, const void* src, uint64_t size);
  absl::Status CopyOut(void* dst, const uopc_buffer* src, uint64_t offset, uint64_t size);
  absl::Status Sync();

  Device& d_;
  ConformanceOptions opt_;
  ConformanceReport report_;
  std::map<std::string, std::map<DType, char>> matrix_;
};

bool Suite::Supports(const std::string& op, DType t) {
  if (!d_.backend()) return false;
  uopc_backend_supports_args q{};
  q.backend = d_.backend();
  q.op = op.c_str();
  q.dtype = static_cast<uopc_dtype>(t);
  absl::Status s = P().Call(&q);
  if (!absl::IsUnimplemented(s)) return s.ok() && q.supported;
  // without the call: every op of the dtypes the backend describes (plugin_api.h)
  uopc_backend_desc desc{};
  desc.struct_size = sizeof desc;
  uopc_backend_describe_args d{};
  d.backend = d_.backend();
  d.desc = &desc;
  return P().Call(&d).ok() && ((desc.dtypes >> static_cast<int>(t)) & 1);
}

absl::Status Suite::Alloc(uint64_t size, uopc_buffer** out) {
  uopc_buffer_alloc_args a{};
  a.device = d_.handle();
  a.size = size;
  a.align = 64;
  absl::Status s = P().Call(&a);
  *out = a.buffer;
  return s;
}

absl::Status Suite::Free(uopc_buffer* b) {
  uopc_buffer_free_args a{};
  a.buffer = b;
  return P().Call(&a);
}

absl::Status Suite::CopyIn(uopc_buffer* dst, uint64_t offset, const void* src, uint64_t size) {
  uopc_copy_h2d_args a{};
  a.queue = d_.queue();
  a.dst = dst;
  a.dst_offset = offset;
  a.src = src;
  a.size = size;
  return P().Call(&a);
}

absl::Status Suite::CopyOut(void* dst, const uopc_buffer* src, uint64_t offset, uint64_t size) {
  uopc_copy_d2h_args a{};
  a.queue = d_.queue();
  a.dst = dst;
  a.src = src;
  a.src_offset = offset;
  a.size = size;
  return P().Call(&a);
}

// (a device without UOPC_DEVICE_CAP_ASYNC has done its work when a call returns)
absl::Status Suite::Sync() { return d_.Synchronize(); }

void Suite::Abi() {
  const Plugin& p = P();
  Check("abi", "version", p.abi_major() == UOPC_ABI_MAJOR || p.abi_major() == 1,
        absl::StrCat("ABI ", p.abi_major(), ".", p.abi_minor()));
  Check("abi", "uop format", p.uop_format() == kUOpFormatVersion,
        absl::StrCat("reads uop format ", p.uop_format(), "; the host writes ", kUOpFormatVersion));
  // (a required call missing, the plugin would not have loaded: an optional one is absent)
  if (std::vector<std::string> absent = p.AbsentCalls(); !absent.empty())
    Add(ConformanceCase::kSkip, "abi", "optional calls", "absent: " + absl::StrJoin(absent, ", "));
  // only the entry symbol (and C++ runtime template instances) leave the library
  std::string cmd = "nm -D --defined-only '" + P().path() + "' 2>/dev/null";
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char line[1024];
    std::string extra;
    bool any = false;
    while (std::fgets(line, sizeof line, f)) {
      any = true;
      std::string sym = line;
      sym = sym.substr(sym.rfind(' ') + 1);
      sym.erase(sym.find_last_not_of("\n") + 1);
      // (the linker's own symbols of a library without a version script are not the plugin's)
      if (sym == UOPC_ENTRY_SYMBOL || sym == "uopc_plugin_entry_v1" || sym == "__bss_start" ||
          sym == "_edata" || sym == "_end" || sym == "_init" || sym == "_fini" ||
          absl::StartsWith(sym, "_ZNSt") || absl::StartsWith(sym, "_ZNKSt") ||
          absl::StartsWith(sym, "_ZSt") || absl::StartsWith(sym, "_ZN9__gnu_cxx") || sym.empty())
        continue;
      extra += (extra.empty() ? "" : ", ") + sym;
    }
    pclose(f);
    if (any)
      Check("abi", "exports only the entry", extra.empty(), "also exports " + extra.substr(0, 300));
    else
      Add(ConformanceCase::kSkip, "abi", "exports only the entry", "nm is not installed");
  }
  // NULL handles are refused, not dereferenced
  auto refused = [&](const char* name, absl::Status s) {
    Check("abi", absl::StrCat("NULL handle: ", name),
          s.code() == absl::StatusCode::kInvalidArgument ||
              s.code() == absl::StatusCode::kUnimplemented,
          absl::StrCat("returned ", s.ToString()));
  };
  uopc_device_props props{};
  props.struct_size = sizeof props;
  uopc_device_describe_args describe{};
  describe.props = &props;
  refused("device_describe", P().Call(&describe));
  uopc_buffer_free_args free{};
  refused("buffer_free", P().Call(&free));
  uopc_queue_destroy_args queue{};
  refused("queue_destroy", P().Call(&queue));
  uopc_launch_args launch{};
  refused("launch", P().Call(&launch));
  uopc_program_unload_args unload{};
  refused("program_unload", P().Call(&unload));
  uopc_render_args render{};
  refused("render", P().Call(&render));
  // capability bits tell the truth
  uopc_device_props dp{};
  dp.struct_size = sizeof dp;
  describe.device = d_.handle();
  describe.props = &dp;
  if (P().Call(&describe).ok() && !(dp.caps & UOPC_DEVICE_CAP_COPY_D2D)) {
    uopc_copy_args copy{};
    copy.queue = d_.queue();
    absl::Status s = P().Call(&copy);
    Check("abi", "caps: no COPY_D2D means copy is UNIMPLEMENTED",
          s.code() == absl::StatusCode::kUnimplemented, s.ToString());
  }
}

void Suite::Memory() {
  std::mt19937 rng(7);
  for (uint64_t size :
       {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{4096}, (uint64_t{1} << 20) + 3}) {
    std::string name = absl::StrCat("round trip of ", size, " bytes between guards");
    uint64_t guard = 64, total = size + 2 * guard;
    uopc_buffer* b = nullptr;
    absl::Status s = Alloc(total, &b);
    if (absl::IsResourceExhausted(s) && total > d_.mem_total()) {
      Add(ConformanceCase::kSkip, "memory", name,
          absl::StrCat("more than the device's ", d_.mem_total(), " bytes"));
      continue;
    }
    if (!s.ok()) {
      Check("memory", name, false, s.ToString());
      continue;
    }
    std::vector<uint8_t> all(total, kSentinel), data(size), back(total, 0);
    for (uint8_t& c : data) c = static_cast<uint8_t>(rng());
    s = CopyIn(b, 0, all.data(), total);
    if (s.ok()) s = CopyIn(b, guard, data.data(), size);
    if (s.ok()) s = Sync();
    if (s.ok()) s = CopyOut(back.data(), b, 0, total);
    if (s.ok()) s = Sync();
    bool guards =
        std::all_of(back.begin(), back.begin() + guard, [](uint8_t c) { return c == kSentinel; }) &&
        std::all_of(back.end() - guard, back.end(), [](uint8_t c) { return c == kSentinel; });
    bool same = std::equal(data.begin(), data.end(), back.begin() + guard);
    Check("memory", name, s.ok() && guards && same,
          !s.ok()   ? s.ToString()
          : !guards ? "a guard byte changed"
                    : "the data came back different");
    Free(b).IgnoreError();
  }
  WrappedMemory();
  uopc_buffer* huge = nullptr;
  absl::Status s = Alloc(uint64_t{1} << 62, &huge);
  Check("memory", "4 EiB allocation is RESOURCE_EXHAUSTED",
        s.code() == absl::StatusCode::kResourceExhausted, s.ToString());
  if (s.ok()) Free(huge).IgnoreError();
  uopc_buffer* small = nullptr;
  if (Alloc(16, &small).ok()) {
    char buf[64] = {0};
    absl::Status r = CopyIn(small, 8, buf, 16);
    Check("memory", "copy past the end is refused", !r.ok(),
          "copied 16 bytes at offset 8 of a 16-byte buffer");
    Free(small).IgnoreError();
  }
}

// A buffer wrapped over another's address (buffer_address) aliases it, and its release runs
// exactly once, after buffer_free.
void Suite::WrappedMemory() {
  const char* name = "a wrapped buffer aliases its memory; release runs once";
  uopc_buffer* owner = nullptr;
  absl::Status s = Alloc(256, &owner);
  if (!s.ok()) return Check("memory", name, false, s.ToString());
  uopc_buffer_address_args where{};
  where.buffer = owner;
  s = P().Call(&where);
  if (s.code() == absl::StatusCode::kUnimplemented) {
    Add(ConformanceCase::kSkip, "memory", name, "no buffer_address");
  } else {
    int released = 0;
    uopc_buffer_wrap_args wrap{};
    wrap.device = d_.handle();
    wrap.address = static_cast<uint8_t*>(where.address) + 64;
    wrap.size = 128;
    wrap.release = [](void* ctx) { ++*static_cast<int*>(ctx); };
    wrap.release_ctx = &released;
    if (s.ok()) s = P().Call(&wrap);
    std::vector<uint8_t> in(128), back(128, 0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + 1);
    if (s.ok()) s = CopyIn(wrap.buffer, 0, in.data(), 128);
    if (s.ok()) s = CopyOut(back.data(), owner, 64, 128);
    if (s.ok()) s = Sync();
    const int before_free = released;
    if (wrap.buffer) s.Update(Free(wrap.buffer));
    if (s.ok()) s = Sync();
    Check("memory", name, s.ok() && in == back && before_free == 0 && released == 1,
          !s.ok()      ? s.ToString()
          : in != back ? "the owner's memory does not hold what was copied into the wrap"
                       : absl::StrCat("release ran ", before_free, " times before buffer_free and ",
                                      released, " in all"));
  }
  Free(owner).IgnoreError();
}

// Two queues of the device: work on the second waits for an event of the first; a launch
// the plugin refuses leaves its queue usable.
void Suite::Queues() {
  const char* name = "an event orders work across two queues";
  uopc_queue_create_args second{};
  second.device = d_.handle();
  absl::Status s = P().Call(&second);
  if (!s.ok()) return Check("queues", name, false, "queue_create: " + s.ToString());
  uopc_buffer* b = nullptr;
  std::vector<uint8_t> in(4096), back(4096, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 13 + 5);
  s = Alloc(in.size(), &b);
  uopc_event* written = nullptr;
  uopc_event* read = nullptr;
  if (s.ok()) {
    uopc_copy_h2d_args a{};
    a.queue = d_.queue();
    a.dst = b;
    a.src = in.data();
    a.size = in.size();
    a.done = &written;
    s = P().Call(&a);
  }
  if (s.ok() && written) {  // (no event: done already)
    uopc_queue_wait_event_args w{};
    w.queue = second.queue;
    w.event = written;
    s = P().Call(&w);
  }
  if (s.ok()) {
    uopc_copy_d2h_args a{};
    a.queue = second.queue;
    a.dst = back.data();
    a.src = b;
    a.size = back.size();
    a.done = &read;
    s = P().Call(&a);
  }
  if (s.ok() && read) {
    uopc_event_wait_args w{};
    w.event = read;
    w.timeout_ns = ~uint64_t{0};
    s = P().Call(&w);
    uopc_event_query_args q{};
    q.event = read;
    absl::Status qs = P().Call(&q);
    if (s.ok() && !absl::IsUnimplemented(qs) && !(qs.ok() && q.done))
      s = absl::InternalError(
          absl::StrCat("event_query after event_wait: ", qs.ToString(), ", done ", q.done));
  }
  if (s.ok() && (d_.caps() & UOPC_DEVICE_CAP_ASYNC)) {
    uopc_queue_synchronize_args sync{};
    sync.queue = second.queue;
    s = P().Call(&sync);
  }
  Check("queues", name, s.ok() && in == back,
        !s.ok() ? s.ToString() : "the second queue read what the first had not written yet");
  for (uopc_event* e : {written, read}) {
    uopc_event_destroy_args x{};
    x.event = e;
    if (e) P().Call(&x).IgnoreError();
  }
  uopc_queue_destroy_args q{};
  q.queue = second.queue;
  P().Call(&q).IgnoreError();
  if (b) Free(b).IgnoreError();

  // a launch of an entry the program has not got: refused, and the queue goes on
  name = "a refused launch leaves the queue usable";
  if (!d_.backend())
    return Add(ConformanceCase::kSkip, "queues", name, "no backend (a device-only plugin)");
  KernelCase c = LoopCases().back();
  absl::StatusOr<RenderedKernel> src = d_.Render(SerializeGraph(c.kernel), "conf_refused");
  if (!src.ok())
    return Add(ConformanceCase::kSkip, "queues", name, "render: " + src.status().ToString());
  absl::StatusOr<std::shared_ptr<Program>> prog = d_.Build({src->source}, {"conf_refused"});
  if (!prog.ok())
    return Add(ConformanceCase::kSkip, "queues", name, "compile: " + prog.status().ToString());
  uopc_launch_args bad{};
  bad.queue = d_.queue();
  bad.program = (*prog)->handle();
  bad.entry = 1;  // of one
  for (int i = 0; i < 3; ++i) bad.grid[i] = bad.block[i] = 1;
  absl::Status refused = P().Call(&bad);
  uopc_buffer* after = nullptr;
  std::vector<uint8_t> one(64, 7), got(64, 0);
  s = Alloc(one.size(), &after);
  if (s.ok()) s = CopyIn(after, 0, one.data(), one.size());
  if (s.ok()) s = CopyOut(got.data(), after, 0, got.size());
  if (s.ok()) s = Sync();
  Check("queues", name, !refused.ok() && s.ok() && one == got,
        refused.ok() ? "a launch of entry 1 of a program of 1 was accepted"
        : !s.ok()    ? "after it: " + s.ToString()
                     : "after it, a copy came back different");
  if (after) Free(after).IgnoreError();
}

// A copy between this device and another of the plugin (ConformanceOptions::peer), where
// the device says it can (UOPC_DEVICE_CAP_COPY_PEER).
void Suite::Peers() {
  const char* name = "a copy to another device of the plugin";
  Device* peer = opt_.peer;
  if (!peer || &peer->plugin() != &P())
    return Add(ConformanceCase::kSkip, "peers", name, "no second device of the plugin given");
  uopc_device_props props{};
  props.struct_size = sizeof props;
  uopc_device_describe_args describe{};
  describe.device = d_.handle();
  describe.props = &props;
  if (!P().Call(&describe).ok() || !(props.caps & UOPC_DEVICE_CAP_COPY_PEER))
    return Add(ConformanceCase::kSkip, "peers", name,
               "the device has no UOPC_DEVICE_CAP_COPY_PEER");
  std::vector<uint8_t> in(1000), back(1000, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + 3);
  absl::StatusOr<Buffer> mine = d_.Allocate(DType::kU8, 1000);
  absl::StatusOr<Buffer> theirs = peer->Allocate(DType::kU8, 1000);
  absl::Status s = !mine.ok() ? mine.status() : theirs.status();
  if (s.ok()) s = d_.CopyIn(*mine, in.data(), in.size());
  // a part at offsets on both sides, then the rest, each waited for on its event
  for (auto [dst, src, n] : {std::tuple<uint64_t, uint64_t, uint64_t>{100, 100, 900},
                             std::tuple<uint64_t, uint64_t, uint64_t>{0, 0, 100}}) {
    if (!s.ok()) break;
    absl::StatusOr<Event> e = d_.EnqueueCopy(*theirs, dst, *mine, src, n);
    s = e.ok() ? e->Wait() : e.status();
  }
  if (s.ok()) s = peer->CopyOut(back.data(), *theirs, back.size());
  Check("peers", name, s.ok() && in == back,
        !s.ok() ? s.ToString() : "the other device's buffer holds something else");
}

// Host memory of `count` elements of `t` (f32, f16 or bf16) holding `v` rounded to t.
std::vector<uint8_t> HalfOrFloat(DType t, const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * DTypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(&out[i * 4], &v[i], 4);
    } else {
      const uint16_t h = t == DType::kF16 ? F32ToF16(v[i]) : F32ToBF16(v[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

float ElementAt(DType t, const std::vector<uint8_t>& bytes, int64_t i) {
  if (t == DType::kF32) {
    float f;
    std::memcpy(&f, &bytes[i * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &bytes[i * 2], 2);
  return t == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
}

// One matmul of kernel `k` against the reference (core/matmul_call.h), its operands at
// offsets and out's rows padded: "" when it agrees within f32 rounding of each sum (and the
// rounding of out to a half) and leaves out's padding alone, else what differs.
std::string Suite::RunMatmul(const SuppliedKernel& k, const MatmulParams& p) {
  const int64_t last = p.batch2 * p.batch - 1;  // the last matmul of the batches
  const int64_t a_count = p.AOffset(last) + (p.m - 1) * p.a_row + (p.k - 1) * p.a_col + 1;
  const int64_t b_count = p.BOffset(last) + (p.k - 1) * p.b_row + (p.n - 1) * p.b_col + 1;
  const int64_t out_count = p.OutOffset(last) + p.m * p.out_row;
  std::vector<float> av(a_count), bv(b_count), ov(out_count, 7.0f);
  std::mt19937 rng(static_cast<uint32_t>(p.m * 131 + p.k));
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (float& x : av) x = u(rng);
  for (float& x : bv) x = u(rng);
  std::vector<uint8_t> a = HalfOrFloat(k.a, av), b = HalfOrFloat(k.b, bv),
                       want = HalfOrFloat(k.out, ov), got(want.size());
  absl::Status s = RunMatmulReference(p, {want.data(), k.out, out_count}, {a.data(), k.a, a_count},
                                      {b.data(), k.b, b_count});
  if (!s.ok()) return "reference: " + s.ToString();
  absl::StatusOr<Buffer> ob = d_.Allocate(k.out, out_count), ab = d_.Allocate(k.a, a_count),
                         bb = d_.Allocate(k.b, b_count);
  for (const auto* x : {&ob, &ab, &bb})
    if (!x->ok()) return "allocate: " + x->status().ToString();
  s = d_.CopyIn(*ob, HalfOrFloat(k.out, ov).data(), want.size());
  if (s.ok()) s = d_.CopyIn(*ab, a.data(), a.size());
  if (s.ok()) s = d_.CopyIn(*bb, b.data(), b.size());
  if (s.ok()) {
    const auto values = p.Values();
    absl::StatusOr<Event> e =
        d_.LaunchSupplied(k.name, {ob->handle(), ab->handle(), bb->handle()}, {}, values);
    s = e.ok() ? e->Wait() : e.status();
  }
  if (s.ok()) s = d_.CopyOut(got.data(), *ob, got.size());
  if (!s.ok()) return s.ToString();
  const double half = k.out == DType::kBF16 ? 1.0 / 128 : k.out == DType::kF16 ? 1.0 / 1024 : 0;
  for (int64_t z = 0; z <= last; ++z)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.out_row; ++j) {
        const int64_t o = p.OutOffset(z) + i * p.out_row + j;
        const float g = ElementAt(k.out, got, o), w = ElementAt(k.out, want, o);
        if (j >= p.n) {  // out's padding
          if (g != w) return absl::StrCat("wrote out[", o, "], a padding element between rows");
          continue;
        }
        double mag = 0;  // the sum of |a||b|, which bounds the rounding of any order
        for (int64_t q = 0; q < p.k; ++q)
          mag += std::abs(ElementAt(k.a, a, p.AOffset(z) + i * p.a_row + q * p.a_col) *
                          ElementAt(k.b, b, p.BOffset(z) + q * p.b_row + j * p.b_col));
        const double tol = mag * p.k * 0x1p-23 + std::abs(w) * half + 1e-30;
        if (!(std::abs(double(g) - w) <= tol))
          return absl::StrFormat("out[%d][%d][%d] = %.9g, the reference %.9g (tolerance %.3g)", z,
                                 i, j, g, w, tol);
      }
  return "";
}

// The kernels the device's plugin supplies (its target's kernels: ABI 2.1), each against
// the reference on several layouts, and a launch whose params reach past a buffer refused.
void Suite::Supplied() {
  for (const SuppliedKernel& k : d_.target().kernels) {  // (none: nothing to check)
    if (k.op != "matmul") {
      Add(ConformanceCase::kSkip, "supplied", k.name, "an op the suite does not know: " + k.op);
      continue;
    }
    // batch, m, n, k; a's offset, batch, row and column strides; b's; out's offset, batch, row
    const std::pair<const char*, MatmulParams> cases[] = {
        {"64x64x64", {1, 64, 64, 64, 0, 0, 64, 1, 0, 0, 64, 1, 0, 0, 64}},
        {"odd sizes, a transposed, offsets", {1, 70, 50, 131, 5, 0, 1, 70, 3, 0, 50, 1, 2, 0, 53}},
        {"batched, b transposed",
         {2, 33, 65, 96, 0, 33 * 96, 96, 1, 0, 65 * 96, 1, 96, 0, 33 * 65, 65}},
        // 3 x 2 matmuls of 32 x 40 x 24, a's heads interleaved in its rows (q of a packed
        // qkv: rows 3 x 2 heads x 24 long), b's apart, out's rows padded
        {"two batches, interleaved heads",
         {2, 32, 40, 24, 0, 24, 3 * 2 * 24, 1, 0, 24 * 40, 40, 1, 0, 32 * 41, 41, 3, 32 * 144,
          2 * 24 * 40, 2 * 32 * 41}},
        // where an axis has length 1, the other may have any stride (core/matmul_call.h)
        {"a row times a column, no unit strides", {1, 1, 1, 50, 0, 0, 7, 3, 0, 0, 3, 7, 0, 0, 1}},
        {"an outer product, no unit strides", {1, 40, 48, 1, 0, 0, 3, 5, 0, 0, 9, 2, 0, 0, 48}},
    };
    for (const auto& [what, p] : cases) {
      const std::string name = absl::StrCat(k.name, " ", what);
      if (!Wanted(name)) continue;
      const std::string bad = RunMatmul(k, p);
      Check("supplied", name, bad.empty(), bad);
    }
    // params that reach one element past b: refused by the plugin, which must not read it
    const std::string name = absl::StrCat(k.name, " refuses params past a buffer");
    if (!Wanted(name)) continue;
    absl::StatusOr<Buffer> ob = d_.Allocate(k.out, 64 * 64), ab = d_.Allocate(k.a, 64 * 64),
                           bb = d_.Allocate(k.b, 64 * 64);
    if (!ob.ok() || !ab.ok() || !bb.ok()) {
      Check("supplied", name, false, "allocate failed");
      continue;
    }
    const auto values = MatmulParams{1, 64, 64, 64, 0, 0, 64, 1, 1, 0, 64, 1, 0, 0, 64}.Values();
    absl::StatusOr<Event> e =
        d_.LaunchSupplied(k.name, {ob->handle(), ab->handle(), bb->handle()}, {}, values);
    const absl::Status s = e.ok() ? e->Wait() : e.status();
    const absl::Status after = d_.Synchronize();  // (the queue goes on)
    Check("supplied", name, !s.ok() && after.ok(),
          s.ok() ? "a launch reading b[4096] of a 4096-element b was not refused"
                 : "after the refusal, the queue fails: " + after.ToString());
  }
}

// A kernel out[i] = f(in0[i], in1[i], ...) over kN elements; out is slot 3.
UOp Elementwise(const std::vector<DType>& in, DType out,
                const std::function<UOp(const std::vector<UOp>&)>& f) {
  UOp i = UOp::Range(kN, 0);
  std::vector<UOp> loads;
  for (size_t s = 0; s < in.size(); ++s)
    loads.push_back(UOp::Buffer(in[s], static_cast<int>(s), kN).Index(i).Load());
  return UOp::Sink({UOp::Buffer(out, 3, kN).Index(i).Store(f(loads)).End({i})});
}

std::vector<KernelCase> AluCases() {
  std::vector<KernelCase> cases;
  for (int o = 0; o < kNumOps; ++o) {
    Ops op = static_cast<Ops>(o);
    if (!IsAlu(op) || op == Ops::CAST || op == Ops::BITCAST) continue;
    int arity = OpArity(op);
    for (DType t : kDTypes) {
      KernelCase c;
      c.section = "alu";
      c.op_row = std::string(OpName(op));
      c.dtype = t;
      c.name = absl::StrCat(OpName(op), " ", DTypeName(t));
      c.in_types =
          op == Ops::WHERE ? std::vector<DType>{DType::kBool, t, t} : std::vector<DType>(arity, t);
      c.out_type = IsCompare(op) ? DType::kBool : t;
      c.kernel = Elementwise(c.in_types, c.out_type,
                             [&](const std::vector<UOp>& x) { return UOp::Derived(op, x); });
      if (!Verify(c.kernel).ok()) continue;  // not defined for this dtype
      for (size_t s = 0; s < c.in_types.size(); ++s)
        c.inputs.push_back(Values(c.in_types[s], 1000 * o + 10 * static_cast<int>(t) + s, op,
                                  static_cast<int>(s)));
      if (op == Ops::EXP2 || op == Ops::LOG2 || op == Ops::SIN)
        c.ulps = IsFloat(t) && DTypeSize(t) == 2 ? 1 : 2;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

std::vector<KernelCase> CastCases() {
  std::vector<KernelCase> cases;
  for (DType from : kDTypes)
    for (DType to : kDTypes)
      for (Ops op : {Ops::CAST, Ops::BITCAST}) {
        if (op == Ops::BITCAST && (DTypeSize(from) != DTypeSize(to) || from == to)) continue;
        KernelCase c;
        c.section = "cast";
        c.op_row = std::string(OpName(op));
        c.dtype = from;
        c.name = absl::StrCat(OpName(op), " ", DTypeName(from), " to ", DTypeName(to));
        c.in_types = {from};
        c.out_type = to;
        c.kernel = Elementwise(
            c.in_types, to, [&](const std::vector<UOp>& x) { return UOp::Make(op, to, {x[0]}); });
        if (!Verify(c.kernel).ok()) continue;  // e.g. a bitcast of bool
        c.inputs.push_back(
            Values(from, 77 + 13 * static_cast<int>(from) + static_cast<int>(to), op, 0));
        c.to = to;
        cases.push_back(std::move(c));
      }
  return cases;
}

std::vector<KernelCase> LoopCases() {
  std::vector<KernelCase> cases;
  {  // out[i] = sum(x[i*8 : i*8+n]) for n read from memory, as in the seed
    KernelCase c;
    c.section = "loops";
    c.name = "reduction with a run-time trip count";
    UOp x = UOp::Buffer(DType::kF32, 0, kN), len = UOp::Buffer(DType::kI32, 1, 1),
        out = UOp::Buffer(DType::kF32, 3, kN);
    UOp i = UOp::Range(kN / 8, 0), j = UOp::Range(len.Index(0).Load(), 1, RangeKind::kReduce);
    UOp acc = UOp::Alloc(DType::kF32, 0, 1).After({i});
    UOp accj = acc.After({acc.Index(0).Store(UOp::Const(DType::kF32, 0.0)), j});
    UOp upd = accj.Index(0).Store(accj.Index(0).Load() + x.Index(i * 8 + j).Load());
    c.kernel = UOp::Sink({out.Index(i).Store(acc.After({upd.End({j})}).Index(0).Load()).End({i})});
    c.in_types = {DType::kF32, DType::kI32};
    std::vector<Arg> xs;
    for (int64_t k = 0; k < kN; ++k) xs.push_back(Arg(static_cast<double>(k)));
    c.inputs = {xs, std::vector<Arg>(kN, Arg(int64_t{5}))};
    c.out_type = DType::kF32;
    cases.push_back(std::move(c));
  }
  {  // out[i] = x[i] * 2 + i for i < n, n a VAR (a kernel parameter): the tail stays unwritten
    KernelCase c;
    c.section = "loops";
    c.name = "a kernel over a VAR";
    UOp x = UOp::Buffer(DType::kF32, 0, kN), out = UOp::Buffer(DType::kF32, 3, kN);
    UOp i = UOp::Range(UOp::Var("n", 1, kN), 0);
    c.kernel = UOp::Sink(
        {out.Index(i).Store(x.Index(i).Load() * UOp::Const(DType::kF32, 2.0) + i.Cast(DType::kF32))
             .End({i})});
    c.in_types = {DType::kF32};
    std::vector<Arg> xs;
    for (int64_t k = 0; k < kN; ++k) xs.push_back(Arg(static_cast<double>(k) - 20.5));
    c.inputs = {xs};
    c.out_type = DType::kF32;
    c.vars = {{"n", kN - 7}};
    cases.push_back(std::move(c));
  }
  return cases;
}

// out[i] = op(x[i*cols : (i+1)*cols]), i < rows, as the reference GPU's lowering gives it to
// threads (passes/block_reduce.h), on inputs x[k] = (k * a % b) * scale + shift.
KernelCase AcrossThreads(const std::string& name, Ops op, int64_t rows, int64_t cols, int64_t a,
                         int64_t b, float scale, double shift) {
  KernelCase c;
  c.section = "launch";
  c.name = name;
  UOp x = UOp::Buffer(DType::kF32, 0, rows * cols), out = UOp::Buffer(DType::kF32, 3, kN);
  UOp i = UOp::Range(rows, 0), j = UOp::Range(cols, 1, RangeKind::kReduce);
  UOp r = UOp::Derived(Ops::REDUCE, {x.Index(i * cols + j).Load(), j}, ReduceArg{op});
  const Target gpu = Target::ReferenceGpu();
  c.kernel =
      AccumulateKernel(BlockReduceKernel(UOp::Sink({out.Index(i).Store(r).End({i})}), gpu), gpu);
  c.in_types = {DType::kF32};
  std::vector<Arg> xs;
  for (int64_t k = 0; k < rows * cols; ++k)
    xs.push_back(Arg(static_cast<double>((k * a % b) * scale) + shift));
  c.inputs = {xs};
  c.out_type = DType::kF32;
  return c;
}

// The loop cases and an elementwise one, each launched over several blocks (GPU threads, CPU
// cores): what the host does with a kernel of a target that maps its launch.
std::vector<KernelCase> LaunchCases() {
  std::vector<KernelCase> cases = LoopCases();
  {  // out[i] = x[i] * y[i] + 1
    KernelCase c;
    c.name = "elementwise";
    UOp i = UOp::Range(kN, 0);
    UOp x = UOp::Buffer(DType::kF32, 0, kN), y = UOp::Buffer(DType::kF32, 1, kN);
    c.kernel =
        UOp::Sink({UOp::Buffer(DType::kF32, 3, kN)
                       .Index(i)
                       .Store(x.Index(i).Load() * y.Index(i).Load() + UOp::Const(DType::kF32, 1.0))
                       .End({i})});
    c.in_types = {DType::kF32, DType::kF32};
    c.inputs = {Values(DType::kF32, 11, Ops::MUL, 0), Values(DType::kF32, 12, Ops::MUL, 1)};
    c.out_type = DType::kF32;
    cases.push_back(std::move(c));
  }
  for (KernelCase& c : cases) {
    c.section = "launch";
    c.name += " over several blocks";
    c.map_launch = true;
  }
  // as a GPU lowers them (passes/block_reduce.h), in the same order everywhere (a CPU runs
  // a block's threads in turn): out[i] = sum(x[i*1024 : (i+1)*1024]), i < 4, a block a row,
  // its 256 threads' partial sums through shared storage and barriers; out[i] =
  // max(x[i*64 : (i+1)*64]), i < 16, a warp a row, 8 rows a block, the lanes' results through
  // a warp's registers (a GPU's shuffles)
  cases.push_back(AcrossThreads("a reduction across a block's threads (shared storage, a barrier)",
                                Ops::ADD, 4, 1024, 37, 101, 0.173, -8.1));
  cases.push_back(AcrossThreads("a reduction across a warp's lanes (warp registers)", Ops::MAX,
                                16, 64, 53, 97, 0.37, -11.0));
  return cases;
}

absl::StatusOr<UOp> Suite::AsLaunched(const KernelCase& c) {
  if (!c.map_launch) return c.kernel;
  if (!d_.TakesMappedLaunch())
    return absl::UnimplementedError("the plugin maps its own launch (ABI older than 1.5)");
  LaunchDims dims;
  absl::StatusOr<UOp> k = d_.target().IsGpu() ? MapToLaunchDims(c.kernel, kGpuLaunchCases, &dims)
                                              : ThreadOuterLoop(c.kernel, &dims, /*min_work=*/0);
  if (!k.ok()) return k.status();
  if (dims.global[0] * dims.global[1] * dims.global[2] < 2)
    return absl::InternalError("the launch pass left the kernel in one block");
  return k;
}

// Case `c` run by `launch` on host copies of its inputs (slots 0..) and of an output of kN
// elements between guards (slot 3), with its VARs' values: "" when the output is the
// interpreter's (within c.ulps) and the guards are intact, else what differs.
std::string CheckCase(const KernelCase& c, const KernelLauncher& launch) {
  // reference: the interpreter on host memory
  std::vector<std::vector<uint8_t>> host;
  for (size_t s = 0; s < c.inputs.size(); ++s) host.push_back(Bytes(c.inputs[s], c.in_types[s]));
  std::vector<uint8_t> want(kN * DTypeSize(c.out_type),
                            kSentinel);  // as the device's, where unwritten
  std::vector<BufferRef> refs(4);
  for (size_t s = 0; s < host.size(); ++s)
    refs[s] = {host[s].data(), c.in_types[s], static_cast<int64_t>(c.inputs[s].size())};
  refs[3] = {want.data(), c.out_type, kN};
  absl::StatusOr<std::vector<UOp>> program = Linearize(c.kernel);
  if (!program.ok()) return "linearize: " + std::string(program.status().message());
  absl::flat_hash_map<std::string, int64_t> vars;
  std::vector<int64_t> var_values;  // (one VAR at most: the signature's order is moot)
  for (const auto& [name, value] : c.vars) {
    vars[name] = value;
    var_values.push_back(value);
  }
  if (absl::Status s = Interpret(*program, refs, vars); !s.ok())
    return "reference: " + std::string(s.message());
  // the kernel's: inputs, an output between guards
  const int size = DTypeSize(c.out_type);
  std::vector<uint8_t> got((kN + 2 * kGuard) * size, kSentinel);
  std::vector<HostBuffer> buffers(4);
  for (size_t s = 0; s < host.size(); ++s) buffers[s] = {&host[s], c.in_types[s], 0};
  buffers[3] = {&got, c.out_type, static_cast<uint64_t>(kGuard * size)};
  if (std::string err = launch(buffers, var_values); !err.empty()) return err;
  for (int64_t k = 0; k < kGuard * size; ++k)
    if (got[k] != kSentinel || got[got.size() - 1 - k] != kSentinel)
      return "wrote outside its output (a guard byte changed)";
  std::vector<uint8_t> mid(got.begin() + kGuard * size, got.end() - kGuard * size);
  return Compare(want, mid, c.out_type, c.ulps, c.inputs);
}

std::string Suite::RunOne(const KernelCase& c, const Program& prog, uint32_t entry,
                          const LaunchDims& dims) {
  return CheckCase(c, [&](std::vector<HostBuffer>& buffers, const std::vector<int64_t>& vars) {
    // device: each buffer copied in whole, launched at its offset, read back
    std::vector<Buffer> keep;
    std::vector<uopc_buffer*> bufs(buffers.size(), nullptr);
    std::vector<uint64_t> offsets(buffers.size(), 0);
    for (size_t s = 0; s < buffers.size(); ++s) {
      const HostBuffer& h = buffers[s];
      if (!h.bytes) continue;
      absl::StatusOr<Buffer> b =
          d_.Allocate(h.dtype, static_cast<int64_t>(h.bytes->size() / DTypeSize(h.dtype)));
      if (!b.ok()) return b.status().ToString();
      if (absl::Status st = d_.CopyIn(*b, h.bytes->data(), h.bytes->size()); !st.ok())
        return st.ToString();
      bufs[s] = b->handle();
      offsets[s] = h.offset;
      keep.push_back(*b);
    }
    if (absl::Status st = d_.Launch(prog, entry, bufs, vars, offsets, dims).status(); !st.ok())
      return st.ToString();
    const HostBuffer& out = buffers.back();
    if (absl::Status st = d_.CopyOut(out.bytes->data(), keep.back(), out.bytes->size()); !st.ok())
      return st.ToString();
    return std::string();
  });
}

void Suite::Kernels(std::vector<KernelCase> cases) {
  std::vector<KernelCase*> todo;
  std::vector<std::string> sources, names;
  std::vector<LaunchDims> dims;
  if (!d_.backend()) {  // one line for the section
    if (!cases.empty())
      Add(ConformanceCase::kSkip, cases[0].section, absl::StrCat(cases.size(), " kernels"),
          "no backend (a device-only plugin)");
    return;
  }
  for (KernelCase& c : cases) {
    if (!Wanted(c.name)) continue;
    char& cell = matrix_[c.op_row][c.dtype];
    bool supported = c.op_row.empty() ||
                     (Supports(c.op_row, c.dtype) &&
                      (c.to == DType::kVoid || Supports(c.op_row, c.to)));
    if (!supported) {
      Add(ConformanceCase::kSkip, c.section, c.name, "declared unsupported");
      if (!c.op_row.empty() && cell != 'F') cell = cell == 'P' ? 'P' : '-';
      continue;
    }
    std::string name = absl::StrCat("conf_", todo.size());
    absl::StatusOr<UOp> kernel = AsLaunched(c);
    if (absl::IsUnimplemented(kernel.status())) {
      Add(ConformanceCase::kSkip, c.section, c.name, std::string(kernel.status().message()));
      continue;
    }
    if (!kernel.ok()) {
      Add(ConformanceCase::kFail, c.section, c.name, "launch pass: " + kernel.status().ToString());
      continue;
    }
    absl::StatusOr<RenderedKernel> src = d_.Render(SerializeGraph(*kernel), name);
    if (!src.ok()) {
      Add(ConformanceCase::kFail, c.section, c.name,
          "render: " + std::string(src.status().message()));
      cell = 'F';
      continue;
    }
    todo.push_back(&c);
    sources.push_back(src->source);
    dims.push_back(src->dims);
    names.push_back(name);
  }
  if (todo.empty()) return;
  absl::StatusOr<std::shared_ptr<Program>> prog =
      d_.Build(sources, names);  // one compile for the section
  for (size_t k = 0; k < todo.size(); ++k) {
    const KernelCase& c = *todo[k];
    std::string err = prog.ok() ? RunOne(c, **prog, static_cast<uint32_t>(k), dims[k])
                                : "compile: " + std::string(prog.status().message());
    Check(c.section, c.name, err.empty(), err);
    if (!c.op_row.empty()) {
      char& cell = matrix_[c.op_row][c.dtype];
      cell = (!err.empty() || cell == 'F') ? 'F' : 'P';
    }
  }
}

ConformanceReport Suite::Run() {
  Abi();
  Memory();
  Kernels(AluCases());
  Kernels(CastCases());
  Kernels(LoopCases());
  Kernels(LaunchCases());
  Queues();
  Peers();
  Supplied();
  for (const ConformanceCase& c : report_.cases) {
    if (c.status == ConformanceCase::kPass) ++report_.passed;
    if (c.status == ConformanceCase::kFail) ++report_.failed;
    if (c.status == ConformanceCase::kSkip) ++report_.skipped;
  }
  std::string& m = report_.matrix;
  if (!d_.backend()) return report_;  // (no kernels, no matrix)
  m = absl::StrCat("support matrix of ", d_.name(), " (", d_.backend_name(),
                   "): P pass, F fail, - unsupported, . not defined\n        ");
  for (DType t : kDTypes) absl::StrAppend(&m, absl::StrFormat("%-5s", std::string(DTypeName(t))));
  m += "\n";
  for (const auto& [op, cells] : matrix_) {
    if (op.empty()) continue;
    absl::StrAppend(&m, absl::StrFormat("%-8s", op));
    for (DType t : kDTypes) {
      auto it = cells.find(t);
      absl::StrAppend(&m, absl::StrFormat("%-5c", it == cells.end() ? '.' : it->second));
    }
    m += "\n";
  }
  return report_;
}

}  // namespace

std::vector<ConformanceKernelCase> ConformanceKernelCases() {
  std::vector<ConformanceKernelCase> out;
  for (auto cases : {AluCases(), CastCases(), LoopCases(), LaunchCases()})
    for (KernelCase& c : cases) {
      UOp kernel = c.kernel;
      LaunchDims dims;
      if (c.map_launch)  // as a GPU gets it (Suite::AsLaunched)
        if (absl::StatusOr<UOp> k = MapToLaunchDims(c.kernel, kGpuLaunchCases, &dims); k.ok())
          kernel = *k;
      out.push_back({c.section + " " + c.name, kernel,
                     [c](const KernelLauncher& launch) { return CheckCase(c, launch); }});
    }
  return out;
}

std::vector<std::pair<std::string, UOp>> ConformanceKernels() {
  std::vector<std::pair<std::string, UOp>> out;
  for (ConformanceKernelCase& c : ConformanceKernelCases()) out.push_back({c.name, c.kernel});
  return out;
}

ConformanceReport RunConformance(Device& device, const ConformanceOptions& options) {
  return Suite(device, options).Run();
}

}  // namespace uopc
