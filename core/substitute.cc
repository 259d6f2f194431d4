#include "core/substitute.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

namespace uopc {

UOp RewriteNodes(const UOp& root, const std::function<UOp(const UOp&, const UOp&)>& fn) {
  absl::flat_hash_map<const UOp::Node*, UOp> done;  // keys live: they are under `root`
  for (const UOp& u : root.Toposort()) {
    absl::InlinedVector<UOp, 4> src;
    bool changed = false;
    for (const UOp& s : u.src()) {
      src.push_back(done.at(s.get()));
      changed |= !(src.back() == s);
    }
    done.emplace(u.get(), fn(u, changed ? u.WithSrc(src) : u));
  }
  return done.at(root.get());
}

UOp ReplaceNodes(const UOp& root, const absl::flat_hash_map<const UOp::Node*, UOp>& with) {
  return RewriteNodes(root, [&](const UOp& orig, const UOp& rebuilt) {
    auto it = with.find(orig.get());
    return it == with.end() ? rebuilt : it->second;
  });
}

}  // namespace uopc
