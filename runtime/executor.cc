#include "runtime/executor.h"

#include <algorithm>
#include <iostream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "core/status_macros.h"
#include "core/trace.h"
#include "runtime/collective_group.h"
#include "runtime/peer_link.h"

namespace uopc {
namespace {

absl::Status Prefixed(const absl::Status& s, const std::string& where) {
  return s.ok() ? s : absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

}  // namespace

// One run of a plan: its buffers, the event of each step queued so far, and who last read
// and wrote each buffer, which is what a step on another device must wait for.
class PlanRun {
 public:
  PlanRun(Executor& ex, const Plan& plan, const VarValues& vars)
      : ex_(ex),
        plan_(plan),
        vars_(vars),
        events_(plan.steps.size()),
        step_device_(plan.steps.size()),
        access_(plan.buffers.size() + plan.arenas.size()),
        others_(plan.steps.size(), false) {}

  absl::Status Bind(absl::Span<const Buffer> inputs);
  absl::Status MemoryShortfall();
  /// Compiles the kernels each device has not compiled yet: one backend call per device.
  absl::Status Prepare();
  absl::Status Step(size_t i);
  /// Synchronizes every device that got work; the first failure.
  absl::Status Finish();
  std::vector<Buffer> Outputs() const;
  std::string Where(size_t i) const;
  /// Whether step i is other ranks' work, which this one skipped.
  bool Others(size_t i) const { return others_[i]; }
  /// Records step i, which ran from `start` to `end` (microseconds), in the trace.
  void Trace(size_t i, int64_t start, int64_t end) const;

 private:
  struct Access {
    int writer = -1;
    std::vector<int> readers;
  };
  absl::Status Order(Device* d, int buffer, bool write);
  absl::Status WaitFor(Device* d, int step);
  void Record(int step, int buffer, bool write);
  absl::Status Kernel(size_t i, const Plan::Kernel& k);
  absl::Status Copy(size_t i, const Plan::Copy& c);
  /// A copy to or from another rank's device: a message to or from that rank.
  absl::Status PeerCopy(size_t i, const Plan::Copy& c);
  absl::Status Collective(size_t i, const Plan::Collective& c);
  /// Waits for the collective in flight on memory `mem` (Mem), if one is.
  absl::Status Settle(int mem);
  /// The memory a plan buffer is: its own (its index), or its arena's (after the buffers).
  /// Steps are ordered by the memory they touch: a temporary in an arena waits for the
  /// readers of the one before it there.
  int Mem(int buffer) const {
    const std::vector<int>& a = plan_.arena_of;
    return buffer < static_cast<int>(a.size()) && a[buffer] >= 0
               ? static_cast<int>(plan_.buffers.size()) + a[buffer]
               : buffer;
  }
  /// The device a step runs on: a kernel's (where it writes), a copy's destination, a
  /// collective's.
  Device* StepDevice(const Plan::Step& s) const;

  Executor& ex_;
  const Plan& plan_;
  const VarValues& vars_;
  std::vector<Device*> devices_;  // of each plan buffer
  std::vector<Buffer> bufs_;
  std::vector<Buffer> arenas_;      // of the plan's arenas, as bytes (bufs_ views them)
  std::vector<Event> events_;       // of each step
  std::vector<Device*> step_device_;
  std::vector<Access> access_;
  absl::flat_hash_set<std::pair<Device*, int>> waited_;
  std::vector<std::vector<uint8_t>> staging_;  // host copies between plugins, until the end
  std::vector<Device*> used_;
  // collectives in flight: what waits for each, by the buffers it reads and writes
  absl::flat_hash_map<int, std::shared_ptr<CollectiveGroup::Wait>> in_flight_;
  std::vector<bool> others_;  // of each step
};

// After an allocation of the plan's failed (and what it had allocated was given back): the
// device whose memory cannot hold the plan's buffers, as RESOURCE_EXHAUSTED with the figures:
// what its allocator takes for them (their size classes) against the device's limit less
// what is in use (less what the allocator holds cached, which it gives back first).
absl::Status PlanRun::MemoryShortfall() {
  absl::flat_hash_map<std::string, std::pair<uint64_t, int>> need;  // device: bytes, buffers
  for (size_t b = plan_.num_inputs; b < plan_.buffers.size(); ++b) {
    const Plan::BufferSpec& s = plan_.buffers[b];
    if (s.dtype == DType::kVoid || s.device.empty()) continue;
    auto& [bytes, count] = need[s.device];
    ++count;
    if (Mem(static_cast<int>(b)) == static_cast<int>(b))
      bytes += CachingAllocator::SizeClass(s.bytes());
  }
  for (const Plan::Arena& a : plan_.arenas)
    need[a.device].first += CachingAllocator::SizeClass(a.bytes);
  for (const auto& [name, want] : need) {
    absl::StatusOr<Device*> d = ex_.registry_.GetDevice(name);
    if (!d.ok() || (*d)->peer_rank() >= 0) continue;  // (found below; another rank's memory)
    absl::StatusOr<Device::MemoryInfo> m = (*d)->Memory();
    if (!m.ok() || m->bytes_limit == 0) continue;  // (a plugin that does not say)
    const uint64_t cached = (*d)->allocator().stats().cached_bytes;
    const uint64_t held = m->bytes_in_use > cached ? m->bytes_in_use - cached : 0;
    const uint64_t free = m->bytes_limit > held ? m->bytes_limit - held : 0;
    if (want.first <= free) continue;
    return absl::ResourceExhaustedError(absl::StrCat(
        "run plan on ", name, ": its ", want.second, " buffers need ", ByteString(want.first),
        plan_.arenas.empty() ? "" : " (temporaries sharing memory)",
        "; ", name, " has ", ByteString(free), " free of ", ByteString(m->bytes_limit), " (",
        ByteString(held), " hold tensors and other plans' buffers); nothing ran"));
  }
  return absl::OkStatus();
}

absl::Status PlanRun::Bind(absl::Span<const Buffer> inputs) {
  if (static_cast<int>(inputs.size()) != plan_.num_inputs)
    return absl::InvalidArgumentError(absl::StrCat("run plan: ", inputs.size(), " inputs for a plan of ",
                                                   plan_.num_inputs));
  for (const VarArg& v : plan_.vars) {  // all of them before any step: a bad one runs nothing
    auto it = vars_.find(v.name);
    if (it == vars_.end())
      return absl::InvalidArgumentError(absl::StrCat("run plan: no value for VAR ", v.name));
    if (it->second < v.lo || it->second > v.hi)
      return absl::OutOfRangeError(absl::StrCat("run plan: VAR ", v.name, " = ", it->second,
                                                " is outside its bounds [", v.lo, ", ", v.hi,
                                                "]; nothing ran"));
  }
  devices_.resize(plan_.buffers.size());
  bufs_.resize(plan_.buffers.size());
  arenas_.resize(plan_.arenas.size());
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    const Plan::BufferSpec& s = plan_.buffers[b];
    if (s.dtype == DType::kVoid) continue;
    if (static_cast<int>(b) < plan_.num_inputs) {
      const Buffer& in = inputs[b];
      if (!in || (!s.device.empty() && in.device()->name() != s.device) || in.dtype() != s.dtype ||
          in.count() < s.count)
        return absl::InvalidArgumentError(absl::StrCat(
            "run plan: input ", b, " wants ", s.count, " x ", DTypeName(s.dtype), " on ",
            s.device.empty() ? "any device" : s.device, "; got ",
            in ? absl::StrCat(in.count(), " x ", DTypeName(in.dtype()), " on ", in.device()->name())
               : "no buffer"));
      bufs_[b] = in;
      devices_[b] = in.device();
      continue;
    }
    if (s.device.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("run plan: buffer ", b, " is on no device (was the graph placed?)"));
    ASSIGN_OR_RETURN(devices_[b], ex_.registry_.GetDevice(s.device));
    Device* d = devices_[b];
    auto allocate = [&](DType dtype, int64_t count) -> absl::StatusOr<Buffer> {
      absl::StatusOr<Buffer> buffer = d->Allocate(dtype, count);
      if (!buffer.ok() && absl::IsResourceExhausted(buffer.status())) {
        bufs_.assign(bufs_.size(), Buffer());  // (its memory back, then what the plan needs)
        arenas_.assign(arenas_.size(), Buffer());
        RETURN_IF_ERROR(MemoryShortfall());
      }
      return buffer;
    };
    const int arena = Mem(static_cast<int>(b)) - static_cast<int>(plan_.buffers.size());
    if (arena < 0 || d->peer_rank() >= 0) {  // (another rank's device: no memory here)
      ASSIGN_OR_RETURN(bufs_[b], allocate(s.dtype, s.count));
      continue;
    }
    Buffer& block = arenas_[arena];
    if (!block) {
      ASSIGN_OR_RETURN(block, allocate(DType::kU8, static_cast<int64_t>(plan_.arenas[arena].bytes)));
    }
    bufs_[b] = block.As(s.dtype, s.count);
  }
  return absl::OkStatus();
}

absl::Status PlanRun::Prepare() {
  absl::flat_hash_map<Device*, std::vector<UOp>> kernels;
  std::vector<Device*> order;
  for (const Plan::Step& s : plan_.steps)
    if (const auto* k = std::get_if<Plan::Kernel>(&s.op)) {
      Device* d = devices_[k->writes.empty() ? k->buffers.front() : k->writes.front()];
      if (d->peer_rank() >= 0) continue;  // (another rank's kernel: that rank runs it)
      if (!kernels.contains(d)) order.push_back(d);
      kernels[d].push_back(k->ast);
    }
  for (Device* d : order) RETURN_IF_ERROR(Prefixed(ex_.KernelsFor(d).Prepare(kernels[d]),
                                                   absl::StrCat("run plan on ", d->name())));
  return absl::OkStatus();
}

absl::Status PlanRun::WaitFor(Device* d, int step) {
  Device* other = step_device_[step];
  if (other == d || !waited_.insert({d, step}).second) return absl::OkStatus();
  if (events_[step].plugin() && events_[step].plugin() != &d->plugin())
    return events_[step].Wait();  // another plugin's event: the host waits
  return d->Wait(events_[step]);
}

absl::Status PlanRun::Settle(int mem) {
  auto it = in_flight_.find(mem);
  if (it == in_flight_.end()) return absl::OkStatus();
  std::shared_ptr<CollectiveGroup::Wait> wait = it->second;
  std::vector<int> done;  // its buffers
  for (const auto& [b, w] : in_flight_)
    if (w == wait) done.push_back(b);
  for (int b : done) in_flight_.erase(b);
  return (*wait)();
}

// RAW and WAW: the last writer; WAR: the readers since. A collective in flight on the
// buffer: it is done first (the host waits).
absl::Status PlanRun::Order(Device* d, int buffer, bool write) {
  RETURN_IF_ERROR(Settle(Mem(buffer)));
  const Access& a = access_[Mem(buffer)];
  if (a.writer >= 0) RETURN_IF_ERROR(WaitFor(d, a.writer));
  if (write)
    for (int r : a.readers) RETURN_IF_ERROR(WaitFor(d, r));
  return absl::OkStatus();
}

void PlanRun::Record(int step, int buffer, bool write) {
  Access& a = access_[Mem(buffer)];
  if (write) {
    a.writer = step;
    a.readers.clear();
  } else {
    a.readers.push_back(step);
  }
}

absl::Status PlanRun::Kernel(size_t i, const Plan::Kernel& k) {
  Device* d = step_device_[i];
  KernelLaunch l{k.ast, {}, vars_};
  for (int b : k.buffers) {
    bool write = std::find(k.writes.begin(), k.writes.end(), b) != k.writes.end();
    RETURN_IF_ERROR(Order(d, b, write));
    l.buffers.push_back(bufs_[b]);
  }
  KernelCache& cache = ex_.KernelsFor(d);
  if (ex_.options_.debug >= 2) {
    std::lock_guard<std::mutex> lock(ex_.mu_);
    if (ex_.shown_.insert(k.ast).second) {
      ASSIGN_OR_RETURN(std::string src, cache.Source(k.ast));
      *ex_.options_.log << "uopc: kernel " << k.ast.hash() % 100000 << ":\n" << src;
    }
  }
  ASSIGN_OR_RETURN(events_[i], cache.Launch(l));
  for (int b : k.buffers)
    Record(static_cast<int>(i), b,
           std::find(k.writes.begin(), k.writes.end(), b) != k.writes.end());
  std::lock_guard<std::mutex> lock(ex_.mu_);
  ++ex_.stats_.kernels;
  return absl::OkStatus();
}

absl::Status PlanRun::Copy(size_t i, const Plan::Copy& c) {
  Device *src = devices_[c.src], *dst = devices_[c.dst];
  if (&src->plugin() == &dst->plugin()) {  // the plugin's own copy, on the destination's queue
    RETURN_IF_ERROR(Order(dst, c.src, false));
    RETURN_IF_ERROR(Order(dst, c.dst, true));
    ASSIGN_OR_RETURN(events_[i], dst->EnqueueCopy(bufs_[c.dst], c.dst_offset, bufs_[c.src],
                                                  c.src_offset, c.bytes));
  } else {  // through host memory: out on the source's queue, then in on the destination's
    RETURN_IF_ERROR(Order(src, c.src, false));
    staging_.emplace_back(c.bytes);
    ASSIGN_OR_RETURN(Event out,
                     src->EnqueueCopyOut(staging_.back().data(), bufs_[c.src], c.bytes, c.src_offset));
    RETURN_IF_ERROR(out.Wait());
    RETURN_IF_ERROR(Order(dst, c.dst, true));
    ASSIGN_OR_RETURN(events_[i], dst->EnqueueCopyIn(bufs_[c.dst], staging_.back().data(), c.bytes,
                                                    c.dst_offset));
    std::lock_guard<std::mutex> lock(ex_.mu_);
    ++ex_.stats_.staged_copies;
  }
  Record(static_cast<int>(i), c.src, false);
  Record(static_cast<int>(i), c.dst, true);
  std::lock_guard<std::mutex> lock(ex_.mu_);
  ++ex_.stats_.copies;
  ex_.stats_.bytes_copied += c.bytes;
  return absl::OkStatus();
}

// The host starts it once the work queued before it on this rank's device is done, on the
// buffer's memory where the device is the host's, in flight until a step touches the buffer
// (Order) or the run ends; elsewhere through host memory, waited for at once. A copy between
// two other ranks' devices is theirs.
absl::Status PlanRun::PeerCopy(size_t i, const Plan::Copy& c) {
  Device *src = devices_[c.src], *dst = devices_[c.dst];
  if (src->peer_rank() >= 0 && dst->peer_rank() >= 0) {
    others_[i] = true;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(PeerLink * link, GetPeerLink());
  const bool sending = dst->peer_rank() >= 0;
  Device* here = sending ? src : dst;
  const int buffer = sending ? c.src : c.dst;
  step_device_[i] = here;
  RETURN_IF_ERROR(Order(here, buffer, !sending));
  RETURN_IF_ERROR(here->Synchronize());
  absl::StatusOr<void*> at = here->Address(bufs_[buffer]);
  if (here->type() == UOPC_DEVICE_CPU && at.ok()) {
    char* p = static_cast<char*>(*at) + (sending ? c.src_offset : c.dst_offset);
    PeerLink::Wait started = sending ? link->Send(dst->peer_rank(), p, c.bytes)
                                     : link->Recv(src->peer_rank(), p, c.bytes);
    in_flight_[Mem(buffer)] = std::make_shared<CollectiveGroup::Wait>(
        [done = std::move(started), where = Where(i)] { return Prefixed(done(), where); });
  } else {
    std::vector<uint8_t> host(c.bytes);
    if (sending) {
      RETURN_IF_ERROR(src->CopyOut(host.data(), bufs_[c.src], c.bytes, c.src_offset));
      RETURN_IF_ERROR(link->Send(dst->peer_rank(), host.data(), c.bytes)());
    } else {
      RETURN_IF_ERROR(link->Recv(src->peer_rank(), host.data(), c.bytes)());
      RETURN_IF_ERROR(dst->CopyIn(bufs_[c.dst], host.data(), c.bytes, c.dst_offset));
    }
  }
  Record(static_cast<int>(i), buffer, !sending);
  std::lock_guard<std::mutex> lock(ex_.mu_);
  ++ex_.stats_.copies;
  ex_.stats_.bytes_copied += c.bytes;
  return absl::OkStatus();
}

// The host starts it once the work queued before it on its device is done: on the buffers'
// memory where the device is the host's (a CPU), and then later steps run while it is in
// flight, until one touches its buffers (Order) or the run ends; elsewhere on host copies of
// them, waited for at once.
absl::Status PlanRun::Collective(size_t i, const Plan::Collective& c) {
  Device* d = step_device_[i];
  ASSIGN_OR_RETURN(CollectiveGroup * group, FindCollectiveGroup(c.arg.group));
  if (group->size() != c.arg.size)
    return absl::InternalError(absl::StrCat("process group ", c.arg.group, " has ", group->size(),
                                            " ranks; the plan was made for ", c.arg.size));
  RETURN_IF_ERROR(Order(d, c.src, false));
  RETURN_IF_ERROR(Order(d, c.dst, true));
  RETURN_IF_ERROR(d->Synchronize());
  const Buffer &in = bufs_[c.src], &out = bufs_[c.dst];
  const DType dtype = plan_.buffers[c.src].dtype;
  const uint64_t in_bytes = c.count * DTypeSize(dtype), out_bytes = plan_.buffers[c.dst].bytes();
  absl::StatusOr<void*> in_at = d->Address(in), out_at = d->Address(out);
  if (d->type() == UOPC_DEVICE_CPU && in_at.ok() && out_at.ok()) {
    auto wait = std::make_shared<CollectiveGroup::Wait>(
        [done = group->Start(c.arg, *in_at, *out_at, c.count, dtype), where = Where(i)] {
          return Prefixed(done(), where);  // (a later step waits: the error names this one)
        });
    in_flight_[Mem(c.src)] = wait;  // (two statements: an insert may move the other entry)
    in_flight_[Mem(c.dst)] = wait;
  } else {
    std::vector<uint8_t> host_in(in_bytes), host_out(out_bytes);
    RETURN_IF_ERROR(d->CopyOut(host_in.data(), in, in_bytes));
    RETURN_IF_ERROR(group->Run(c.arg, host_in.data(), host_out.data(), c.count, dtype));
    RETURN_IF_ERROR(d->CopyIn(out, host_out.data(), out_bytes));
  }
  Record(static_cast<int>(i), c.src, false);
  Record(static_cast<int>(i), c.dst, true);
  return absl::OkStatus();
}

Device* PlanRun::StepDevice(const Plan::Step& s) const {
  if (const auto* k = std::get_if<Plan::Kernel>(&s.op))
    return devices_[k->writes.empty() ? k->buffers.front() : k->writes.front()];
  if (const auto* c = std::get_if<Plan::Copy>(&s.op)) return devices_[c->dst];
  return devices_[std::get<Plan::Collective>(s.op).dst];
}

namespace {

// ", loops 97 3 r4 3": a kernel's loops by their lengths, in the order they open (a
// reduction's marked r; n: a length known at run time), so that the steps can be told
// apart in UOPC_DEBUG=2's lines
std::string LoopsOf(const Plan::Step& s) {
  const auto* k = std::get_if<Plan::Kernel>(&s.op);
  if (!k) return "";
  std::string out;
  for (const UOp& u : k->ast.Toposort()) {
    if (!u.is(Ops::RANGE)) continue;
    const std::optional<int64_t> n = u.src(0).ConstIntValue();
    absl::StrAppend(&out, out.empty() ? ", loops " : " ",
                    u.arg().Get<RangeArg>().kind == RangeKind::kReduce ? "r" : "",
                    n ? std::to_string(*n) : "n");
  }
  return out;
}

}  // namespace

std::string PlanRun::Where(size_t i) const {
  const Plan::Step& s = plan_.steps[i];
  if (const auto* c = std::get_if<Plan::Copy>(&s.op))
    return absl::StrCat("run plan: step ", i, " (copy ", plan_.buffers[c->src].device, " -> ",
                        plan_.buffers[c->dst].device, ")");
  if (const auto* c = std::get_if<Plan::Collective>(&s.op))
    return absl::StrCat("run plan: step ", i, " (", CollectiveKindName(c->arg.kind), " of ",
                        c->count, " x ", DTypeName(plan_.buffers[c->src].dtype), " on ", s.device,
                        " over group ", c->arg.group, " of ", c->arg.size, " ranks)");
  return absl::StrCat("run plan: step ", i, " (kernel ",
                      std::get<Plan::Kernel>(s.op).ast.hash() % 100000, " on ", s.device, ")");
}

void PlanRun::Trace(size_t i, int64_t start, int64_t end) const {
  if (!trace::Enabled()) return;
  const Plan::Step& s = plan_.steps[i];
  const std::string& device = step_device_[i]->name();
  if (const auto* c = std::get_if<Plan::Copy>(&s.op)) {
    trace::Record("copy", absl::StrCat("copy ", devices_[c->src]->name(), " -> ", device), device,
                  start, end, {{"bytes", std::to_string(c->bytes)}, {"device", device}});
    return;
  }
  if (const auto* c = std::get_if<Plan::Collective>(&s.op)) {
    // (the start of it: the collective itself is on the "collectives" track, with what it sent)
    trace::Record("collective step", std::string(CollectiveKindName(c->arg.kind)), device, start,
                  end, {{"bytes", std::to_string(bufs_[c->src].bytes())}, {"device", device}});
    return;
  }
  const auto& k = std::get<Plan::Kernel>(s.op);
  uint64_t bytes = 0;
  for (int b : k.buffers) bytes += bufs_[b].bytes();
  trace::Record("kernel", absl::StrCat("kernel ", k.ast.hash() % 100000), device, start, end,
                {{"bytes", std::to_string(bytes)}, {"device", device}});
}

absl::Status PlanRun::Step(size_t i) {
  const Plan::Step& s = plan_.steps[i];
  Device* d = StepDevice(s);
  step_device_[i] = d;
  const auto* copy = std::get_if<Plan::Copy>(&s.op);
  if (copy && (d->peer_rank() >= 0 || devices_[copy->src]->peer_rank() >= 0)) {
    absl::Status sent = PeerCopy(i, *copy);
    return sent.ok() ? sent : Prefixed(sent, Where(i));
  }
  if (d->peer_rank() >= 0) {  // another rank's step
    others_[i] = true;
    return absl::OkStatus();
  }
  if (std::find(used_.begin(), used_.end(), d) == used_.end()) used_.push_back(d);
  if (const auto* c = std::get_if<Plan::Copy>(&s.op);
      c && std::find(used_.begin(), used_.end(), devices_[c->src]) == used_.end())
    used_.push_back(devices_[c->src]);
  absl::Status done;
  if (const auto* k = std::get_if<Plan::Kernel>(&s.op))
    done = Kernel(i, *k);
  else if (const auto* c = std::get_if<Plan::Copy>(&s.op))
    done = Copy(i, *c);
  else
    done = Collective(i, std::get<Plan::Collective>(s.op));
  // (a collective in flight that failed, waited for here, names its own step)
  if (done.ok() || absl::StartsWith(done.message(), "run plan: step ")) return done;
  return Prefixed(done, Where(i));
}

absl::Status PlanRun::Finish() {
  absl::Status first;
  while (!in_flight_.empty()) {
    absl::Status s = Settle(in_flight_.begin()->first);
    if (first.ok() && !s.ok()) first = s;
  }
  for (Device* d : used_) {
    absl::Status s = d->Synchronize();
    if (first.ok() && !s.ok()) first = Prefixed(s, absl::StrCat("run plan on ", d->name()));
  }
  return first;
}

std::vector<Buffer> PlanRun::Outputs() const {
  std::vector<Buffer> out;
  for (int b : plan_.outputs) out.push_back(bufs_[b]);
  return out;
}

Executor::Executor(const DeviceRegistry& registry, Options options)
    : registry_(registry), options_(options) {
  if (!options_.log) options_.log = &std::cerr;
}

KernelCache& Executor::KernelsFor(Device* device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& k = kernels_[device];
  if (!k) k = std::make_unique<KernelCache>(*device);
  return *k;
}

absl::StatusOr<std::vector<Buffer>> Executor::Run(const Plan& plan,
                                                  absl::Span<const Buffer> inputs,
                                                  const VarValues& vars) {
  PlanRun run(*this, plan, vars);
  RETURN_IF_ERROR(run.Bind(inputs));
  RETURN_IF_ERROR(run.Prepare());
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.plans;
  }
  trace::Span span("plan", absl::StrCat("plan of ", plan.steps.size(), " steps"), "plans");
  // UOPC_DEBUG=2 and UOPC_TRACE time each step to its end: it is waited for before the next
  const bool timed = options_.debug >= 2 || trace::Enabled();
  absl::Status failed;
  for (size_t i = 0; i < plan.steps.size() && failed.ok(); ++i) {
    const int64_t start = trace::NowMicros();
    failed = run.Step(i);
    if (timed && failed.ok() && !run.Others(i)) {
      failed = run.Finish();
      const int64_t end = trace::NowMicros();
      if (options_.debug >= 2)
        *options_.log << run.Where(i).substr(10) << LoopsOf(plan.steps[i]) << ": " << end - start
                      << " us\n";
      run.Trace(i, start, end);
    }
  }
  absl::Status done = run.Finish();  // also after a failure: nothing outlives its buffers
  RETURN_IF_ERROR(failed);
  RETURN_IF_ERROR(done);
  return run.Outputs();
}

Executor::Stats Executor::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace uopc
