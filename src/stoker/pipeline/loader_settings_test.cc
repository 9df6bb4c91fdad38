// LoaderSettings: the worker count's modes and spellings, each setting's one check, and the
// auto values.
#include "stoker/pipeline/loader_settings.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <string>

namespace stoker {
namespace {

std::string check(const LoaderSettings& s) {
  const Status status = s.check();
  return status.is_ok() ? "ok" : status.message();
}

// `text` read by the setting called `name` into default settings: the settings, or the error.
Result<LoaderSettings> parsed(const char* name, const std::string& text) {
  LoaderSettings settings;
  STOKER_RETURN_IF_ERROR(parse_loader_setting(*find_loader_setting(name), text, settings));
  return settings;
}

TEST(LoaderSettingsTest, WorkerCountsParseAsTheCommandLineAndPythonSpellThem) {
  EXPECT_EQ(parsed("workers", "auto").value().workers, WorkerCount::tuned());
  EXPECT_EQ(parsed("workers", "3").value().workers, WorkerCount(3));
  EXPECT_EQ(parsed("workers", "0").value().workers, WorkerCount(0));
  EXPECT_EQ(parsed("workers", "-1").value().workers, WorkerCount::per_core());
  EXPECT_EQ(parsed("workers", "5000").value().workers, WorkerCount(5000));  // check() bounds it
  for (const char* bad : {"", "Auto", "many", "3x", "+3", " 3", "99999999999999999999"})
    EXPECT_FALSE(parsed("workers", bad).is_ok()) << bad;
  EXPECT_EQ(parsed("workers", "many").status().message(),
            "workers: 'many' is not a whole number or auto");
  // A whole number beyond an int: named by the setting's bounds, not wrapped.
  EXPECT_EQ(parsed("workers", "5000000000").status().message(),
            "workers must be at most 1024, not 5000000000");
  EXPECT_EQ(parsed("prefetch", "-5000000000").status().message(),
            "prefetch must be at least -1, not -5000000000");
  EXPECT_EQ(WorkerCount::tuned().to_string(), "auto");
  EXPECT_EQ(WorkerCount(5).to_string(), "5");
  EXPECT_NE(WorkerCount(0), WorkerCount::per_core());
  EXPECT_NE(WorkerCount::per_core(), WorkerCount::tuned());
}

TEST(LoaderSettingsTest, ThreadsResolveOnePerCoreToTheAutoCount) {
  EXPECT_EQ(WorkerCount(4).threads(), 4);
  EXPECT_EQ(WorkerCount::per_core().threads(), auto_workers());
  EXPECT_EQ(WorkerCount::tuned().threads(), 0);
}

TEST(LoaderSettingsTest, AutoWorkersFollowTheAffinityMaskNotTheMachine) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  const int allowed = CPU_COUNT(&all);
  EXPECT_EQ(auto_workers(), std::max(1, allowed - 1));
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int pinned = auto_workers();
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(pinned, 1);
}

TEST(LoaderSettingsTest, EachSettingIsCheckedOnceNamingItsValue) {
  LoaderSettings s;
  EXPECT_EQ(check(s), "ok");
  s.workers = kMaxWorkers + 1;
  EXPECT_EQ(check(s), "workers must be at most 1024, not 1025");
  s.workers = -1;
  EXPECT_EQ(check(s), "workers must be at least 0, not -1");
  s = LoaderSettings();
  s.prefetch = 0;
  EXPECT_EQ(check(s), "prefetch must be at least 1, not 0");
  s.prefetch = -2;
  EXPECT_EQ(check(s), "prefetch must be at least 1 (or -1: auto), not -2");
  s.prefetch = kMaxPrefetch + 1;
  EXPECT_EQ(check(s), "prefetch must be at most 4096, not 4097");
  s = LoaderSettings();
  s.tune.max_workers = kMaxWorkers + 1;
  EXPECT_EQ(check(s), "tuning budget: workers must be 0 (auto) or up to 1024");
  s = LoaderSettings();
  s.shuffle_window = -1;
  EXPECT_EQ(check(s), "shuffle_window must be all or a number of shards from 1 to 1048576, not -1");
  s.shuffle_window = kMaxShuffleWindow + 1;
  EXPECT_EQ(check(s),
            "shuffle_window must be all or a number of shards from 1 to 1048576, not 1048577");
  s.shuffle_window = kMaxShuffleWindow;
  EXPECT_EQ(check(s), "ok");
  s = LoaderSettings();
  s.ra_reps = 0;
  EXPECT_EQ(check(s), "ra_reps must be from 1 to 256, not 0");
  s.ra_reps = kMaxRaReps;
  EXPECT_EQ(check(s), "ok");
}

TEST(LoaderSettingsTest, ShuffleWindowsParseAsAllOrANumber) {
  EXPECT_EQ(parsed("shuffle_window", "all").value().shuffle_window, kShuffleAll);
  EXPECT_EQ(parsed("shuffle_window", "16").value().shuffle_window, 16);
  EXPECT_EQ(shuffle_window_text(kShuffleAll), "all");
  EXPECT_EQ(shuffle_window_text(16), "16");
  for (const char* bad : {"", "All", "4x", "99999999999999999999"}) {
    EXPECT_EQ(parsed("shuffle_window", bad).status().message(),
              std::string("shuffle_window: '") + bad + "' is not a whole number or all");
  }
}

TEST(LoaderSettingsTest, PoliciesParseByName) {
  EXPECT_EQ(parsed("verify", "always").value().verify, VerifyPolicy::kAlways);
  EXPECT_EQ(to_string(VerifyPolicy::kOff), "off");
  EXPECT_EQ(parsed("verify", "never").status().message(),
            "verify 'never' is not one of always, once, off");
  EXPECT_EQ(parsed("on_error", "skip").value().on_error, ErrorPolicy::kSkip);
  EXPECT_EQ(parsed("on_error", "ignore").status().message(),
            "on_error 'ignore' is not one of raise, skip");
}

// The table the command line and Python bind every setting by: each setting's text parses
// back to its value, and a text of no form of the setting is refused naming it.
TEST(LoaderSettingsTest, EachSettingsTextParsesBackAndABadOneNamesIt) {
  LoaderSettings changed;
  changed.workers = WorkerCount::tuned();
  changed.prefetch = 9;
  changed.verify = VerifyPolicy::kAlways;
  changed.on_error = ErrorPolicy::kSkip;
  changed.shuffle_window = 16;
  changed.ra_reps = 3;
  const LoaderSettings defaults;
  for (const LoaderSettingDescription& setting : loader_setting_descriptions()) {
    const std::string& name = setting.spec.name;
    EXPECT_NE(setting.text(changed), setting.text(defaults)) << name;
    LoaderSettings s = defaults;
    ASSERT_TRUE(parse_loader_setting(setting, setting.text(changed), s).is_ok()) << name;
    EXPECT_EQ(setting.text(s), setting.text(changed)) << name;
    EXPECT_EQ(parse_loader_setting(setting, "bogus", s).message().rfind(name, 0), 0u) << name;
    EXPECT_EQ(setting.text(s), setting.text(changed)) << name;
  }
  LoaderSettings s;
  const auto& table = loader_setting_descriptions();
  EXPECT_EQ(table.front().spec.name, "workers");
  EXPECT_TRUE(parse_loader_setting(table.front(), "-1", s).is_ok());
  EXPECT_EQ(s.workers, WorkerCount::per_core());
  EXPECT_EQ(table.front().text(s), "-1");
}

TEST(LoaderSettingsTest, FindsEachSettingByItsNameAndNoneByAnother) {
  for (const LoaderSettingDescription& setting : loader_setting_descriptions())
    EXPECT_EQ(find_loader_setting(setting.spec.name), &setting) << setting.spec.name;
  EXPECT_EQ(find_loader_setting("worker"), nullptr);
  EXPECT_EQ(find_loader_setting(""), nullptr);
}

TEST(LoaderSettingsTest, AutoPrefetchFillsSixteenMebibytesWithinItsBounds) {
  EXPECT_EQ(auto_prefetch(1), 64);
  EXPECT_EQ(auto_prefetch(size_t{1} << 20), 16);
  EXPECT_EQ(auto_prefetch(size_t{1} << 30), 4);
}

}  // namespace
}  // namespace stoker
