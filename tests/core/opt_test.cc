// Opt: the text form of action lists, read back exactly, bad text refused with the part
// named, and WithOpt's replacement rules.
#include "core/opt.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

TEST(Opt, TextRoundTrips) {
  const std::vector<Opt> opts{{OptOp::kUpcast, 0, 8},
                              {OptOp::kUpcast, 1, 48},
                              {OptOp::kGroup, 2, 512},
                              {OptOp::kUnroll, 0, 4}};
  const std::string text = OptsToString(opts);
  EXPECT_EQ(text, "upcast 0 8, upcast 1 48, group 2 512, unroll 0 4");
  EXPECT_EQ(*ParseOpts(text), opts);
  EXPECT_EQ(*ParseOpts("  upcast 0 8 ,unroll  0   4 "),
            (std::vector<Opt>{{OptOp::kUpcast, 0, 8}, {OptOp::kUnroll, 0, 4}}));
  EXPECT_EQ(OptsToString({}), "");
  EXPECT_TRUE(ParseOpts("")->empty());
  EXPECT_TRUE(ParseOpts(" \n")->empty());
}

TEST(Opt, RefusesTextThatIsNotAnAction) {
  for (const char* bad :
       {"upcast", "upcast 1", "tile 0 8", "upcast -1 8", "upcast 0 0", "upcast 0 8,",
        "upcast 0 8 9", "upcast x 8", "group 0 99999999999999999999"}) {
    absl::StatusOr<std::vector<Opt>> opts = ParseOpts(bad);
    EXPECT_EQ(opts.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(opts.status().message().find("upcast|group|unroll"), std::string::npos);
  }
  EXPECT_NE(ParseOpts("upcast 0 8, tile 1 2").status().message().find("\"tile 1 2\""),
            std::string::npos);
}

// An action replaces one of its op on its loop; an upcast and a group exclude each other.
TEST(Opt, WithOptReplacesWhatItChanges) {
  const std::vector<Opt> tile{{OptOp::kUpcast, 0, 8}, {OptOp::kUpcast, 1, 48}};
  EXPECT_EQ(OptsToString(WithOpt(tile, {OptOp::kUpcast, 1, 32})), "upcast 0 8, upcast 1 32");
  EXPECT_EQ(OptsToString(WithOpt(tile, {OptOp::kUnroll, 0, 4})),
            "upcast 0 8, upcast 1 48, unroll 0 4");
  EXPECT_EQ(OptsToString(WithOpt(WithOpt(tile, {OptOp::kUnroll, 0, 4}), {OptOp::kGroup, 1, 64})),
            "unroll 0 4, group 1 64");
  EXPECT_EQ(OptsToString(WithOpt({{OptOp::kGroup, 0, 4}}, {OptOp::kUpcast, 1, 16})), "upcast 1 16");
  EXPECT_EQ(WithOpt(tile, tile[1]), tile);
}

}  // namespace
}  // namespace uopc
