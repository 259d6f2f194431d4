"""C++ code generation from .proto files with the system protoc (and grpc_cpp_plugin)."""

def cc_proto(name, src, grpc = False, lite = False, deps = [], visibility = None):
    """A cc_library `name` over the code protoc generates from `src` (in this package).

    With grpc = True, the gRPC service stubs are generated and linked as well; with
    lite = True (for a .proto with optimize_for = LITE_RUNTIME) only protobuf-lite links.
    """
    base = src[:-len(".proto")]
    outs = [base + ".pb.h", base + ".pb.cc"]

    # paths are relative to uopc's root, also when uopc is another workspace's external
    # repository (@uopc: its files are under external/uopc), so that the generated code
    # includes "core/uop.pb.h" wherever it is built
    repo = native.repository_name().lstrip("@")
    root = "external/" + repo if repo else "."
    gen = "$(GENDIR)/" + root if repo else "$(GENDIR)"
    cmd = "protoc --proto_path=" + root + " --cpp_out=" + gen + " "
    if grpc:
        outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
        cmd += "--grpc_out=" + gen + " --plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) "
    native.genrule(
        name = name + "_gen",
        srcs = [src],
        outs = outs,
        cmd = cmd + "$(location " + src + ")",
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["//third_party:protobuf_lite" if lite else "//third_party:protobuf"] +
               (["//third_party:grpc"] if grpc else []),
        visibility = visibility,
    )
