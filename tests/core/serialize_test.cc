#include "core/serialize.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/uir.h"
#include "core/uop.pb.h"

namespace uopc {
namespace {

UOp Sample() {
  UOp n = UOp::Var("n", 1, 8);
  UOp i = UOp::Range(4, 0), j = UOp::Range(n, 1, RangeKind::kReduce);
  UOp b = UOp::Buffer(DType::kBF16, 3, 32);
  UOp st = b.Index(i * 8 + j).Store(UOp::Const(DType::kBF16, -0.0)).End({j, i});
  UOp t = UOp::Derived(Ops::PERMUTE, {UOp::Derived(Ops::RESHAPE, {b, UOp::Int(4), UOp::Int(8)})},
                       Axes{{1, 0}});
  UOp r = UOp::Derived(Ops::REDUCE, {t}, ReduceArg{Ops::ADD, {1}});
  UOp c = UOp::Derived(Ops::COPY, {r}, DeviceArg{"CPU"});
  return UOp::Sink({st,
                    UOp::Derived(Ops::COLLECTIVE, {c},
                                 CollectiveArg{CollectiveKind::kIdentity,
                                               CollectiveKind::kAllReduce, Ops::ADD, 1, 2}),
                    UOp::Const(DType::kF64, NAN) + UOp::Const(DType::kF64, 1e-300),
                    UOp::ConstInt(DType::kU64, -1), UOp::ConstBool(DType::kBool, true)});
}

TEST(Serialize, RoundTripIsIdentity) {
  absl::StatusOr<UOp> back = DeserializeGraph(SerializeGraph(Sample()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Sample()) << ToUir(*back);
}

TEST(Serialize, RefusesAnotherFormatVersion) {
  proto::Graph g;
  g.ParseFromString(SerializeGraph(Sample()));
  g.set_version(kUOpFormatVersion + 1);
  absl::StatusOr<UOp> back = DeserializeGraph(g.SerializeAsString());
  EXPECT_EQ(back.status().message(),
            "serialized graph: format version 2; this build reads version 1");
}

TEST(Serialize, RefusesGarbage) {
  EXPECT_FALSE(DeserializeGraph("\xff\xff\xff garbage").ok());
  EXPECT_EQ(DeserializeGraph("").status().message(),
            "serialized graph: format version 0; this build reads version 1");
}

TEST(Serialize, RefusesBadNodes) {
  auto with = [](auto edit) {
    proto::Graph g;
    g.ParseFromString(SerializeGraph(UOp::Range(4, 0) + 1));
    edit(g);
    return std::string(DeserializeGraph(g.SerializeAsString()).status().message());
  };
  EXPECT_EQ(with([](proto::Graph& g) { g.mutable_nodes(1)->set_op("frob"); }),
            "serialized graph: node 1 (frob): unknown op");
  EXPECT_EQ(with([](proto::Graph& g) { g.mutable_nodes(1)->set_dtype("f8"); }),
            "serialized graph: node 1 (range): unknown dtype 'f8'");
  EXPECT_EQ(with([](proto::Graph& g) { g.mutable_nodes(1)->set_src(0, 7); }),
            "serialized graph: node 1 (range): source 7 is not an earlier node");
  EXPECT_EQ(with([](proto::Graph& g) { g.mutable_nodes(1)->clear_src(); }),
            "serialized graph: node 1 (range): 0 sources");
  EXPECT_EQ(with([](proto::Graph& g) { g.mutable_nodes(1)->set_device("CPU"); }),
            "serialized graph: node 1 (range): argument of the wrong kind");
  EXPECT_EQ(with([](proto::Graph& g) { g.mutable_nodes(1)->mutable_range()->set_kind("x"); }),
            "serialized graph: node 1 (range): unknown range kind 'x'");
  EXPECT_EQ(with([](proto::Graph& g) { g.clear_nodes(); }), "serialized graph: no nodes");
  EXPECT_EQ(with([](proto::Graph& g) { g.mutable_nodes(0)->set_dtype("void"); }),
            "serialized graph: node 0 (const): dtype void for a value");
}

}  // namespace
}  // namespace uopc
