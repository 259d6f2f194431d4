// The `uopc` command-line tool, run as a real process.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/version.h"
#include "tests/testing/command.h"

namespace {

using Result = uopc::testing::CommandResult;
using uopc::testing::RunCommand;
using uopc::testing::Runfile;

// Runs `uopc ARGS` with `input` on stdin; stdout and stderr together.
Result Uopc(const std::string& args, const std::string& input = "") {
  std::string in = std::string(std::getenv("TEST_TMPDIR")) + "/stdin.txt";
  std::ofstream(in) << input;
  return RunCommand(Runfile("tools/uopc") + " " + args + " < " + in);
}

TEST(UopcTool, SimplifyPrintsTheGraphAndItsBounds) {
  Result r = Uopc("simplify",
                  "%0 = range 4 : idx=0 kind=loop\n%1 = mul %0, 8\n%2 = var : name=n lo=1 hi=8\n"
                  "%3 = range %2 : idx=1 kind=loop\n%4 = add %1, %3\n%5 = floordiv %4, 8\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "%0 = range 4 : idx=0 kind=loop\n# bounds: (0, 3)\n");
}

TEST(UopcTool, SimplifyReadsAFile) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/g.uir";
  std::ofstream(path) << "%0 = cmplt 1.5, 2.0\n";
  Result r = Uopc("simplify " + path);
  EXPECT_EQ(r.out, "%0 = const true\n# bounds: (1, 1)\n");
}

TEST(UopcTool, ErrorsNameTheLineAndColumn) {
  Result r = Uopc("simplify", "%0 = range 4 : idx=0 kind=loop\n%1 = add %0, %7\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "uopc simplify: <stdin>: UIR line 2, column 14: %7 is not defined above\n");
}

TEST(UopcTool, InvalidGraphsAreRefusedBeforeSimplifying) {
  Result r = Uopc("simplify", "%0 = floordiv 7, 0\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out,
            "uopc simplify: <stdin>: invalid graph: floordiv (i32, operands i32 (), i32 ()): "
            "division by the constant 0; expected a nonzero divisor\n");
}

// What simplify prints reads back (the same graph again), and it never prints a graph that
// does not: a divisor that folds to 0 is refused, naming it.
TEST(UopcTool, WhatSimplifyPrintsReadsBack) {
  const std::string g = "%0 = var : name=x lo=0 hi=9\n%1 = mul %0, 4\n%2 = add %1, 3\n%3 = mod %2, 4\n";
  Result once = Uopc("simplify", g);
  ASSERT_EQ(once.status, 0) << once.out;
  Result twice = Uopc("simplify", once.out);
  EXPECT_EQ(twice.status, 0) << twice.out;
  EXPECT_EQ(twice.out, once.out);
  Result zero = Uopc("simplify", "%0 = var : name=x lo=0 hi=9\n%1 = add 1, -1\n%2 = floordiv %0, %1\n");
  EXPECT_EQ(zero.status, 1);
  EXPECT_EQ(zero.out,
            "uopc simplify: <stdin>: the graph divides by an expression that is always 0 (the "
            "divisor of a floordiv)\n");
}

TEST(UopcTool, VersionSaysItsOwnAndEachPluginsABI) {
  Result r = Uopc("--version");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(
      r.out.rfind(std::string("uopc ") + uopc::kVersion + " (plugin ABI 2.1, uop format 1)\n", 0),
      0u)
      << r.out;
  EXPECT_NE(r.out.find("plugin c 2.0 (ABI 2.1, uop format 1)"), std::string::npos) << r.out;
}

TEST(UopcTool, DevicesListsTheCPluginAndSmokeTestsItsDevice) {
  Result r = Uopc("devices");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("plugin c 2.0 (ABI 2.1, uop format 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("device CPU:0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("smoke kernel: PASS"), std::string::npos) << r.out;
  // the target it read: the class, the CPU's features and its caches
  EXPECT_NE(r.out.find("    target class=cpu arch=x86_64 features="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" l1d="), std::string::npos) << r.out;
}

TEST(UopcTool, DevicesSaysWhyAPluginDidNotLoadAndFailsForAMissingRequiredDevice) {
  Result r = RunCommand("env UOPC_PLUGINS=/no/such/libuopc_plugin_x.so UOPC_DEVICES=TPU:0 " +
                        Runfile("tools/uopc") + " devices 2>/dev/null");
  const std::string& out = r.out;
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(out.find("not loaded: plugin /no/such/libuopc_plugin_x.so: no such file"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("UOPC_DEVICES asks for TPU:0, which is not available: no device TPU:0"),
            std::string::npos)
      << out;
}

TEST(UopcTool, DevicesListsSeveralCpuDevicesAndRefusesABadCount) {
  Result r = RunCommand("env UOPC_CPU_DEVICES=2 " + Runfile("tools/uopc") + " devices");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("device CPU:1"), std::string::npos) << r.out;
  for (const char* bad : {"0", "abc", "65"}) {
    Result b = RunCommand(std::string("env UOPC_CPU_DEVICES=") + bad + " " +
                          Runfile("tools/uopc") + " devices");
    EXPECT_NE(b.out.find(std::string("initialize failed: c plugin: UOPC_CPU_DEVICES=") + bad +
                         ": expected an integer from 1 to 64"),
              std::string::npos)
        << b.out;
  }
  Result m = RunCommand("env UOPC_CPU_MEMORY=lots " + Runfile("tools/uopc") + " devices");
  EXPECT_NE(m.out.find("UOPC_CPU_MEMORY=lots; expected bytes per device (4096, 64k, 512M, 2G)"),
            std::string::npos)
      << m.out;
  Result f = RunCommand("env UOPC_CPU_FAULT=CPU:7@1 " + Runfile("tools/uopc") + " devices");
  EXPECT_NE(f.out.find("UOPC_CPU_FAULT=CPU:7@1; expected DEVICE@N"), std::string::npos) << f.out;
  Result c = RunCommand("env UOPC_C_PACK_CACHE_MB=1x " + Runfile("tools/uopc") + " devices");
  EXPECT_NE(c.out.find("c plugin: UOPC_C_PACK_CACHE_MB=1x: expected an integer from 0 to "),
            std::string::npos)
      << c.out;
}

// A plugin of ABI 2.0 that leaves optional calls out, and has no backend: listed with what it
// leaves out, and its device smoke-tests nothing rather than failing.
TEST(UopcTool, DevicesListsADeviceOnlyPluginWithTheCallsItLeavesOut) {
  Result r =
      RunCommand("env UOPC_PLUGINS=" + Runfile("tests/devices/libuopc_plugin_fake2_minimal.so") +
                 " " + Runfile("tools/uopc") + " devices");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("plugin fake2 0.2 (ABI 2.1, uop format 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  without (optional calls it leaves out): initialize, shutdown, "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("device FAKE2:0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("smoke kernel: none (no backend: a device-only plugin)"), std::string::npos)
      << r.out;
}

TEST(UopcTool, HelpEverywhere) {
  EXPECT_EQ(Uopc("--help").status, 0);
  EXPECT_NE(Uopc("--help").out.find("simplify"), std::string::npos);
  Result r = Uopc("simplify --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("usage: uopc simplify [FILE]", 0), 0u);
  EXPECT_EQ(Uopc("").status, 2);
  Result bad = Uopc("frobnicate");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out.rfind("uopc: unknown command 'frobnicate'", 0), 0u);
  EXPECT_EQ(Uopc("simplify /no/such/file").status, 1);
  EXPECT_EQ(Uopc("devices --help").status, 0);
}

// `uopc render`: a matmul lowered for this CPU (C, a register tile) and for sm_90 (CUDA, a
// thread an output, with ptxas's figures where NVRTC is installed); bad targets refused.
TEST(UopcTool, RenderShowsWhatATargetGets) {
  const std::string matmul = Runfile("examples/seed/matmul.uir");
  Result host = Uopc("render " + matmul);
  EXPECT_EQ(host.status, 0) << host.out;
  EXPECT_EQ(host.out.rfind("// target class=cpu arch=", 0), 0u) << host.out;
  EXPECT_NE(host.out.find("// kernel k0: global ("), std::string::npos) << host.out;
  EXPECT_NE(host.out.find("void k0("), std::string::npos) << host.out;
  Result gpu = Uopc("render --target sm_90 " + matmul);
  EXPECT_EQ(gpu.status, 0) << gpu.out;
  EXPECT_NE(gpu.out.find("// target class=gpu arch=sm_90 "), std::string::npos) << gpu.out;
  EXPECT_NE(gpu.out.find("// kernel k0: global (12, 1, 1), local (256, 1, 1)"), std::string::npos)
      << gpu.out;
  EXPECT_NE(gpu.out.find("extern \"C\" __global__ void k0("), std::string::npos) << gpu.out;
  EXPECT_TRUE(gpu.out.find(" registers, ") != std::string::npos ||
              gpu.out.find("no NVRTC here") != std::string::npos)
      << gpu.out;
  // the same graph on stdin, for a target given as text: AVX2's 16 registers of 8 floats
  std::ifstream in(matmul);
  std::stringstream text;
  text << in.rdbuf();
  Result avx2 = Uopc("render --target 'class=cpu vector_bits=256 registers=16'", text.str());
  EXPECT_EQ(avx2.status, 0) << avx2.out;
  EXPECT_NE(avx2.out.find("vector_bits=256 registers=16"), std::string::npos) << avx2.out;
  EXPECT_EQ(Uopc("render --target sm_99 " + matmul).out,
            "uopc render: --target sm_99: cuda: no target named \"sm_99\" (known: sm_70, "
            "sm_75, sm_80, sm_86, sm_89, sm_90)\n");
  EXPECT_EQ(Uopc("render --target tpu " + matmul).status, 2);
  Result missing = Uopc("render /no/such.uir");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("cannot read /no/such.uir"), std::string::npos) << missing.out;
}

// Kernels index with 32 bits: a tensor past 2^31-1 elements is refused when it is lowered,
// for every target (its loop end wrapped to -1294967296 on sm_90, one thread running none of
// it), and one of 2^31-1 elements is not.
TEST(UopcTool, RenderRefusesATensorPast32BitIndices) {
  auto add = [](int64_t n) {
    const std::string b = std::to_string(n);
    return "%0 = buffer " + b + " : dtype=f32 slot=0\n%1 = buffer " + b +
           " : dtype=f32 slot=1\n%2 = add %0, %1\n%3 = sink %2\n";
  };
  for (const std::string target : {"", "--target sm_90 "}) {
    Result big = Uopc("render " + target, add(3000000000));
    EXPECT_EQ(big.status, 1) << big.out;
    EXPECT_NE(big.out.find("a buffer of shape (3000000000) (f32) has 3000000000 elements; "
                           "kernels index with 32 bits, up to 2^31-1 (2147483647) elements"),
              std::string::npos)
        << big.out;
    Result most = Uopc("render " + target, add(2147483647));
    EXPECT_EQ(most.status, 0) << most.out;
  }
}

// Workers whose stacks an address-space limit cannot hold leave the C plugin with fewer
// threads and one line, not an abort, and room for the rest of the program (issue 33's
// probe: exit 134 from an uncaught std::system_error, then std::bad_alloc once the stacks had
// taken the address space); a bad count says what it accepts.
TEST(UopcTool, ThreadsTheSystemCannotStartAreFewerThreadsNotACrash) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit the address-space limit";
#endif
  Result r = RunCommand("ulimit -v 1000000; UOPC_THREADS=100000 " + Runfile("tools/uopc") +
                        " devices");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("smoke kernel: PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("UOPC_THREADS=100000 is not a count of threads from 1 to 1024; using 1024"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the stacks of 1024 threads would take more than a quarter of the "
                       "address-space limit (ulimit -v 1000000); kernels run on 244"),
            std::string::npos)
      << r.out;
  // and a training run under the limit the probe used
  r = RunCommand("ulimit -v 6000000; UOPC_THREADS=1024 " + Runfile("examples/gpt/gpt_train") +
                 " --steps 1 --layers 1 --dim 32 --heads 2 --context 16 --batch 2 --checkpoint " +
                 std::getenv("TEST_TMPDIR") + "/threads.safetensors");
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST(UopcTool, ABadThreadCountSaysWhatItAccepts) {
  Result bad = RunCommand("UOPC_THREADS=2x " + Runfile("tools/uopc") + " devices");
  EXPECT_EQ(bad.status, 0) << bad.out;
  const std::string said =
      "UOPC_THREADS=2x is not a count of threads from 1 to 1024; using every core";
  const size_t at = bad.out.find(said);
  EXPECT_NE(at, std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find(said, at + 1), std::string::npos) << "said twice:\n" << bad.out;
}

}  // namespace
