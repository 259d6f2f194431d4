// NetBed: "nodes" on one machine for the distributed tests. Each node is a network
// namespace made by the test, with its own address 198.18.K.1 (the benchmarking range, used
// only inside the namespaces: nothing leaves them), joined by a veth pair to a router
// namespace. The router redirects every TCP connection between nodes through fault_proxy
// (nftables' `redirect`), which delays, throttles, stalls or cuts it on command: the kernel
// has no netem. Needs root, namespaces and nft; where the machine refuses, Make says why.
//
//   std::string why;
//   std::unique_ptr<NetBed> bed = NetBed::Make(2, Runfile("tests/testing/fault_proxy"), &why);
//   if (!bed) GTEST_SKIP() << why;
//   bed->Start(1, "uopc_launch --nnodes 2 --node-rank 1 ...", "node1.log");
//   bed->Proxy("stall");
#pragma once

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <unistd.h>

#include "tests/testing/command.h"

namespace uopc::testing {

class NetBed {
 public:
  /// A bed of `nodes` nodes whose links run through the fault_proxy binary at `proxy`, or
  /// null with the reason in `why`.
  static std::unique_ptr<NetBed> Make(int nodes, const std::string& proxy, std::string* why) {
    if (geteuid() != 0) return *why = "the network bed needs root (for namespaces)", nullptr;
    if (RunCommand("command -v nft && command -v ip").status != 0)
      return *why = "the network bed needs ip (iproute2) and nft (nftables)", nullptr;
    std::unique_ptr<NetBed> bed(new NetBed(nodes));
    const std::string& r = bed->router_;
    std::string script = "set -e\nip netns add " + r + "\nip -n " + r + " link set lo up\n";
    for (int k = 0; k < nodes; ++k) {
      const std::string n = bed->Namespace(k), here = bed->prefix_ + "n" + std::to_string(k),
                        there = bed->RouterEnd(k), net = "198.18." + std::to_string(k);
      script += "ip netns add " + n + "\nip -n " + n + " link set lo up\n" +
                "ip link add " + here + " type veth peer name " + there + "\n" +
                "ip link set " + here + " netns " + n + "\nip link set " + there + " netns " + r +
                "\nip -n " + n + " addr add " + net + ".1/24 dev " + here + "\nip -n " + n +
                " link set " + here + " up\nip -n " + r + " addr add " + net + ".254/24 dev " +
                there + "\nip -n " + r + " link set " + there + " up\nip -n " + n +
                " route add default via " + net + ".254\n";
    }
    // (a fixed port: nothing else lives in the router's namespace)
    script += "ip netns exec " + r + " sysctl -qw net.ipv4.ip_forward=1\n" +
              "printf 'table ip bed {\\n chain pre {\\n  type nat hook prerouting priority "
              "dstnat;\\n  ip protocol tcp redirect to :9000\\n }\\n}\\n' | ip netns exec " +
              r + " nft -f -\n" + "mkfifo " + bed->dir_ + "/control\n" + "ip netns exec " + r +
              " " + proxy + " --port 9000 --control " + bed->dir_ + "/control > " + bed->dir_ +
              "/proxy.log 2>&1 &\n";
    std::ofstream(bed->dir_ + "/make.sh") << script;
    CommandResult made = RunCommand("sh " + bed->dir_ + "/make.sh", 30);
    if (made.status != 0) return *why = "the machine refused the network bed: " + made.out, nullptr;
    if (!bed->WaitFor(bed->dir_ + "/proxy.log", "fault_proxy: ready", 10))
      return *why = "fault_proxy did not start: " + Read(bed->dir_ + "/proxy.log"), nullptr;
    return bed;
  }

  /// Every process left in the namespaces is killed, and the namespaces go.
  ~NetBed() {
    std::string script;
    for (int k = 0; k <= nodes_; ++k) {
      const std::string n = k < nodes_ ? Namespace(k) : router_;
      script += "ip netns pids " + n + " 2>/dev/null | xargs -r kill -9\nip netns del " + n +
                " 2>/dev/null\n";
    }
    RunCommand(script, 30);
    RunCommand("rm -rf " + dir_);
  }

  /// Node k's address, and the namespace its processes run in.
  static std::string Address(int k) { return "198.18." + std::to_string(k) + ".1"; }
  std::string Namespace(int k) const { return prefix_ + std::to_string(k); }

  /// `command` run through sh on node k.
  std::string On(int k, const std::string& command) const {
    return "ip netns exec " + Namespace(k) + " sh -c '" + command + "'";
  }

  /// Starts `command` on node k in the background, its output (and then "exit N") into the
  /// bed's file `log`; returns the process id of the command itself.
  int Start(int k, const std::string& command, const std::string& log) const {
    const std::string pid = dir_ + "/" + log + ".pid";
    std::remove(pid.c_str());  // (a past start's)
    std::remove(Path(log).c_str());
    RunCommand("(ip netns exec " + Namespace(k) + " " + command + " > " + Path(log) +
               " 2>&1 & echo $! > " + pid + "; wait $!; echo \"exit $?\" >> " + Path(log) +
               ") > /dev/null 2>&1 &");
    for (int i = 0; i < 100; ++i) {
      int n = 0;
      if (std::ifstream(pid) >> n) return n;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  /// The bed's file `name`, and what it holds.
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string Read(const std::string& path) {
    std::stringstream s;
    s << std::ifstream(path).rdbuf();
    return s.str();
  }

  /// Waits up to `limit_s` for the file at `path` to hold `text`.
  static bool WaitFor(const std::string& path, const std::string& text, double limit_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    for (; std::chrono::steady_clock::now() < end;
         std::this_thread::sleep_for(std::chrono::milliseconds(50)))
      if (Read(path).find(text) != std::string::npos) return true;
    return false;
  }

  /// A command to the proxy (delay MS, rate MBPS, stall, resume, cut, heal).
  void Proxy(const std::string& command) const {
    std::ofstream(dir_ + "/control") << command << "\n";
  }

  /// Node k's link to the router goes down (ip link set down), as a pulled cable.
  bool LinkDown(int k) const {
    return RunCommand("ip -n " + router_ + " link set " + RouterEnd(k) + " down").status == 0;
  }

 private:
  explicit NetBed(int nodes)
      : nodes_(nodes),
        prefix_("ub" + std::to_string(getpid() % 100000) + "x"),
        router_(prefix_ + "r"),
        dir_(RunCommand("mktemp -d").out) {
    while (!dir_.empty() && dir_.back() == '\n') dir_.pop_back();
  }
  std::string RouterEnd(int k) const { return prefix_ + "r" + std::to_string(k); }

  int nodes_;
  std::string prefix_, router_, dir_;
};

}  // namespace uopc::testing
