// list_tar: the members of tars written by Python's tarfile in its three formats, as tarfile
// lists them; damage named by member.
#include "stoker/store/import/tar_members.h"

#include <gtest/gtest.h>

#include "stoker/testing/tar_fixtures.h"

namespace stoker {
namespace {

TarListing list_tar_text(const std::string& bytes) {
  return list_tar(ByteSpan{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

std::vector<tar_fixtures::Member> varied_members() {
  return {{"a/0001.jpg", std::string(700, 'j')},
          {"a/0001.cls", "3"},
          {"folder", "", "dir"},
          {std::string(150, 'n') + "/long.name.txt", "long"},
          {"caf\xc3\xa9.json", "{}"},
          {"empty.bin", ""},
          {"big.bin", std::string(5000, 'b')}};
}

TEST(TarMembers, AreTarfilesInEveryFormat) {
  for (const char* format : {"pax", "gnu", "ustar"}) {
    testing::TempDir dir;
    std::vector<tar_fixtures::Member> members = varied_members();
    if (std::string(format) == "ustar") members.erase(members.begin() + 3);  // > 255 bytes
    const nlohmann::json reference = tar_fixtures::write_tar(dir / "t.tar", members, format);
    const std::string bytes = tar_fixtures::file_bytes(dir / "t.tar");
    const TarListing listing = list_tar_text(bytes);
    EXPECT_EQ(listing.damage, "") << format;
    ASSERT_EQ(listing.members.size(), reference.size()) << format;
    for (size_t i = 0; i < reference.size(); ++i) {
      EXPECT_EQ(listing.members[i].name, reference[i]["name"].get<std::string>()) << format;
      EXPECT_EQ(listing.members[i].offset, reference[i]["offset_data"].get<uint64_t>());
      EXPECT_EQ(listing.members[i].size, reference[i]["size"].get<uint64_t>());
      EXPECT_EQ(listing.members[i].unsupported, "");
    }
  }
}

TEST(TarMembers, ALinkIsListedAsUnsupported) {
  testing::TempDir dir;
  tar_fixtures::write_tar(dir / "t.tar", {{"x.jpg", "y.jpg", "symlink"}, {"y.jpg", "data"}});
  const TarListing listing = list_tar_text(tar_fixtures::file_bytes(dir / "t.tar"));
  ASSERT_EQ(listing.members.size(), 2u);
  EXPECT_EQ(listing.members[0].unsupported, "a symbolic link to y.jpg");
  EXPECT_EQ(listing.members[1].unsupported, "");
}

TEST(TarMembers, DamageStopsTheListingAndNamesTheMember) {
  testing::TempDir dir;
  const nlohmann::json reference = tar_fixtures::write_tar(
      dir / "t.tar", {{"k.jpg", std::string(600, 'a')}, {"k.cls", "1"}, {"m.jpg", "zz"}}, "gnu");
  const std::string whole = tar_fixtures::file_bytes(dir / "t.tar");
  // A member cut short: its data runs past the end.
  const uint64_t last = reference[2]["offset_data"].get<uint64_t>();
  TarListing cut = list_tar_text(whole.substr(0, last + 1));
  EXPECT_EQ(cut.members.size(), 2u);
  EXPECT_EQ(cut.damage, "member m.jpg: cut short: its 2 bytes run past the tar's end");
  EXPECT_EQ(cut.cut_member, "m.jpg");
  // Cut in a member's padding: the last block is not whole.
  cut = list_tar_text(whole.substr(0, last + 100));
  EXPECT_EQ(cut.members.size(), 3u);
  EXPECT_EQ(cut.damage, "cut short after member m.jpg at byte 3584");
  // A header cut short.
  cut = list_tar_text(whole.substr(0, last - 100));
  EXPECT_EQ(cut.damage, "a header cut short after member k.cls at byte 2560");
  // A bad checksum in the second header.
  std::string bad = whole;
  bad[reference[1]["offset_data"].get<uint64_t>() - 512] ^= 1;
  TarListing damaged = list_tar_text(bad);
  ASSERT_EQ(damaged.members.size(), 1u);
  EXPECT_EQ(damaged.damage, "a bad header checksum after member k.jpg at byte 1536");
  // Not a tar, or nothing.
  EXPECT_EQ(list_tar_text(std::string(2000, 'x')).damage, "not a tar: no tar header at its start");
  EXPECT_EQ(list_tar_text("").damage, "not a tar: it is empty");
}

}  // namespace
}  // namespace stoker
