// DeviceServer against clients that misbehave, over a real gRPC server on loopback: no or
// a wrong token, malformed and truncated messages, handles of another session, ranges past
// a buffer, launches that do not fit their kernel, commands out of order. Each is refused
// with a clear error and the server goes on serving everyone else.
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "core/serialize.h"
#include "devices/registry.h"
#include "rpc/grpc_call.h"
#include "tests/backends/conformance/conformance.h"
#include "tools/device_server.h"

namespace uopc {
namespace {

using std::chrono::milliseconds;

constexpr char kToken[] = "server-test-token";

struct Fixture {
  Fixture() : service(*DeviceRegistry::Get().GetDevice("CPU:0"), DeviceServerOptions{kToken}) {
    grpc::ServerBuilder b;
    ConfigureServer(b);
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&service);
    server = b.BuildAndStart();
    channel = MakeChannel("127.0.0.1:" + std::to_string(port));
    stub = remote::DeviceService::NewStub(channel);
  }
  ~Fixture() {
    for (Held& h : held) {
      h.ctx->TryCancel();
      h.stream->Finish().IgnoreError();
    }
    server->Shutdown();
  }

  // A new session, held open by a queue of its own (a session ends with its last queue).
  uint64_t Open() {
    remote::OpenReply out;
    auto ctx = CallContext(kToken, milliseconds(5000));
    EXPECT_TRUE(stub->Open(ctx.get(), remote::OpenRequest(), &out).ok());
    Held h{CallContext(kToken, milliseconds(60'000)), nullptr};
    h.stream = stub->Run(h.ctx.get());
    remote::Batch hello;
    hello.set_session(out.session());
    hello.set_sync(true);
    remote::Reply r;
    EXPECT_TRUE(h.stream->Write(hello) && h.stream->Read(&r));  // (it counts once answered)
    held.push_back(std::move(h));
    return out.session();
  }
  grpc::Status Allocate(uint64_t session, uint64_t size, uint64_t* buffer,
                        const std::string& token = kToken) {
    remote::AllocateRequest req;
    req.set_session(session);
    req.set_size(size);
    remote::AllocateReply out;
    auto ctx = CallContext(token, milliseconds(5000));
    grpc::Status s = stub->Allocate(ctx.get(), req, &out);
    *buffer = out.buffer();
    return s;
  }
  // One batch (synced) on a new queue: its replies' first failure, or the stream's.
  struct Outcome {
    grpc::Status stream;
    int code = 0;
    std::string message, data;
  };
  Outcome Run(const remote::Batch& batch, const std::string& token = kToken) {
    auto ctx = CallContext(token, milliseconds(5000));
    auto stream = stub->Run(ctx.get());
    Outcome o;
    remote::Batch b = batch;
    b.set_sync(true);
    stream->Write(b);
    stream->WritesDone();
    for (remote::Reply r; stream->Read(&r);) {
      if (r.code() != 0 && o.code == 0) o.code = r.code(), o.message = r.message();
      o.data += r.data();
    }
    o.stream = stream->Finish();
    return o;
  }

  struct Held {
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<grpc::ClientReaderWriter<remote::Batch, remote::Reply>> stream;
  };
  DeviceServer service;
  std::vector<Held> held;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<remote::DeviceService::Stub> stub;
};

remote::Batch CopyIn(uint64_t session, uint64_t buffer, uint64_t offset, const std::string& data) {
  remote::Batch b;
  b.set_session(session);
  remote::Command* c = b.add_commands();
  c->set_seq(1);
  c->mutable_copy_in()->set_buffer(buffer);
  c->mutable_copy_in()->set_offset(offset);
  c->mutable_copy_in()->set_data(data);
  return b;
}

remote::Batch CopyOut(uint64_t session, uint64_t buffer, uint64_t offset, uint64_t size) {
  remote::Batch b;
  b.set_session(session);
  remote::Command* c = b.add_commands();
  c->set_seq(1);
  c->mutable_copy_out()->set_buffer(buffer);
  c->mutable_copy_out()->set_offset(offset);
  c->mutable_copy_out()->set_size(size);
  return b;
}

// --bandwidth-gbps 1e-200 is in the flag's range and stalls a copy, as 1e-18 does (it
// overflowed the clock's duration into no wait at all).
TEST(DeviceServer, ATinyBandwidthStallsInsteadOfLimitingNothing) {
  EXPECT_EQ(DeviceServer::ThrottleSeconds(1 << 20, 0), 0);
  EXPECT_DOUBLE_EQ(DeviceServer::ThrottleSeconds(125000000, 1), 1.0);  // 1 Gbit at 1 Gbit/s
  EXPECT_EQ(DeviceServer::ThrottleSeconds(1, 1e-200), 1e9);
  EXPECT_EQ(DeviceServer::ThrottleSeconds(1, 1e-18), 1e9);
  // and the longest wait fits the clock that sleeps it
  const auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(DeviceServer::ThrottleSeconds(1, 1e-200)));
  EXPECT_GT(wait.count(), 0);
}

TEST(DeviceServer, CallsWithoutTheTokenAreRefusedAndChangeNothing) {
  Fixture f;
  uint64_t session = f.Open(), buffer = 0;
  ASSERT_TRUE(f.Allocate(session, 8, &buffer).ok());
  ASSERT_EQ(f.Run(CopyIn(session, buffer, 0, "12345678")).code, 0);
  for (const std::string token : {"", "wrong"}) {
    uint64_t other = 0;
    grpc::Status s = f.Allocate(session, 8, &other, token);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    // a client without a token is told so, not that its token is wrong (issue 33's probe)
    EXPECT_EQ(s.error_message().rfind(token.empty() ? "no uopc-token" : "wrong uopc-token", 0), 0u)
        << s.error_message();
    Fixture::Outcome o = f.Run(CopyIn(session, buffer, 0, "XXXXXXXX"), token);
    EXPECT_EQ(o.stream.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(f.Run(CopyOut(session, buffer, 0, 8)).data, "12345678");
}

TEST(DeviceServer, MalformedAndTruncatedMessagesAreRefused) {
  Fixture f;
  grpc::GenericStub generic(f.channel);
  remote::AllocateRequest req;
  req.set_session(f.Open());
  req.set_size(1000);
  std::string whole = req.SerializeAsString();
  for (const std::string& bytes : {std::string("\xff\xff\xff\xff\x0f", 5), whole.substr(0, whole.size() - 1)}) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), reply;
    auto ctx = CallContext(kToken, milliseconds(5000));
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> call = generic.PrepareUnaryCall(
        ctx.get(), "/uopc.remote.DeviceService/Allocate", request, &cq);
    call->StartCall();
    grpc::Status s;
    call->Finish(&reply, &s, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_FALSE(s.ok()) << "bytes of " << bytes.size();
  }
  uint64_t buffer = 0;  // and it serves on
  EXPECT_TRUE(f.Allocate(f.Open(), 8, &buffer).ok());
}

TEST(DeviceServer, HandlesOfAnotherSessionOrOfNoneAreNotFound) {
  Fixture f;
  uint64_t a = f.Open(), b = f.Open(), buffer = 0;
  ASSERT_TRUE(f.Allocate(a, 8, &buffer).ok());
  Fixture::Outcome o = f.Run(CopyOut(b, buffer, 0, 8));
  EXPECT_EQ(o.code, static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(o.message, "copy out: buffer " + std::to_string(buffer) + " is not one of this session");
  Fixture::Outcome none = f.Run(CopyOut(a ^ b ^ 12345, buffer, 0, 8));
  EXPECT_EQ(none.stream.error_code(), grpc::StatusCode::NOT_FOUND);
  uint64_t other = 0;
  EXPECT_EQ(f.Allocate(a ^ b ^ 12345, 8, &other).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(DeviceServer, RangesPastABufferAreOutOfRange) {
  Fixture f;
  uint64_t session = f.Open(), buffer = 0;
  ASSERT_TRUE(f.Allocate(session, 8, &buffer).ok());
  EXPECT_EQ(f.Run(CopyIn(session, buffer, 4, "12345")).message,
            "copy in: bytes [4, 9) of a buffer of 8");
  EXPECT_EQ(f.Run(CopyOut(session, buffer, 0, uint64_t{1} << 62)).code,
            static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
  EXPECT_EQ(f.Run(CopyOut(session, buffer, ~uint64_t{0}, 2)).code,
            static_cast<int>(grpc::StatusCode::OUT_OF_RANGE));
  uint64_t huge = 0;
  EXPECT_EQ(f.Allocate(session, uint64_t{1} << 60, &huge).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST(DeviceServer, LaunchesThatDoNotFitTheirKernelAreRefused) {
  Fixture f;
  uint64_t session = f.Open();
  remote::LoadProgramRequest req;
  req.set_session(session);
  remote::LoadProgramReply out;
  remote::Kernel* k = req.add_kernels();
  k->set_name("garbage");
  k->set_uop("not a kernel");
  auto ctx = CallContext(kToken, milliseconds(5000));
  grpc::Status bad = f.stub->LoadProgram(ctx.get(), req, &out);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad.error_message();

  UOp kernel;
  for (auto& [name, uop] : ConformanceKernels())
    if (name == "alu add f32") kernel = uop;
  ASSERT_TRUE(kernel);
  k->set_name("add");
  k->set_uop(SerializeGraph(kernel));
  auto ctx2 = CallContext(kToken, milliseconds(5000));
  grpc::Status loaded = f.stub->LoadProgram(ctx2.get(), req, &out);
  ASSERT_TRUE(loaded.ok()) << loaded.error_message();
  absl::StatusOr<KernelSignature> sig = SignatureOf(kernel);
  ASSERT_TRUE(sig.ok());
  uint64_t tiny = 0;
  ASSERT_TRUE(f.Allocate(session, 4, &tiny).ok());
  auto launch = [&](std::vector<uint64_t> buffers) {
    remote::Batch b;
    b.set_session(session);
    remote::Command* c = b.add_commands();
    c->set_seq(1);
    c->mutable_launch()->set_program(out.program());
    for (uint64_t id : buffers) c->mutable_launch()->add_buffers(id);
    return f.Run(b);
  };
  EXPECT_EQ(launch({}).code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  std::vector<uint64_t> small(sig->buffers.size(), tiny);
  Fixture::Outcome o = launch(small);
  EXPECT_EQ(o.code, static_cast<int>(grpc::StatusCode::OUT_OF_RANGE)) << o.message;
  EXPECT_NE(o.message.find("of a buffer of 4"), std::string::npos) << o.message;
}

TEST(DeviceServer, CommandsOutOfOrderEndTheQueue) {
  Fixture f;
  uint64_t session = f.Open(), buffer = 0;
  ASSERT_TRUE(f.Allocate(session, 8, &buffer).ok());
  remote::Batch b = CopyIn(session, buffer, 0, "abcdefgh");
  *b.add_commands() = b.commands(0);  // seq 1 twice
  Fixture::Outcome o = f.Run(b);
  EXPECT_EQ(o.stream.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(o.stream.error_message(), "command 1 after command 1");
}

}  // namespace
}  // namespace uopc
