#include "core/placement.h"

#include "absl/strings/str_cat.h"

namespace uopc {

absl::StatusOr<std::string> Placement::Of(const UOp& root) {
  if (auto it = memo_.find(root); it != memo_.end()) return it->second;
  for (const UOp& u : root.Toposort()) {
    if (memo_.contains(u)) continue;
    std::string d;
    if (const auto* p = u.arg().TryGet<ParamArg>(); p && u.is(Ops::BUFFER)) {
      d = p->device;
    } else if ((u.is(Ops::COPY) || u.is(Ops::STAGE)) && !u.arg().Get<DeviceArg>().name.empty()) {
      d = u.arg().Get<DeviceArg>().name;
    } else {
      for (const UOp& s : u.src()) {
        const std::string& sd = memo_.at(s);
        if (sd.empty() || sd == d) continue;
        if (!d.empty())
          return absl::InvalidArgumentError(
              absl::StrCat(OpName(u.op()), ": sources on ", d, " and ", sd,
                           "; only a COPY moves data between devices"));
        d = sd;
      }
    }
    memo_.emplace(u, std::move(d));
  }
  return memo_.at(root);
}

}  // namespace uopc
