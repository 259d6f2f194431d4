#include "backends/cuda/cuda_emulator.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <atomic>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace uopc::cuda::emu {
namespace {

constexpr size_t kStackBytes = size_t{256} << 10;  // (a fiber's; ASan's frames are larger)
constexpr uint32_t kMaxThreads = 1024, kWarp = 32;

enum class State { kReady, kAtBarrier, kAtWarp, kDone };

// ---- contexts: where a fiber stopped, and the switch between two ----
#if defined(__x86_64__)
// A context is its stack pointer: the callee-saved registers, MXCSR and the x87 control word
// (what the System V ABI has a call keep) lie on its stack. glibc's swapcontext also saves
// the signal mask, a system call each switch: most of the emulator's time.
struct Context {
  void* sp = nullptr;
};
extern "C" void uopc_emu_swap(void** save_sp, void* load_sp);
asm(R"(
  .pushsection .text
  .globl uopc_emu_swap
  .hidden uopc_emu_swap
  .type uopc_emu_swap, @function
uopc_emu_swap:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size uopc_emu_swap, .-uopc_emu_swap
  .popsection
)");
void Swap(Context* from, Context* to) { uopc_emu_swap(&from->sp, to->sp); }
// a context that, switched to, calls `entry` (which must not return) on `stack`
void Make(Context* c, char* stack, size_t bytes, void (*entry)()) {
  uint64_t* sp = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack) + bytes) & ~15ul);
  *--sp = 0;                                  // (entry's return address: it has none)
  *--sp = reinterpret_cast<uint64_t>(entry);  // (where the switch returns to)
  for (int i = 0; i < 6; ++i) *--sp = 0;      // rbp, rbx, r12 to r15
  uint32_t mxcsr;
  uint16_t x87;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87));
  *--sp = mxcsr | uint64_t{x87} << 32;
  c->sp = sp;
}
#else
struct Context {
  ucontext_t uc;
};
void Swap(Context* from, Context* to) { swapcontext(&from->uc, &to->uc); }
void Make(Context* c, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = bytes;
  c->uc.uc_link = nullptr;
  makecontext(&c->uc, entry, 0);
}
#endif

struct Copy {
  void* to;
  const void* from;
  uint32_t bytes;
};

struct Lane {  // one thread of the block
  Context context;
  char* stack = nullptr;
  void* tsan_fiber = nullptr;
  ThreadIds ids;
  State state = State::kReady;
  WarpOp op = nullptr;
  const char* instruction = "";
  void* mine = nullptr;
  std::vector<Copy> open;                // cp.async copies not yet committed
  std::deque<std::vector<Copy>> groups;  // committed, oldest first
};

struct Block {  // one block's run on this CPU thread
  absl::string_view kernel;
  KernelBody body = nullptr;
  void* const* params = nullptr;
  std::vector<Lane> lanes;
  std::vector<int> warp_waiting;  // lanes of each warp at a warp instruction
  int current = 0, at_barrier = 0, done = 0;
  unsigned char* shared = nullptr;
  uint32_t shared_bytes = 0;
  Context scheduler;
  const void* scheduler_stack = nullptr;  // (for ASan: where the scheduler's stack lies)
  size_t scheduler_stack_bytes = 0;
  void* scheduler_tsan_fiber = nullptr;
  std::string error;
};

thread_local Block* t_block = nullptr;
thread_local std::vector<std::unique_ptr<char[]>> t_stacks;  // (reused across blocks)

std::string Name(const Dim3& d) { return absl::StrCat("(", d.x, ", ", d.y, ", ", d.z, ")"); }

// Swap, told to the sanitizers: `to_stack` is where the context switched to runs; `dying`
// when the context left is never resumed
void Switch(Context* from, Context* to, const void* to_stack, size_t to_bytes, void* to_tsan_fiber,
            bool dying) {
#if defined(__SANITIZE_ADDRESS__)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(dying ? nullptr : &fake, to_stack, to_bytes);
#else
  (void)to_stack, (void)to_bytes, (void)dying;
#endif
#if defined(__SANITIZE_THREAD__)
  __tsan_switch_to_fiber(to_tsan_fiber, 0);
#else
  (void)to_tsan_fiber;
#endif
  Swap(from, to);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

void ToScheduler(bool dying) {
  Block& b = *t_block;
  Lane& l = b.lanes[b.current];
  Switch(&l.context, &b.scheduler, b.scheduler_stack, b.scheduler_stack_bytes,
         b.scheduler_tsan_fiber, dying);
}

// every thread that has not exited is at the barrier: they go on
bool ReleaseBarrier(Block& b) {
  const int live = static_cast<int>(b.lanes.size()) - b.done;
  if (b.at_barrier == 0 || b.at_barrier < live) return false;
  for (Lane& l : b.lanes)
    if (l.state == State::kAtBarrier) l.state = State::kReady;
  b.at_barrier = 0;
  return true;
}

// what Fail throws: the failing thread's frames unwind to LaneMain (their destructors run)
struct LaunchFailed {};

void LaneMain() {
  Block& b = *t_block;
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &b.scheduler_stack, &b.scheduler_stack_bytes);
#endif
  try {
    b.body(b.params);
    b.lanes[b.current].state = State::kDone;
    ++b.done;
    ReleaseBarrier(b);
  } catch (const LaunchFailed&) {  // (b.error says why)
  } catch (const std::exception& e) {  // (out of memory: not past this fiber's stack)
    const Lane& l = b.lanes[b.current];
    b.error = absl::StrCat(b.kernel, ": block ", Name(l.ids.block), ", thread ", Name(l.ids.thread),
                           ": ", e.what());
  }
  ToScheduler(/*dying=*/true);
}

// why no thread can go on
std::string Stuck(const Block& b) {
  std::string barrier, warp, exited;
  int n_barrier = 0, n_warp = 0, n_exited = 0;
  for (size_t i = 0; i < b.lanes.size(); ++i) {
    const Lane& l = b.lanes[i];
    const std::string who = absl::StrCat("thread ", Name(l.ids.thread));
    if (l.state == State::kAtBarrier && n_barrier++ == 0) barrier = who;
    if (l.state == State::kAtWarp && n_warp++ == 0)
      warp = absl::StrCat(who, " at ", l.instruction, " in warp ", i / kWarp);
    if (l.state == State::kDone && n_exited++ == 0) exited = who;
  }
  std::string s = "no thread can go on (a hang on a GPU):";
  if (n_barrier) absl::StrAppend(&s, " ", n_barrier, " wait at __syncthreads (", barrier, ");");
  if (n_warp)
    absl::StrAppend(&s, " ", n_warp, " wait at a warp instruction (", warp,
                    ") that not all 32 of its lanes reach;");
  if (n_exited) absl::StrAppend(&s, " ", n_exited, " have exited (", exited, ")");
  return s;
}

absl::Status RunBlock(absl::string_view kernel, KernelBody body, void* const* params, Dim3 grid,
                      Dim3 block, Dim3 block_idx, uint32_t shared_bytes) {
  const uint32_t n = block.x * block.y * block.z;
  Block b;
  b.kernel = kernel, b.body = body, b.params = params;
  b.lanes.resize(n);
  b.warp_waiting.assign((n + kWarp - 1) / kWarp, 0);
  std::unique_ptr<unsigned char[]> shared;
  if (shared_bytes) {
    shared.reset(new unsigned char[shared_bytes]);
    std::memset(shared.get(), 0xff, shared_bytes);
  }
  b.shared = shared.get(), b.shared_bytes = shared_bytes;
  while (t_stacks.size() < n) t_stacks.emplace_back(new char[kStackBytes]);
#if defined(__SANITIZE_THREAD__)
  b.scheduler_tsan_fiber = __tsan_get_current_fiber();
#endif
  for (uint32_t i = 0; i < n; ++i) {
    Lane& l = b.lanes[i];
    l.ids = {{i % block.x, i / block.x % block.y, i / (block.x * block.y)}, block_idx, block, grid};
    l.stack = t_stacks[i].get();
#if defined(__SANITIZE_ADDRESS__)
    ASAN_UNPOISON_MEMORY_REGION(l.stack, kStackBytes);  // (a failed launch's frames)
#endif
#if defined(__SANITIZE_THREAD__)
    l.tsan_fiber = __tsan_create_fiber(0);
#endif
    Make(&l.context, l.stack, kStackBytes, LaneMain);
  }
  Block* const outer = t_block;
  t_block = &b;
  for (;;) {  // each ready thread runs until it waits or exits, in turn
    bool ran = false;
    for (uint32_t i = 0; i < n && b.error.empty(); ++i) {
      if (b.lanes[i].state != State::kReady) continue;
      ran = true;
      b.current = static_cast<int>(i);
      Lane& l = b.lanes[i];
      Switch(&b.scheduler, &l.context, l.stack, kStackBytes, l.tsan_fiber, /*dying=*/false);
    }
    if (!b.error.empty() || b.done == static_cast<int>(n)) break;
    if (!ran) {
      b.error = absl::StrCat(kernel, ": block ", Name(block_idx), ": ", Stuck(b));
      break;
    }
  }
  t_block = outer;
#if defined(__SANITIZE_THREAD__)
  for (Lane& l : b.lanes) __tsan_destroy_fiber(l.tsan_fiber);
#endif
  return b.error.empty() ? absl::OkStatus() : absl::FailedPreconditionError(b.error);
}

std::map<std::string, KernelBody, std::less<>>& Kernels() {
  static auto* kernels = new std::map<std::string, KernelBody, std::less<>>;
  return *kernels;
}

}  // namespace

absl::Status Launch(absl::string_view kernel, KernelBody body, Dim3 grid, Dim3 block,
                    uint32_t shared_bytes, void* const* params, const ParallelFor& parallel) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  if (!body) return absl::InvalidArgumentError(absl::StrCat(kernel, ": no kernel to launch"));
  if (threads == 0 || threads > kMaxThreads || blocks == 0)
    return absl::InvalidArgumentError(absl::StrCat(kernel, ": a launch of ", Name(grid),
                                                   " blocks of ", Name(block),
                                                   " threads; expected 1 to 1024 threads a "
                                                   "block and at least one block"));
  std::mutex mu;
  absl::Status first;
  std::atomic<bool> failed{false};
  const int chunks = parallel ? static_cast<int>(std::min<uint64_t>(blocks, 64)) : 1;
  auto run = [&](int c) {
    for (uint64_t i = c; i < blocks && !failed.load(std::memory_order_relaxed); i += chunks) {
      const Dim3 at{static_cast<uint32_t>(i % grid.x), static_cast<uint32_t>(i / grid.x % grid.y),
                    static_cast<uint32_t>(i / (uint64_t{grid.x} * grid.y))};
      absl::Status s = RunBlock(kernel, body, params, grid, block, at, shared_bytes);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = s;
        failed = true;
      }
    }
  };
  if (parallel && chunks > 1)
    parallel(chunks, run);
  else
    run(0);
  return first;
}

bool AddKernel(const char* name, KernelBody body) {
  Kernels()[name] = body;
  return true;
}

KernelBody FindKernel(absl::string_view name) {
  const auto& k = Kernels();
  const auto it = k.find(name);
  return it == k.end() ? nullptr : it->second;
}

const ThreadIds& Ids() { return t_block->lanes[t_block->current].ids; }

void SyncThreads() {
  Block& b = *t_block;
  b.lanes[b.current].state = State::kAtBarrier;
  ++b.at_barrier;
  if (!ReleaseBarrier(b)) ToScheduler(/*dying=*/false);
}

void WarpCollective(WarpOp op, const char* instruction, void* mine) {
  Block& b = *t_block;
  const int me = b.current, warp = me / static_cast<int>(kWarp);
  const int first = warp * static_cast<int>(kWarp);
  if (first + static_cast<int>(kWarp) > static_cast<int>(b.lanes.size()))
    Fail(absl::StrCat(instruction, " in warp ", warp, ", which has fewer than 32 threads"));
  Lane& l = b.lanes[me];
  l.state = State::kAtWarp, l.op = op, l.instruction = instruction, l.mine = mine;
  if (++b.warp_waiting[warp] < static_cast<int>(kWarp)) {
    ToScheduler(/*dying=*/false);  // (the last lane to come runs the instruction)
    return;
  }
  void* lanes[kWarp];
  for (uint32_t i = 0; i < kWarp; ++i) {
    const Lane& o = b.lanes[first + i];
    if (o.op != op)
      Fail(absl::StrCat("the lanes of warp ", warp, " execute different warp instructions (lane ",
                        i, ": ", o.instruction, "; lane ", me - first, ": ", instruction, ")"));
    lanes[i] = o.mine;
  }
  if (std::string wrong = op(lanes); !wrong.empty()) Fail(absl::StrCat(instruction, ": ", wrong));
  b.warp_waiting[warp] = 0;
  for (uint32_t i = 0; i < kWarp; ++i) {
    Lane& o = b.lanes[first + i];
    o.state = State::kReady, o.op = nullptr, o.mine = nullptr;
  }
}

unsigned char* DynamicShared() { return t_block->shared; }

std::string CheckShared(const void* p, uint32_t bytes, uint32_t align) {
  const Block& b = *t_block;
  const auto at = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(b.shared);
  if (at < base || at - base + bytes > b.shared_bytes)
    return absl::StrCat(bytes, " bytes at byte ", static_cast<int64_t>(at - base),
                        " of the block's dynamic shared memory, which has ", b.shared_bytes);
  if (at % align)
    return absl::StrCat("shared memory at byte ", at - base, " is not aligned to ", align);
  return "";
}

void CpAsync(void* shared, const void* global, uint32_t bytes) {
  if (std::string wrong = CheckShared(shared, bytes, bytes); !wrong.empty())
    Fail("cp.async: " + wrong);
  if (reinterpret_cast<uintptr_t>(global) % bytes)
    Fail(absl::StrCat("cp.async: global address 0x", absl::Hex(reinterpret_cast<uintptr_t>(global)),
                      " is not aligned to ", bytes));
  t_block->lanes[t_block->current].open.push_back({shared, global, bytes});
}

void CpAsyncCommit() {
  Lane& l = t_block->lanes[t_block->current];
  l.groups.push_back(std::move(l.open));
  l.open.clear();
}

void CpAsyncWait(int pending) {
  Lane& l = t_block->lanes[t_block->current];
  while (static_cast<int>(l.groups.size()) > pending) {
    for (const Copy& c : l.groups.front()) std::memcpy(c.to, c.from, c.bytes);
    l.groups.pop_front();
  }
}

void Fail(const std::string& what) {
  Block& b = *t_block;
  const Lane& l = b.lanes[b.current];
  b.error = absl::StrCat(b.kernel, ": block ", Name(l.ids.block), ", thread ", Name(l.ids.thread),
                         ": ", what);
  throw LaunchFailed{};
}

}  // namespace uopc::cuda::emu
