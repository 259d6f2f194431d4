// ThreadSanitizer and the system's gRPC, protobuf and Abseil: those libraries are not
// built with -fsanitize=thread, so TSan sees their memory traffic through its interceptors
// but not their synchronization, and reports races inside them that are not there. Calls
// from them are not checked; our own code still is, everywhere else. Linked into the
// tests that use gRPC; read by TSan at start-up, ignored by every other build.
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
         // gRPC's own threads, which it ends without joining at exit
         "thread:grpc_core::Thread::Thread\n";
}
