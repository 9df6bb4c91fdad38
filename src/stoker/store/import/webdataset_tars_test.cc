// expand_braces: braceexpand's names, and a pattern that would expand past its bounds refused
// before its names are made, in one line that shows a long pattern shortened.
#include "stoker/store/import/webdataset_tars.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker {
namespace {

TEST(ExpandBraces, RangesAndAlternativesAsBraceexpand) {
  EXPECT_EQ(expand_braces("s-{08..10}-{a,b}.tar").value_or_throw(),
            (std::vector<std::string>{"s-08-a.tar", "s-08-b.tar", "s-09-a.tar", "s-09-b.tar",
                                      "s-10-a.tar", "s-10-b.tar"}));
  // braceexpand's answers: doubled braces keep the outer pair literal.
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"{{a,b}}", {"{a}", "{b}"}},
      {"x{{a,b}}y", {"x{a}y", "x{b}y"}},
      {"{a,{b,c}}", {"a", "b", "c"}},
      {"{{0..2}}", {"{0}", "{1}", "{2}"}}};
  for (const auto& [pattern, names] : cases) {
    const Result<std::vector<std::string>> expanded = expand_braces(pattern);
    ASSERT_TRUE(expanded.is_ok()) << pattern << ": " << expanded.status().message();
    EXPECT_EQ(expanded.value(), names) << pattern;
  }
}

// The names' bytes are bounded as their count is: a 4 KB prefix times a million numbers (about
// 4 GB of names, 10 GB at the peak) is refused before any name is made.
TEST(ExpandBraces, NamesOfMoreBytesThanTheBoundAreRefusedBeforeTheyAreMade) {
  const std::string prefix(1000, 'p');
  const Result<std::vector<std::string>> small =
      expand_braces(prefix + "{00..99}.tar", 1000000, 50000);
  ASSERT_FALSE(small.is_ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find(": names of more than 50000 bytes in all"),
            std::string::npos)
      << small.status().message();
  EXPECT_EQ(expand_braces(prefix + "{00..99}.tar", 1000000, 200000).value_or_throw().size(), 100u);
  const Status big = expand_braces(std::string(4096, 'p') + "{000000..999999}.tar").status();
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument) << big.message();
  EXPECT_NE(big.message().find("names of more than 268435456 bytes in all"), std::string::npos)
      << big.message();
  // Alternatives add up too: each of the two is within the bound, not both.
  const std::string each = prefix + "{00..29}";
  EXPECT_FALSE(expand_braces("{" + each + "," + each + "}", 1000000, 50000).is_ok());
}

// A long pattern is shown by its start and end and its length, not whole, in a short line.
TEST(ExpandBraces, ALongPatternIsShortenedInItsError) {
  const std::string pattern = std::string(100000, 'a') + "}";
  const Status status = expand_braces(pattern).status();
  EXPECT_EQ(status.message(), std::string(100, 'a') + "..." + std::string(39, 'a') +
                                  "} (100001 bytes): unbalanced braces");
  EXPECT_EQ(expand_braces("a}").status().message(), "a}: unbalanced braces");
}

}  // namespace
}  // namespace stoker
