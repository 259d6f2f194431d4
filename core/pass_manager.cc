#include "core/pass_manager.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "core/env.h"
#include "core/status_macros.h"
#include "core/uir.h"
#include "core/verify.h"

namespace uopc {
namespace {

class FnPass : public Pass {
 public:
  FnPass(std::string name, std::function<absl::StatusOr<UOp>(const UOp&, const PassContext&)> fn)
      : name_(std::move(name)), fn_(std::move(fn)) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<UOp> Run(const UOp& g, const PassContext& ctx) const override {
    return fn_(g, ctx);
  }

 private:
  std::string name_;
  std::function<absl::StatusOr<UOp>(const UOp&, const PassContext&)> fn_;
};

// Whether UOPC_PRINT_AFTER names `pass` (or is "all"); a name of no pass of `pm` and none
// registered is said once, with the names there are.
bool PrintAfter(absl::string_view pass, const std::vector<std::string>& pipeline) {
  if (!std::getenv("UOPC_PRINT_AFTER")) return false;
  std::vector<std::string> known = pipeline;
  for (const std::string& n : PassRegistry::Get().Names())
    if (std::find(known.begin(), known.end(), n) == known.end()) known.push_back(n);
  known.push_back("all");
  for (const std::string& p : EnvNames("UOPC_PRINT_AFTER", known))
    if (p == pass || p == "all") return true;
  return false;
}

}  // namespace

std::unique_ptr<Pass> MakePass(
    std::string name, std::function<absl::StatusOr<UOp>(const UOp&, const PassContext&)> fn) {
  return std::make_unique<FnPass>(std::move(name), std::move(fn));
}

PassRegistry& PassRegistry::Get() {
  static PassRegistry* r = new PassRegistry();
  return *r;
}

void PassRegistry::Register(const std::string& name, Factory factory) {
  for (auto& [n, f] : factories_)
    if (n == name) {
      f = std::move(factory);
      return;
    }
  factories_.emplace_back(name, std::move(factory));
}

std::vector<std::string> PassRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_) out.push_back(n);
  return out;
}

absl::StatusOr<std::unique_ptr<Pass>> PassRegistry::Create(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& [n, f] : factories_) {
    if (n == name) return f();
    names.push_back(n);
  }
  return absl::NotFoundError(
      absl::StrCat("no pass named '", name, "' (registered: ", absl::StrJoin(names, ", "), ")"));
}

bool PassManager::DefaultVerify() {
#ifdef NDEBUG
  return EnvBool("UOPC_VERIFY", false);
#else
  return EnvBool("UOPC_VERIFY", true);
#endif
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_) out.emplace_back(p->name());
  return out;
}

absl::Status PassManager::InsertBefore(absl::string_view anchor, std::unique_ptr<Pass> pass) {
  for (size_t i = 0; i < passes_.size(); ++i)
    if (passes_[i]->name() == anchor) {
      passes_.insert(passes_.begin() + i, std::move(pass));
      return absl::OkStatus();
    }
  return absl::NotFoundError(
      absl::StrCat("no pass '", anchor, "' in the pipeline (", absl::StrJoin(names(), ", "), ")"));
}

absl::Status PassManager::InsertAfter(absl::string_view anchor, std::unique_ptr<Pass> pass) {
  for (size_t i = 0; i < passes_.size(); ++i)
    if (passes_[i]->name() == anchor) {
      passes_.insert(passes_.begin() + i + 1, std::move(pass));
      return absl::OkStatus();
    }
  return absl::NotFoundError(
      absl::StrCat("no pass '", anchor, "' in the pipeline (", absl::StrJoin(names(), ", "), ")"));
}

absl::StatusOr<UOp> PassManager::Run(const UOp& graph, const PassContext& ctx) {
  UOp g = graph;
  if (verify_) {
    if (absl::Status s = Verify(g); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("before the first pass: ", s.message()));
  }
  for (const auto& pass : passes_) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<UOp> out = pass->Run(g, ctx);
    auto took = std::chrono::steady_clock::now() - start;
    auto it = std::find_if(timings_.begin(), timings_.end(),
                           [&](const Timing& t) { return t.pass == pass->name(); });
    if (it == timings_.end())
      it = timings_.insert(timings_.end(), Timing{std::string(pass->name())});
    it->total += std::chrono::duration_cast<std::chrono::nanoseconds>(took);
    ++it->runs;
    if (!out.ok())
      return absl::Status(out.status().code(),
                          absl::StrCat("pass ", pass->name(), ": ", out.status().message()));
    g = *std::move(out);
    if (PrintAfter(pass->name(), names())) std::cerr << "== after " << pass->name() << "\n" << ToUir(g);
    if (verify_) {
      if (absl::Status s = Verify(g); !s.ok())
        return absl::InternalError(
            absl::StrCat("pass ", pass->name(), " produced an invalid graph: ", s.message()));
    }
  }
  return g;
}

}  // namespace uopc
