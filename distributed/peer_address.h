// Where a rank can be reached, as published at rendezvous: host:port for every rank, and,
// for ranks on the same host, an abstract unix socket. Gigabytes a second of segments
// between two processes on one host cost less CPU through a unix socket than through
// loopback TCP (64 MiB all-reduce busbw, p=2: 1.3x), so a rank talks to a peer on its own
// host that way, and to every other peer over TCP. "The same host" means the same boot
// of the same kernel and the same network namespace (which is where abstract sockets
// live); anything less certain uses TCP.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"

namespace uopc {

struct PeerAddress {
  std::string tcp;        // "10.1.2.3:41234"
  std::string host;       // ThisHost() of the rank; empty if it could not tell
  std::string unix_name;  // its abstract unix socket; empty if it has none

  /// One line for the store; Decode reads it back.
  std::string Encode() const;
  static absl::StatusOr<PeerAddress> Decode(const std::string& line);
};

/// This machine's boot and network namespace, or "" where it cannot be told.
std::string ThisHost();
/// The address of this host as seen from `peer` (an IPv4 address or "localhost"): the source
/// address of a route to it.
std::string LocalAddressTowards(const std::string& peer);
/// A fresh, unguessable abstract unix socket name.
std::string NewUnixName();
/// gRPC's address for the abstract unix socket `name`.
std::string UnixAddress(const std::string& name);

/// A channel to `peer` from a rank on host `here`: its unix socket when both are on one
/// host and it connects, else TCP. `used` gets the address chosen (for messages).
std::shared_ptr<grpc::Channel> ChannelTo(const PeerAddress& peer, const std::string& here,
                                         std::string* used);

}  // namespace uopc
