// Numbers from text: ranges, nan and inf refused, booleans in their spellings.
#include "core/parse_number.h"

#include <gtest/gtest.h>

namespace uopc {
namespace {

TEST(ParseNumber, IntegersWithinTheirRange) {
  EXPECT_EQ(*ParseInt("--heads", "4", 1, 64), 4);
  EXPECT_EQ(*ParseInt("x", "-3", -5, 5), -3);
  EXPECT_EQ(ParseInt("--heads", "0", 1, 64).status().message(),
            "--heads=0: expected an integer from 1 to 64");
  for (const char* bad : {"", "abc", "4.5", "1e3", "99999999999999999999999", "0x10"})
    EXPECT_FALSE(ParseInt("--n", bad, 0, 1 << 30).ok()) << bad;
}

TEST(ParseNumber, RealsAreFiniteAndWithinTheirRange) {
  EXPECT_EQ(*ParseReal("--lr", "3e-3", 0, 10), 3e-3);
  EXPECT_EQ(*ParseReal("--lr", "0", 0, 10), 0);
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "infinity", "", "x", "11", "-1"})
    EXPECT_FALSE(ParseReal("--lr", bad, 0, 10).ok()) << bad;
  EXPECT_EQ(ParseReal("UOPC_TIMEOUT", "nan", 0.001, 1e9).status().message(),
            "UOPC_TIMEOUT=nan: expected a number from 0.001 to 1e+09");
}

TEST(ParseNumber, BooleansInTheirUsualSpellings) {
  for (const char* t : {"true", "TRUE", "1", "yes", "Yes"}) EXPECT_TRUE(*ParseBool("--resume", t));
  for (const char* f : {"false", "0", "no", "NO"}) EXPECT_FALSE(*ParseBool("--resume", f));
  EXPECT_EQ(ParseBool("--resume", "yep").status().message(),
            "--resume=yep: expected true or false (or 1/0, yes/no)");
  EXPECT_FALSE(ParseBool("--resume", "").ok());
}

}  // namespace
}  // namespace uopc
