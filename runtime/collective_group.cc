#include "runtime/collective_group.h"

#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace uopc {
namespace {

struct Registry {
  std::mutex mu;
  int next = 1;  // 0: no group (a COLLECTIVE made without one)
  absl::flat_hash_map<int, CollectiveGroup*> groups;
};

Registry& Groups() {
  static auto* r = new Registry();
  return *r;
}

}  // namespace

int RegisterCollectiveGroup(CollectiveGroup* group) {
  Registry& r = Groups();
  std::lock_guard<std::mutex> lock(r.mu);
  r.groups[r.next] = group;
  return r.next++;
}

void UnregisterCollectiveGroup(int number) {
  Registry& r = Groups();
  std::lock_guard<std::mutex> lock(r.mu);
  r.groups.erase(number);
}

absl::StatusOr<CollectiveGroup*> FindCollectiveGroup(int number) {
  Registry& r = Groups();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.groups.find(number);
  if (it == r.groups.end())
    return absl::NotFoundError(
        absl::StrCat("no process group ", number,
                     " in this process (was it closed, or is this plan from another process?)"));
  return it->second;
}

}  // namespace uopc
