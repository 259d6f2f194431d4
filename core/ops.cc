#include "core/ops.h"

#include <array>

#include "absl/strings/string_view.h"

namespace uopc {
namespace {

struct Info {
  absl::string_view name;
  int arity;
  uint32_t groups;
  ArgKind arg;
};

constexpr std::array<Info, kNumOps> kInfo = {{
#define UOPC_OP_INFO(e, n, a, g, k) {n, a, g, ArgKind::k},
    UOPC_FOR_EACH_OP(UOPC_OP_INFO)
#undef UOPC_OP_INFO
}};

}  // namespace

absl::string_view OpName(Ops op) { return kInfo[static_cast<int>(op)].name; }
int OpArity(Ops op) { return kInfo[static_cast<int>(op)].arity; }
int OpMinArity(Ops op) {
  int a = OpArity(op);
  return a >= 0 ? a : op == Ops::SINK ? 0 : 1;
}
uint32_t OpGroups(Ops op) { return kInfo[static_cast<int>(op)].groups; }
ArgKind OpArgKind(Ops op) { return kInfo[static_cast<int>(op)].arg; }

OpSet OpsInGroup(uint32_t group) {
  OpSet set;
  for (int i = 0; i < kNumOps; ++i)
    if (kInfo[i].groups & group) set.Add(static_cast<Ops>(i));
  return set;
}

std::optional<Ops> ParseOp(absl::string_view name) {
  for (int i = 0; i < kNumOps; ++i)
    if (kInfo[i].name == name) return static_cast<Ops>(i);
  return std::nullopt;
}

}  // namespace uopc
