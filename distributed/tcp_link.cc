#include "distributed/tcp_link.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "distributed/peer_address.h"

namespace uopc {
namespace {

constexpr size_t kNonceBytes = 37;     // NewUnixName()'s length: "uopc-" and 32 hex digits
constexpr size_t kPendingConnections = 16;  // read side by side while the writer waits
constexpr int kBufferBytes = 4 << 20;  // socket buffers: a segment in flight

absl::Status Errno(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat("tcp link: ", what, ": ", std::strerror(errno)));
}

void Tune(int fd) {
  const int one = 1, bytes = kBufferBytes;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

}  // namespace

TcpWriter::TcpWriter(int listener, std::string offer, std::string nonce, size_t max_frame)
    : listener_(listener),
      offer_(std::move(offer)),
      nonce_(std::move(nonce)),
      max_frame_(max_frame) {}

TcpWriter::~TcpWriter() {
  if (listener_ >= 0) close(listener_);
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::unique_ptr<TcpWriter>> TcpWriter::Listen(const std::string& peer_host,
                                                             size_t max_frame) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  // (an address LocalAddressTowards cannot route to would give 127.0.0.1: offered to
  // another host, that would reach whatever listens there)
  if (inet_pton(AF_INET, peer_host.c_str(), &a.sin_addr) != 1)
    return absl::UnavailableError(absl::StrCat("tcp link: ", peer_host, " is no IPv4 address"));
  const std::string here = LocalAddressTowards(peer_host);
  if (inet_pton(AF_INET, here.c_str(), &a.sin_addr) != 1)
    return absl::UnavailableError(absl::StrCat("tcp link: no IPv4 address towards ", peer_host));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket");
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    absl::Status s = Errno(absl::StrCat("listening on ", here));
    close(fd);
    return s;
  }
  std::string nonce = NewUnixName();
  std::string offer = absl::StrCat(here, ":", ntohs(a.sin_port), "/", nonce);
  return std::unique_ptr<TcpWriter>(
      new TcpWriter(fd, std::move(offer), std::move(nonce), max_frame));
}

bool TcpWriter::WaitAttached(std::chrono::milliseconds timeout) {
  // Every connection is read as its bytes come, side by side (the newest kPendingConnections
  // of them): one that sends nothing, or part of a nonce, holds up no other. The first to send
  // the whole nonce is the reader; the others are closed.
  struct Pending {
    int fd;
    std::string got;  // the nonce's bytes so far
  };
  std::vector<Pending> pending;
  const auto drop = [&](size_t i) {
    close(pending[i].fd);
    pending.erase(pending.begin() + static_cast<ptrdiff_t>(i));
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (fd_ < 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::vector<pollfd> p = {{listener_, POLLIN, 0}};
    for (const Pending& c : pending) p.push_back({c.fd, POLLIN, 0});
    if (poll(p.data(), p.size(), static_cast<int>(left.count())) <= 0) continue;
    for (size_t i = pending.size(); i-- > 0;) {
      if (!p[i + 1].revents) continue;
      Pending& c = pending[i];
      char got[kNonceBytes];
      const ssize_t r = read(c.fd, got, kNonceBytes - c.got.size());
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r > 0) c.got.append(got, static_cast<size_t>(r));
      if (r <= 0 || nonce_.compare(0, c.got.size(), c.got) != 0) {  // gone, or not the nonce
        drop(i);
      } else if (c.got.size() == kNonceBytes && nonce_.size() == kNonceBytes) {
        fd_ = c.fd;
        pending.erase(pending.begin() + static_cast<ptrdiff_t>(i));
        Tune(fd_);
        break;
      }
    }
    if (fd_ >= 0 || !(p[0].revents & POLLIN)) continue;
    const int c = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) continue;
    if (pending.size() == kPendingConnections) drop(0);
    pending.push_back({c, {}});
  }
  for (size_t i = pending.size(); i-- > 0;) drop(i);
  if (fd_ < 0) return false;
  close(listener_);
  listener_ = -1;
  return true;
}

absl::Status TcpWriter::Write(const grpc::ByteBuffer& frame, const std::function<bool()>& go_on) {
  if (fd_ < 0) return absl::FailedPreconditionError("tcp link: not attached");
  const size_t length = frame.Length();
  if (length > max_frame_)
    return absl::ResourceExhaustedError(
        absl::StrCat("tcp link: a frame of ", length, " bytes; at most ", max_frame_));
  std::vector<grpc::Slice> slices;
  if (!frame.Dump(&slices).ok()) return absl::InternalError("tcp link: unreadable frame");
  unsigned char header[8];
  for (int i = 0; i < 8; ++i) header[i] = static_cast<unsigned char>(uint64_t{length} >> 8 * i);
  std::vector<iovec> io;
  io.push_back({header, sizeof header});
  for (const grpc::Slice& s : slices)
    if (s.size()) io.push_back({const_cast<uint8_t*>(s.begin()), s.size()});
  for (size_t first = 0; first < io.size();) {
    msghdr m{};
    m.msg_iov = io.data() + first;
    m.msg_iovlen = std::min<size_t>(io.size() - first, IOV_MAX);
    const ssize_t n = sendmsg(fd_, &m, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return Errno("sending");
      pollfd p{fd_, POLLOUT, 0};
      do {
        if (!go_on()) return absl::CancelledError("tcp link: stopped while the socket was full");
      } while (poll(&p, 1, 100) == 0);
      continue;
    }
    for (size_t done = n; done > 0;) {  // past the iovecs written
      iovec& v = io[first];
      const size_t step = std::min(done, v.iov_len);
      v.iov_base = static_cast<char*>(v.iov_base) + step;
      v.iov_len -= step;
      done -= step;
      if (v.iov_len == 0) ++first;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TcpReader>> TcpReader::Connect(const std::string& offer,
                                                              size_t max_frame) {
  const size_t colon = offer.rfind(':', offer.find('/')), slash = offer.find('/');
  int port = 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (colon == std::string::npos || slash == std::string::npos || slash < colon ||
      offer.size() - slash - 1 != kNonceBytes ||
      !absl::SimpleAtoi(offer.substr(colon + 1, slash - colon - 1), &port) || port <= 0 ||
      port > 65535 || inet_pton(AF_INET, offer.substr(0, colon).c_str(), &a.sin_addr) != 1)
    return absl::InvalidArgumentError(absl::StrCat("tcp link: not an offer: '", offer, "'"));
  a.sin_port = htons(static_cast<uint16_t>(port));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket");
  Tune(fd);
  const std::string nonce = offer.substr(slash + 1);
  // within the writer's wait for it (5 s): an address that drops the connection is given
  // up as soon as the writer gives up on it (its frames come on the stream meanwhile)
  int error = 0;
  socklen_t error_len = sizeof error;
  pollfd p{fd, POLLOUT, 0};
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS)
    error = errno;
  else if (poll(&p, 1, 5000) != 1)
    error = ETIMEDOUT;
  else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_len) != 0)
    error = errno;
  if (error == 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (error != 0 ||
      send(fd, nonce.data(), nonce.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(nonce.size())) {
    if (error != 0) errno = error;
    absl::Status s = Errno(absl::StrCat("connecting to ", offer.substr(0, slash)));
    close(fd);
    return s;
  }
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    close(fd);
    return Errno("eventfd");
  }
  return std::unique_ptr<TcpReader>(new TcpReader(fd, wake, max_frame));
}

TcpReader::~TcpReader() {
  close(fd_);
  close(wake_);
}

void TcpReader::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_, &one, sizeof one);
}

absl::StatusOr<bool> TcpReader::ReadAll(char* out, size_t n, int first_wait_ms) {
  for (size_t got = 0; got < n;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
    const int ready = poll(p, 2, got == 0 ? first_wait_ms : -1);
    if (ready < 0 && errno != EINTR) return absl::UnavailableError(std::strerror(errno));
    // what has come is read first: a writer that exits right after its last frame has
    // written everything its peer needs, though its stream ends (and wakes this) first
    if (p[1].revents && !(p[0].revents & (POLLIN | POLLHUP))) return false;
    if (ready <= 0) {
      if (got == 0) return false;
      continue;
    }
    const ssize_t r = read(fd_, out + got, n - got);
    if (r == 0) return absl::UnavailableError("the connection ended");
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::UnavailableError(std::strerror(errno));
    }
    got += r;
  }
  return true;
}

absl::StatusOr<std::optional<grpc::ByteBuffer>> TcpReader::Next(std::chrono::milliseconds wait) {
  unsigned char header[8];
  absl::StatusOr<bool> started =
      ReadAll(reinterpret_cast<char*>(header), sizeof header, static_cast<int>(wait.count()));
  if (!started.ok()) return started.status();
  if (!*started) return std::nullopt;
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= uint64_t{header[i]} << 8 * i;
  if (length == 0 || length > max_frame_)
    return absl::InvalidArgumentError(
        absl::StrCat("a frame of ", length, " bytes; at most ", max_frame_));
  char* bytes = static_cast<char*>(std::malloc(length));
  if (!bytes) return absl::ResourceExhaustedError("no memory for a frame");
  absl::StatusOr<bool> whole = ReadAll(bytes, length, -1);
  if (!whole.ok() || !*whole) {
    std::free(bytes);
    if (!whole.ok()) return whole.status();
    return std::nullopt;
  }
  grpc::Slice s(bytes, length, &std::free);
  return std::optional<grpc::ByteBuffer>(grpc::ByteBuffer(&s, 1));
}

}  // namespace uopc
