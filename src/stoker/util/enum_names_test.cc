#include "stoker/util/enum_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker {
namespace {

enum class Color { kRed, kGreen, kBlue };

constexpr auto kColorNames =
    enum_names<Color>({{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}});

TEST(EnumNamesTest, NamesEachValue) {
  EXPECT_STREQ(kColorNames.name(Color::kRed), "red");
  EXPECT_STREQ(kColorNames.name(Color::kGreen), "green");
  EXPECT_STREQ(kColorNames.name(Color::kBlue), "blue");
  EXPECT_STREQ(kColorNames.name(static_cast<Color>(7)), "unknown");
}

TEST(EnumNamesTest, FindsExactNamesOnly) {
  EXPECT_EQ(kColorNames.find("green"), Color::kGreen);
  EXPECT_EQ(kColorNames.find("blue"), Color::kBlue);
  EXPECT_EQ(kColorNames.find("Blue"), std::nullopt);
  EXPECT_EQ(kColorNames.find("blu"), std::nullopt);
  EXPECT_EQ(kColorNames.find(""), std::nullopt);
}

TEST(EnumNamesTest, ChoicesInTheTablesOrder) {
  EXPECT_EQ(kColorNames.names(), (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(kColorNames.joined(), "red, green, blue");
}

}  // namespace
}  // namespace stoker
