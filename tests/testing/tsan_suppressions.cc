// ThreadSanitizer and the system's gRPC, protobuf and Abseil: those libraries are not
// built with -fsanitize=thread, so TSan sees their memory traffic through its interceptors
// but not their synchronization, and reports races inside them that are not there. Calls
// from them are not checked; our own code still is, everywhere else. Linked into the
// tests that use gRPC; read by TSan at start-up, ignored by every other build. Servers a
// test starts (tests/testing/server_process.h) get the same list through TSAN_OPTIONS.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libgrpc.so\n"
         "called_from_lib:libgrpc++.so\n"
         "called_from_lib:libgpr.so\n"
         "called_from_lib:libaddress_sorting.so\n"
         "called_from_lib:libupb.so\n"
         "called_from_lib:libprotobuf.so\n"
         "race:libgrpc.so\n"
         "race:libgpr.so\n"
         "race:libabsl_*\n"
         // gRPC's inline code in our binaries, synchronized by its uninstrumented queues
         "race:grpc::internal::CallOpClientRecvStatus\n"
         "race:grpc::ProtoBufferReader\n"
         "race:grpc::StringRefFromSlice\n"
         // a thread's TLS (of a plugin's thread_local) freed when a gRPC thread is joined,
         // which TSan does not see: gRPC joins its threads in its own code
         "race:_dl_deallocate_tls\n"
         // gRPC's own threads, which it ends without joining at exit
         "thread:grpc_core::Thread::Thread\n";
}
