#include "distributed/peer_address.h"

#include <cstdio>
#include <fstream>
#include <random>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "rpc/grpc_call.h"

namespace uopc {
namespace {

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }
std::string FromDash(const std::string& s) { return s == "-" ? "" : s; }

}  // namespace

std::string PeerAddress::Encode() const {
  return absl::StrCat(tcp, " ", OrDash(host), " ", OrDash(unix_name));
}

absl::StatusOr<PeerAddress> PeerAddress::Decode(const std::string& line) {
  std::vector<std::string> f = absl::StrSplit(line, ' ');
  if (f.size() != 3 || f[0].empty())
    return absl::InvalidArgumentError(
        absl::StrCat("'", line, "' is not a peer address (host:port, host, unix socket)"));
  return PeerAddress{f[0], FromDash(f[1]), FromDash(f[2])};
}

std::string ThisHost() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  struct stat ns;
  if (!(boot >> id) || id.empty() || stat("/proc/self/ns/net", &ns) != 0) return "";
  return absl::StrCat(id, "/", ns.st_dev, ":", ns.st_ino);
}

std::string LocalAddressTowards(const std::string& peer) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return "127.0.0.1";
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  std::string out = "127.0.0.1";
  if (inet_pton(AF_INET, peer == "localhost" ? "127.0.0.1" : peer.c_str(), &to.sin_addr) == 1 &&
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char buf[INET_ADDRSTRLEN];
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf))
      out = buf;
  }
  close(fd);
  return out;
}

std::string NewUnixName() {
  std::random_device random;  // the kernel's entropy
  char hex[33];
  for (int i = 0; i < 4; ++i) std::snprintf(hex + 8 * i, 9, "%08x", random());
  return absl::StrCat("uopc-", hex);
}

std::string UnixAddress(const std::string& name) { return "unix-abstract:" + name; }

std::shared_ptr<grpc::Channel> ChannelTo(const PeerAddress& peer, const std::string& here,
                                         std::string* used) {
  if (!here.empty() && peer.host == here && !peer.unix_name.empty())
    if (auto channel = MakeUnixChannel(peer.unix_name)) {
      *used = UnixAddress(peer.unix_name);
      return channel;
    }
  *used = peer.tcp;
  return MakeChannel(peer.tcp);
}

}  // namespace uopc
