// group_samples and split_key: webdataset's keys (base_plus_ext, against its regular expression
// in Python) and grouping, and the samples stoker refuses where webdataset would pass over.
#include "stoker/store/import/webdataset_samples.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

TEST(WebDatasetSamples, KeysArePythonsRegularExpressions) {
  const std::vector<std::string> names = {
      "a.jpg", "dir/a.b.c", "a.b/c.jpg", "dir/.hidden", ".jpg",     "noext",       "x/y.z/w.tar.gz",
      "a..b",  "a/",        "a.b/",      "/a.b",        "a\nb/c.d", "a/b\n.c",     "a.\n",
      "./a.b", "x.\n/c.d",  "../x.y",    "k.JPG",       "a/b/c",    "a/b.c/d.e.f", "."};
  testing::TempDir dir;
  std::ofstream(dir / "names.json") << nlohmann::json(names).dump();
  std::ofstream(dir / "split.py") << R"(
import json, re, sys
names = json.load(open(sys.argv[1] + "/names.json"))
def base_plus_ext(path):  # webdataset.tariterators.base_plus_ext
    match = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", path)
    return None if not match else [match.group(1), match.group(2)]
json.dump([base_plus_ext(n) for n in names], open(sys.argv[1] + "/keys.json", "w"))
)";
  ASSERT_EQ(std::system(
                (std::string(STOKER_PYTHON) + " " + (dir / "split.py") + " " + dir.path()).c_str()),
            0);
  std::ifstream in(dir / "keys.json");
  const nlohmann::json keys =
      nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  for (size_t i = 0; i < names.size(); ++i) {
    const auto split = split_key(names[i]);
    if (keys[i].is_null()) {
      EXPECT_FALSE(split) << names[i];
    } else {
      ASSERT_TRUE(split) << names[i];
      EXPECT_EQ(split->first, keys[i][0].get<std::string>()) << names[i];
      EXPECT_EQ(split->second, keys[i][1].get<std::string>()) << names[i];
    }
  }
}

TarListing listing_of(const std::vector<std::string>& names, const std::string& damage = "") {
  TarListing listing;
  for (const std::string& name : names) listing.members.push_back({name, 0, 0, ""});
  listing.damage = damage;
  return listing;
}

TEST(WebDatasetSamples, ConsecutiveMembersOfAKeyAreASample) {
  const auto samples = group_samples(listing_of(
      {"__meta__", "s/0.jpg", "s/0.CLS", "s/0.seg.png", "s/1.jpg", "__x__/y.z", "s/1.cls"}));
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].key, "s/0");
  EXPECT_EQ(samples[0].problem, "");
  EXPECT_EQ(samples[0].member("jpg"), 1u);
  EXPECT_EQ(samples[0].member("cls"), 2u);  // lower-cased
  EXPECT_EQ(samples[0].member("seg.png"), 3u);
  EXPECT_EQ(samples[1].key, "s/1");
  EXPECT_EQ(samples[1].member("cls"), 6u);
  EXPECT_FALSE(samples[1].member("png"));
}

TEST(WebDatasetSamples, BadMembersAreSamplesWithAProblem) {
  TarListing listing = listing_of(
      {"a.jpg", "a.cls", "nokey", "b.jpg", "b.jpg", "c.jpg", "a.png", "d.jpg"}, "damage here");
  listing.members[7].unsupported = "a symbolic link to x";
  const auto samples = group_samples(listing);
  ASSERT_EQ(samples.size(), 7u);
  EXPECT_EQ(samples[0].problem, "");
  EXPECT_EQ(samples[1].problem, "member nokey: its name has no key");
  EXPECT_EQ(samples[2].problem, "member b.jpg: a second jpg of sample b");
  EXPECT_EQ(samples[3].problem, "");
  EXPECT_EQ(samples[4].problem, "member a.png: key a again (a duplicate key)");
  EXPECT_EQ(samples[5].problem, "member d.jpg: a symbolic link to x, not a file");
  EXPECT_EQ(samples[6].problem, "damage here");
}

TEST(WebDatasetSamples, AMemberCutShortSpoilsItsSample) {
  TarListing listing = listing_of({"a.jpg", "a.cls", "b.cls"}, "member b.jpg: cut short");
  listing.cut_member = "b.jpg";
  auto samples = group_samples(listing);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[1].problem, "member b.jpg: cut short");
  listing.cut_member = "c.jpg";  // the first member of the next sample: a record of its own
  samples = group_samples(listing);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[1].problem, "");
  EXPECT_EQ(samples[2].problem, "member b.jpg: cut short");
}

// A sample of 20,000 members is a bad record, its members past kMaxSampleMembers not kept: its
// fields would make a schema as wide (issue 66, M8: a 40 s open before). One within the bound
// keeps each field once, found without scanning the sample.
TEST(WebDatasetSamples, ASampleOfTooManyMembersIsABadRecordOfBoundedSize) {
  std::vector<std::string> names;
  for (int f = 0; f < 20000; ++f) names.push_back("s/0.f" + std::to_string(f));
  const auto many = group_samples(listing_of(names));
  ASSERT_EQ(many.size(), 1u);
  EXPECT_EQ(many[0].fields.size(), kMaxSampleMembers);
  EXPECT_EQ(many[0].problem, "member s/0.f1024: sample s/0 has more than 1024 members");
  names.resize(kMaxSampleMembers - 1);
  names.push_back("s/0.f123");  // a second f123
  const auto bound = group_samples(listing_of(names));
  ASSERT_EQ(bound.size(), 1u);
  EXPECT_EQ(bound[0].member("f1022"), 1022u);
  EXPECT_EQ(bound[0].member("f123"), 123u);  // the first of the two
  EXPECT_EQ(bound[0].problem, "member s/0.f123: a second f123 of sample s/0");
}

}  // namespace
}  // namespace stoker
