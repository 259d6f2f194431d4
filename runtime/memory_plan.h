// ShareTemporaries: the memory of a plan's temporaries. A temporary lives from the first
// step that uses it to the last; temporaries of one device whose lives do not overlap share
// one arena (a block the run allocates once), so a plan holds at once only what its live
// temporaries need, as a framework frees an activation after its last reader. Inputs and
// outputs keep memory of their own. Each temporary takes the smallest free arena of its
// device that holds it, else the largest free one, grown to hold it, else a new one. A
// step's buffers are all live through it (one step never reads and writes shared memory),
// and the executor orders steps by the memory they touch, so a later user of an arena
// waits for the earlier one's readers (runtime/executor.h).
#pragma once

#include "runtime/plan.h"

namespace uopc {

/// Sets plan->arenas and plan->arena_of.
void ShareTemporaries(Plan* plan);

}  // namespace uopc
