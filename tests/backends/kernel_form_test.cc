// The kernel form (backends/kernel_form.h) holds what the serialized kernel holds: node for
// node the linearized program, with its ops, dtypes, sources and arguments, and the launch
// convention's buffers and VARs, and gives the graph back (backends/kernel_graph.h); bad
// bytes are an error with a message, never a crash.
#include "backends/kernel_form.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "backends/kernel_graph.h"
#include "core/kernel_signature.h"
#include "core/serialize.h"
#include "passes/linearize.h"
#include "tests/backends/conformance/conformance.h"
#include "tests/testing/lowered_kernels.h"

namespace uopc {
namespace {

// Whether `n` says what `u` is, its sources being the program's nodes at those indices.
void ExpectSame(const uopc_kernel_node& n, const UOp& u, const std::vector<UOp>& program,
                const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(std::string(n.op), std::string(OpName(u.op())));
  EXPECT_EQ(n.dtype, static_cast<uopc_dtype>(u.dtype()));
  ASSERT_EQ(n.num_src, u.src().size());
  for (size_t s = 0; s < u.src().size(); ++s) {
    ASSERT_LT(n.src[s], program.size());
    EXPECT_EQ(program[n.src[s]], u.src(s)) << "source " << s;
  }
  const Arg& a = u.arg();
  if (a.Empty()) {
    EXPECT_EQ(n.arg, UOPC_KERNEL_ARG_NONE);
  }
  if (const bool* b = a.TryGet<bool>()) {
    EXPECT_EQ(n.i, *b);
  }
  if (const int64_t* i = a.TryGet<int64_t>()) {
    EXPECT_EQ(n.i, *i);
  }
  if (const double* f = a.TryGet<double>()) {
    EXPECT_EQ(std::memcmp(&n.f, f, sizeof *f), 0);
  }
  if (a.Is<bool>() || a.Is<int64_t>() || a.Is<double>()) {
    EXPECT_EQ(n.arg, UOPC_KERNEL_ARG_CONST);
  }
  if (const VarArg* v = a.TryGet<VarArg>()) {
    EXPECT_EQ(n.arg, UOPC_KERNEL_ARG_VAR);
    EXPECT_EQ(std::string(n.name), v->name);
    EXPECT_EQ(n.lo, v->lo);
    EXPECT_EQ(n.hi, v->hi);
  }
  if (const ParamArg* p = a.TryGet<ParamArg>()) {
    EXPECT_EQ(n.arg, UOPC_KERNEL_ARG_PARAM);
    EXPECT_EQ(n.i, p->slot);
    EXPECT_EQ(n.size, p->size);
  }
  if (const RangeArg* r = a.TryGet<RangeArg>()) {
    EXPECT_EQ(n.arg, UOPC_KERNEL_ARG_RANGE);
    EXPECT_EQ(n.i, r->idx);
    EXPECT_EQ(std::string(n.name), std::string(RangeKindName(r->kind)));
  }
}

void ExpectFormOf(const UOp& kernel, const std::string& name) {
  SCOPED_TRACE(name);
  std::string bytes = SerializeGraph(kernel);
  char why[256] = "";
  uopc_kernel_form* f = uopc_kernel_form_read(bytes.data(), bytes.size(), why, sizeof why);
  ASSERT_NE(f, nullptr) << why;
  EXPECT_EQ(f->version, UOPC_KERNEL_FORM_VERSION);
  std::vector<UOp> program = *Linearize(kernel);
  ASSERT_EQ(f->num_nodes, program.size());
  for (size_t k = 0; k < program.size(); ++k)
    ExpectSame(f->nodes[k], program[k], program, "node " + std::to_string(k));
  KernelSignature sig = *SignatureOf(kernel);
  ASSERT_EQ(f->num_buffers, sig.buffers.size());
  for (uint32_t s = 0; s < f->num_buffers; ++s) {
    if (!sig.buffers[s].used) continue;
    ASSERT_LT(f->buffers[s], f->num_nodes);
    const uopc_kernel_node& b = f->nodes[f->buffers[s]];
    EXPECT_EQ(std::string(b.op), "buffer");
    EXPECT_EQ(b.i, s);
    EXPECT_EQ(b.dtype, static_cast<uopc_dtype>(sig.buffers[s].dtype));
  }
  ASSERT_EQ(f->num_vars, sig.vars.size());
  for (uint32_t v = 0; v < f->num_vars; ++v)
    EXPECT_EQ(std::string(f->nodes[f->vars[v]].name), sig.vars[v].name);
  uopc_kernel_form_free(f);
  // and back: the same graph, node for node (what uopc's own backends render from)
  absl::StatusOr<UOp> back = ReadKernel(bytes.data(), bytes.size());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, kernel);
}

TEST(KernelForm, HoldsEveryConformanceKernelNodeForNode) {
  auto kernels = ConformanceKernels();
  ASSERT_GT(kernels.size(), 100u);
  for (const auto& [name, kernel] : kernels) ExpectFormOf(kernel, name);
}

TEST(KernelForm, HoldsLoweredKernels) {
  for (const testing::Case& c : testing::kCases)
    for (const UOp& k : testing::Kernels(c.uir)) ExpectFormOf(k, c.name);
}

TEST(KernelForm, BadBytesAreAnErrorWithAMessage) {
  char why[256] = "";
  const char junk[] = "\x0a\x05garbage";
  EXPECT_EQ(uopc_kernel_form_read(junk, sizeof junk, why, sizeof why), nullptr);
  EXPECT_NE(std::string(why), "");
  EXPECT_EQ(uopc_kernel_form_read(nullptr, 0, why, sizeof why), nullptr);
  EXPECT_EQ(std::string(why), "kernel form: no kernel (NULL)");
  char tiny[8];
  EXPECT_EQ(uopc_kernel_form_read(nullptr, 0, tiny, sizeof tiny), nullptr);
  EXPECT_EQ(std::string(tiny), "kernel ");  // cut to the room given, terminated
}

TEST(KernelForm, ATensorLevelGraphIsRefusedNamingTheOp) {
  std::string bytes = SerializeGraph(*ParseUir(testing::kCases[0].uir));  // reshape, mul
  char why[256] = "";
  EXPECT_EQ(uopc_kernel_form_read(bytes.data(), bytes.size(), why, sizeof why), nullptr);
  EXPECT_EQ(std::string(why),
            "kernel form: a reshape node is not a loop-level op (lower the kernel first)");
}

}  // namespace
}  // namespace uopc
