#include "backends/kernel_form.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include "core/kernel_signature.h"
#include "core/serialize.h"
#include "core/status_macros.h"
#include "core/verify.h"
#include "passes/linearize.h"

namespace uopc {
namespace {

// A form and the storage its pointers point into; the form comes first, so that the
// pointer the caller holds is the holder's.
struct FormHolder {
  uopc_kernel_form form{};
  std::vector<uopc_kernel_node> nodes;
  std::vector<std::vector<uint32_t>> srcs;
  std::deque<std::string> strings;  // (a deque: growing it moves no string)
  std::vector<uint32_t> buffers, vars;

  const char* Keep(std::string s) { return strings.emplace_back(std::move(s)).c_str(); }
};

absl::Status Fill(const UOp& node, const absl::flat_hash_map<const UOp::Node*, uint32_t>& index,
                  FormHolder& h, uopc_kernel_node& n, std::vector<uint32_t>& src) {
  const Ops op = node.op();
  const bool loop_level = IsAlu(op) || op == Ops::SINK || op == Ops::CONST || op == Ops::VAR ||
                          op == Ops::BUFFER || op == Ops::ALLOC || op == Ops::RANGE ||
                          op == Ops::INDEX || op == Ops::LOAD || op == Ops::STORE ||
                          op == Ops::END || op == Ops::AFTER || op == Ops::BARRIER;
  if (!loop_level)
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel form: a ", OpName(op), " node is not a loop-level op (lower the kernel first)"));
  n.op = OpName(op).data();  // (the names are literals: they live forever)
  n.dtype = static_cast<uopc_dtype>(node.dtype());
  for (const UOp& s : node.src()) src.push_back(index.at(s.get()));
  const Arg& a = node.arg();
  if (a.Empty()) return absl::OkStatus();
  if (const bool* b = a.TryGet<bool>()) {
    n.arg = UOPC_KERNEL_ARG_CONST, n.i = *b;
  } else if (const int64_t* i = a.TryGet<int64_t>()) {
    n.arg = UOPC_KERNEL_ARG_CONST, n.i = *i;
  } else if (const double* f = a.TryGet<double>()) {
    n.arg = UOPC_KERNEL_ARG_CONST, n.f = *f;
  } else if (const VarArg* v = a.TryGet<VarArg>()) {
    n.arg = UOPC_KERNEL_ARG_VAR, n.name = h.Keep(v->name), n.lo = v->lo, n.hi = v->hi;
  } else if (const ParamArg* p = a.TryGet<ParamArg>()) {
    n.arg = UOPC_KERNEL_ARG_PARAM, n.i = p->slot, n.size = p->size;
    if (op == Ops::ALLOC && !p->device.empty()) n.name = h.Keep(p->device);
  } else if (const RangeArg* r = a.TryGet<RangeArg>()) {
    n.arg = UOPC_KERNEL_ARG_RANGE, n.i = r->idx, n.name = RangeKindName(r->kind).data();
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel form: a ", OpName(op), " node with an argument of another kind"));
  }
  return absl::OkStatus();
}

absl::StatusOr<FormHolder*> Read(absl::string_view bytes) {
  ASSIGN_OR_RETURN(UOp sink, DeserializeGraph(bytes));
  RETURN_IF_ERROR(Verify(sink));
  ASSIGN_OR_RETURN(std::vector<UOp> program, Linearize(sink));
  ASSIGN_OR_RETURN(KernelSignature sig, SignatureOf(sink));
  auto h = std::make_unique<FormHolder>();
  h->nodes.resize(program.size());
  h->srcs.resize(program.size());
  absl::flat_hash_map<const UOp::Node*, uint32_t> index;
  absl::flat_hash_map<std::string, uint32_t> var_node;
  h->buffers.assign(sig.buffers.size(), UINT32_MAX);
  for (uint32_t k = 0; k < program.size(); ++k) {
    const UOp& u = program[k];
    uopc_kernel_node& n = h->nodes[k];
    RETURN_IF_ERROR(Fill(u, index, *h, n, h->srcs[k]));
    n.src = h->srcs[k].data();
    n.num_src = static_cast<uint32_t>(h->srcs[k].size());
    index[u.get()] = k;
    if (u.is(Ops::BUFFER)) h->buffers[u.arg().Get<ParamArg>().slot] = k;
    if (u.is(Ops::VAR)) var_node.emplace(u.arg().Get<VarArg>().name, k);
  }
  for (const VarArg& v : sig.vars) h->vars.push_back(var_node.at(v.name));
  h->form.version = UOPC_KERNEL_FORM_VERSION;
  h->form.num_nodes = static_cast<uint32_t>(h->nodes.size());
  h->form.nodes = h->nodes.data();
  h->form.num_buffers = static_cast<uint32_t>(h->buffers.size());
  h->form.buffers = h->buffers.data();
  h->form.num_vars = static_cast<uint32_t>(h->vars.size());
  h->form.vars = h->vars.data();
  return h.release();
}

}  // namespace
}  // namespace uopc

extern "C" uopc_kernel_form* uopc_kernel_form_read(const void* kernel, uint64_t size, char* why,
                                                   size_t why_size) {
  absl::StatusOr<uopc::FormHolder*> h = absl::InvalidArgumentError("kernel form: no kernel (NULL)");
  try {  // nothing throws across the ABI
    if (kernel) h = uopc::Read(absl::string_view(static_cast<const char*>(kernel), size));
  } catch (const std::bad_alloc&) {
    h = absl::ResourceExhaustedError("kernel form: out of memory");
  }
  if (h.ok()) return &(*h)->form;
  if (why && why_size)
    std::snprintf(why, why_size, "%s", std::string(h.status().message()).c_str());
  return nullptr;
}

extern "C" void uopc_kernel_form_free(uopc_kernel_form* form) {
  delete reinterpret_cast<uopc::FormHolder*>(form);
}
