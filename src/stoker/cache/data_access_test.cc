#include "stoker/cache/data_access.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace stoker {
namespace {

EnvironmentLookup environment(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(DataAccessTest, TheCacheFolderIsStokerCacheElseXdgElseHome) {
  EXPECT_EQ(default_cache_dir(
                environment({{"STOKER_CACHE", "/c"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}))
                .value(),
            "/c");
  EXPECT_EQ(default_cache_dir(environment({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})).value(),
            "/x/stoker/remote");
  EXPECT_EQ(
      default_cache_dir(environment({{"STOKER_CACHE", ""}, {"XDG_CACHE_HOME", ""}, {"HOME", "/h"}}))
          .value(),
      "/h/.cache/stoker/remote")
      << "empty variables count as unset";
  Result<std::string> none = default_cache_dir(environment({}));
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("--cache-dir"), std::string::npos);
}

TEST(DataAccessTest, TheBudgetIsCacheGbElseHalfTheFreeSpacePlusWhatTheCacheHolds) {
  DataAccessOptions options;
  EXPECT_EQ(cache_budget_bytes(options, 10'000, 3'000), 8'000u);
  options.cache_gb = 2.5;
  EXPECT_EQ(cache_budget_bytes(options, 10'000, 3'000), 2'500'000'000u);
}

TEST(DataAccessTest, ANegativeOrNonFiniteCacheGbIsRefused) {
  DataAccessOptions options;
  EXPECT_TRUE(check_data_access(options).is_ok()) << "0: the default";
  for (double gb : {-1.0, std::nan(""), double{INFINITY}}) {
    options.cache_gb = gb;
    Status s = check_data_access(options);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("--cache-gb"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace stoker
