#include "frontend/autocast.h"

#include <string>

#include "frontend/error.h"

namespace uopc {
namespace {

thread_local std::optional<DType> current;

}  // namespace

Autocast::Autocast(DType low) : previous_(current) {
  if (!IsHalf(low) && low != DType::kF32)
    ThrowInvalid("autocast: dtype " + std::string(DTypeName(low)) + "; expected bf16, f16 or f32");
  current = IsHalf(low) ? std::optional(low) : std::nullopt;
}

Autocast::~Autocast() { current = previous_; }

std::optional<DType> Autocast::Current() { return current; }

}  // namespace uopc
