#include "devices/kernel_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "core/fnv.h"
#include "core/matmul_call.h"
#include "core/serialize.h"
#include "core/status_macros.h"
#include "core/trace.h"

namespace uopc {
namespace {

std::string KernelName(const std::string& serialized) { return "k_" + Hex64(Fnv1a(serialized)); }

// The end of a kernel's global range when it is not a constant (a grid of run-time size).
UOp GridOf(const UOp& kernel) {
  for (const UOp& u : kernel.Toposort())
    if (u.is(Ops::RANGE) && u.arg().Get<RangeArg>().kind == RangeKind::kGlobal &&
        !u.src(0).ConstIntValue())
      return u.src(0);
  return UOp();
}

}  // namespace

absl::Status KernelCache::Prepare(absl::Span<const UOp> kernels) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<UOp> todo;
  std::vector<std::string> sources, names;
  std::vector<KernelSignature> sigs;
  std::vector<LaunchDims> dims;
  for (const UOp& k : kernels) {
    if (k.is(Ops::MATMUL)) continue;  // the plugin's own kernel: nothing to compile
    if (compiled_.contains(k) || std::find(todo.begin(), todo.end(), k) != todo.end()) continue;
    ASSIGN_OR_RETURN(KernelSignature sig, SignatureOf(k));
    std::string key = SerializeGraph(k), name = KernelName(key);
    ASSIGN_OR_RETURN(RenderedKernel r, device_.Render(key, name));
    todo.push_back(k);
    sources.push_back(std::move(r.source));
    dims.push_back(r.dims);
    names.push_back(std::move(name));
    sigs.push_back(std::move(sig));
  }
  if (todo.empty()) return absl::OkStatus();
  trace::Span span("compile", absl::StrCat("compile ", todo.size(), " kernels"), device_.name());
  span.Arg("kernels", std::to_string(todo.size()));
  span.Arg("device", device_.name());
  ASSIGN_OR_RETURN(std::shared_ptr<Program> program, device_.Build(sources, names));
  ++stats_.compile_calls;
  stats_.kernels_compiled += static_cast<int64_t>(todo.size());
  for (size_t i = 0; i < todo.size(); ++i)
    compiled_[todo[i]] = std::make_shared<const Compiled>(
        Compiled{program, static_cast<uint32_t>(i), std::move(sigs[i]), dims[i], GridOf(todo[i])});
  return absl::OkStatus();
}

absl::StatusOr<std::string> KernelCache::Source(const UOp& kernel) {
  if (kernel.is(Ops::MATMUL))
    return absl::StrCat("// a matmul of ", DTypeName(kernel.src(1).dtype()), " x ",
                        DTypeName(kernel.src(2).dtype()), " -> ", DTypeName(kernel.src(0).dtype()),
                        ": the kernel ", device_.name(), "'s plugin supplies\n");
  std::string key = SerializeGraph(kernel);
  ASSIGN_OR_RETURN(RenderedKernel r, device_.Render(key, KernelName(key)));
  return r.source;
}

absl::Status KernelCache::Check(const KernelLaunch& l, const KernelSignature& sig,
                             std::vector<uopc_buffer*>* bufs, std::vector<int64_t>* vars) const {
  bufs->assign(sig.buffers.size(), nullptr);
  for (size_t slot = 0; slot < sig.buffers.size(); ++slot) {
    const KernelSignature::Buffer& want = sig.buffers[slot];
    if (!want.used) continue;
    auto fail = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("launch on ", device_.name(), ": buffer slot ",
                                                     slot, " wants ", want.size, " x ",
                                                     DTypeName(want.dtype), "; ", what));
    };
    if (slot >= l.buffers.size() || !l.buffers[slot]) return fail("no buffer is bound");
    const Buffer& b = l.buffers[slot];
    if (b.device() != &device_)
      return fail(absl::StrCat("the buffer lives on ", b.device()->name()));
    if (b.dtype() != want.dtype || b.count() < want.size)
      return fail(absl::StrCat("got ", b.count(), " x ", DTypeName(b.dtype())));
    (*bufs)[slot] = b.handle();
  }
  vars->clear();
  for (const VarArg& v : sig.vars) {
    auto it = l.vars.find(v.name);
    if (it == l.vars.end())
      return absl::InvalidArgumentError(
          absl::StrCat("launch on ", device_.name(), ": no value for VAR ", v.name));
    if (it->second < v.lo || it->second > v.hi)
      return absl::OutOfRangeError(absl::StrCat("launch on ", device_.name(), ": VAR ", v.name,
                                                " = ", it->second, " is outside its bounds [", v.lo,
                                                ", ", v.hi, "]"));
    vars->push_back(it->second);
  }
  return absl::OkStatus();
}

absl::StatusOr<Event> KernelCache::LaunchCall(const KernelLaunch& l) {
  // the device's kernel for this op and these dtypes (the lowering chose it from the target)
  const auto dtype = [&](int i) { return l.kernel.src(i).dtype(); };
  const SuppliedKernel* kernel = nullptr;
  for (const SuppliedKernel& k : device_.target().kernels)
    if (k.op == "matmul" && k.out == dtype(0) && k.a == dtype(1) && k.b == dtype(2)) kernel = &k;
  if (!kernel)
    return absl::FailedPreconditionError(
        absl::StrCat("launch on ", device_.name(), ": its plugin supplies no matmul kernel of ",
                     DTypeName(dtype(1)), " x ", DTypeName(dtype(2)), " -> ", DTypeName(dtype(0)),
                     " (the plan was lowered for another target)"));
  ASSIGN_OR_RETURN(MatmulParams p, EvalMatmulParams(l.kernel, l.vars));
  std::vector<uopc_buffer*> bufs;
  int64_t counts[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    const int slot = l.kernel.src(i).arg().Get<ParamArg>().slot;
    if (slot >= static_cast<int>(l.buffers.size()) || !l.buffers[slot] ||
        l.buffers[slot].device() != &device_ || l.buffers[slot].dtype() != dtype(i))
      return absl::InvalidArgumentError(
          absl::StrCat("launch of ", kernel->name, " on ", device_.name(), ": buffer slot ", slot,
                       " wants ", DTypeName(dtype(i)), " on ", device_.name()));
    bufs.push_back(l.buffers[slot].handle());
    counts[i] = l.buffers[slot].count();
  }
  RETURN_IF_ERROR(CheckMatmul(p, counts[0], counts[1], counts[2]));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.launches;
  }
  const auto values = p.Values();
  return device_.LaunchSupplied(kernel->name, bufs, {}, values);
}

absl::StatusOr<Event> KernelCache::Launch(const KernelLaunch& l) {
  if (l.kernel.is(Ops::MATMUL)) return LaunchCall(l);
  std::shared_ptr<const Compiled> c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = compiled_.find(l.kernel);
    if (it != compiled_.end()) c = it->second;
  }
  if (!c) {
    RETURN_IF_ERROR(Prepare({l.kernel}));
    std::lock_guard<std::mutex> lock(mu_);
    c = compiled_.at(l.kernel);
  }
  std::vector<uopc_buffer*> bufs;
  std::vector<int64_t> vars;
  RETURN_IF_ERROR(Check(l, c->signature, &bufs, &vars));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.launches;
  }
  LaunchDims dims = c->dims;
  if (c->grid) {  // as many blocks as this launch's lengths need (at least one)
    const std::optional<int64_t> blocks = EvalIndex(c->grid, l.vars);
    if (blocks)
      dims.global[0] = static_cast<uint32_t>(std::clamp<int64_t>(*blocks, 1, dims.global[0]));
  }
  return device_.Launch(*c->program, c->entry, bufs, vars, {}, dims);
}

absl::Status KernelCache::Run(absl::Span<const KernelLaunch> launches) {
  std::vector<UOp> kernels;
  for (const KernelLaunch& l : launches) kernels.push_back(l.kernel);
  RETURN_IF_ERROR(Prepare(kernels));
  for (const KernelLaunch& l : launches) RETURN_IF_ERROR(Launch(l).status());
  return device_.Synchronize();
}

KernelCache::Stats KernelCache::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace uopc
