#include "stoker/net/secret.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <ostream>
#include <type_traits>
#include <utility>

namespace stoker::remote {
namespace {

template <typename T, typename = void>
struct Streamable : std::false_type {};
template <typename T>
struct Streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<T>())>>
    : std::true_type {};

static_assert(!Streamable<const Secret&>::value, "a Secret must not be printable");
static_assert(!fmt::is_formattable<Secret>::value, "a Secret must not be formattable");
static_assert(!std::is_convertible_v<Secret, std::string>, "nor turn into a string");

TEST(Secret, HoldsItsValueThroughCopiesAndMoves) {
  Secret secret("s3cr3t");
  Secret copy = secret;
  EXPECT_EQ(copy.reveal(), "s3cr3t");
  Secret moved = std::move(copy);
  EXPECT_EQ(moved.reveal(), "s3cr3t");
  EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from Secret is wiped
  copy = moved;
  EXPECT_EQ(copy.reveal(), "s3cr3t");
  moved = Secret();
  EXPECT_TRUE(moved.empty());
  EXPECT_FALSE(secret.empty());
}

}  // namespace
}  // namespace stoker::remote
