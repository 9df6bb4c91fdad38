// ImageFolderSource: an image folder read in place, against its listing and its files; its
// units, pins, bad files and the cached listing.
#include "stoker/store/import/image_folder_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>

#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/image_folder_listing_cache.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

std::string source_test_jpeg(int width, int height) {
  image::testing::JpegSpec spec;
  spec.width = width;
  spec.height = height;
  const std::vector<uint8_t> bytes = image::testing::encode_jpeg(spec);
  return std::string(bytes.begin(), bytes.end());
}

void source_test_put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  throw_if_error(write_file_atomically(path, bytes));
}

// root/{cat,dog}/..., 5 images of different sizes, one in a sub-folder.
std::string source_test_folder(const testing::TempDir& tmp) {
  const std::string root = tmp.path() + "/folder";
  source_test_put(root + "/dog/b.jpg", source_test_jpeg(20, 10));
  source_test_put(root + "/dog/a.JPG", source_test_jpeg(16, 12));
  source_test_put(root + "/cat/z/c.jpeg", source_test_jpeg(8, 24));
  source_test_put(root + "/cat/x.jpg", source_test_jpeg(30, 9));
  source_test_put(root + "/cat/notes.txt", "not an image");
  source_test_put(root + "/cat/y.jpg", source_test_jpeg(12, 12));
  return root;
}

// A schedule of epoch_size positions, each unit's use in it `now`, none in the next epoch.
ShardSchedule schedule_of(int64_t epoch_size, std::vector<ShardUse> now) {
  ShardSchedule schedule;
  schedule.epoch_size = epoch_size;
  schedule.after.resize(now.size());
  schedule.now = std::move(now);
  return schedule;
}

// The units `source` holds in memory.
std::vector<int> units_in_memory(const ShardSource& source) {
  std::vector<int> out;
  for (size_t u = 0; u < source.readers().size(); ++u)
    if (source.readers()[u] != nullptr) out.push_back(static_cast<int>(u));
  return out;
}

TEST(ImageFolderSource, RecordsAreTheListingsFilesInTheImageLayout) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  ImageFolderSourceOptions options;
  options.files_per_unit = 2;
  auto source = ImageFolderSource::open(root, options).value_or_throw();
  const ImageFolderListing listing = list_image_folder(root).value_or_throw();
  ASSERT_EQ(source->listing().samples.size(), 5u);
  EXPECT_EQ(source->listing().classes, listing.classes);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(source->listing().samples[i].path, listing.samples[i].path);
  const Manifest& manifest = source->manifest();
  EXPECT_EQ(manifest.class_names, (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(manifest.shards.size(), 3u);  // 2 + 2 + 1
  EXPECT_EQ(manifest.shards[0].file, "cat/x.jpg");
  EXPECT_EQ(manifest.shards[2].records, 1u);

  auto dataset = Dataset::open(source).value_or_throw();
  ASSERT_TRUE(dataset->needs_pins());
  const ImageRecordFields fields = ImageRecordFields::find(dataset->schema()).value_or_throw();
  const int sizes[][2] = {{30, 9}, {12, 12}, {8, 24}, {16, 12}, {20, 10}};
  int visited = 0;
  throw_if_error(dataset->for_each_record([&](uint64_t i) -> Status {
    const ImageFolderSample& sample = listing.samples[i];
    const std::string file = read_file(sample.path).value_or_throw();
    const ByteSpan record = dataset->record(i);
    const ByteSpan image = variable_field(dataset->schema(), record, fields.image).value_or_throw();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(image.data), image.size), file);
    auto scalar = [&](int field) {
      int64_t v;
      std::memcpy(&v, fixed_field(dataset->schema(), record, field), sizeof v);
      return v;
    };
    EXPECT_EQ(scalar(fields.label), sample.label);
    EXPECT_EQ(scalar(fields.width), sizes[i][0]);
    EXPECT_EQ(scalar(fields.height), sizes[i][1]);
    EXPECT_EQ(scalar(fields.original_size), static_cast<int64_t>(file.size()));
    EXPECT_EQ(static_cast<uint64_t>(scalar(fields.original_checksum)),
              xxh3_64(file.data(), file.size()));
    throw_if_error(dataset->verify_record(i));
    ++visited;
    return Status::ok();
  }));
  EXPECT_EQ(visited, 5);
  // Unadvised, a unit is let go with its last pin.
  for (const ShardReader* reader : source->readers()) EXPECT_EQ(reader, nullptr);
}

TEST(ImageFolderSource, BadFilesAreNamedWithWhy) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  source_test_put(root + "/cat/y.jpg", "text, not a JPEG");
  auto source = ImageFolderSource::open(root, {}).value_or_throw();
  auto dataset = Dataset::open(source).value_or_throw();
  const int64_t bad = 1;  // cat/y.jpg
  ShardPins pins = dataset->pin(&bad, 1, nullptr).value_or_throw();
  const Status named = dataset->record_error(1, corrupt("the transform's message"));
  EXPECT_EQ(named.code(), StatusCode::kCorrupt);
  EXPECT_NE(named.message().find(root + "/cat/y.jpg: "), std::string::npos) << named.message();
  EXPECT_NE(named.message().find("JPEG"), std::string::npos) << named.message();
  EXPECT_EQ(named.message().find("transform"), std::string::npos) << named.message();
  // A good record keeps the reader's message, with its file.
  const Status good = dataset->record_error(0, corrupt("decode failed"));
  EXPECT_EQ(good.message(), root + "/cat/x.jpg: decode failed (dataset record 0)");
}

// A bad file's record is marked bad in its unit's reader (UnitReadSource), not at its global
// index there: Dataset::found_bad names it as record_error does, whatever fields are read.
TEST(ImageFolderSource, ABadFilesRecordIsMarkedBadInItsUnit) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  source_test_put(root + "/dog/a.JPG", "text, not a JPEG");  // record 3: unit 1's second
  ImageFolderSourceOptions options;
  options.files_per_unit = 2;
  auto dataset =
      Dataset::open(ImageFolderSource::open(root, options).value_or_throw()).value_or_throw();
  const int64_t all[] = {0, 1, 2, 3, 4};
  ShardPins pins = dataset->pin(all, 5, nullptr).value_or_throw();
  for (uint64_t i = 0; i < 5; ++i) {
    const Dataset::Location at = dataset->locate(i);
    EXPECT_EQ(dataset->shard(at.shard).bad(at.record), i == 3) << i;
    EXPECT_EQ(dataset->found_bad(i).is_ok(), i != 3) << i;
  }
  const Status bad = dataset->found_bad(3);
  EXPECT_EQ(bad.code(), StatusCode::kCorrupt);
  EXPECT_EQ(bad.message(), dataset->record_error(3, corrupt("decode failed")).message());
  EXPECT_EQ(bad.message().rfind(root + "/dog/a.JPG: ", 0), 0u) << bad.message();
}

TEST(ImageFolderSource, AdvisedUnitsStayUntilThePlanPassesThem) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  auto source = ImageFolderSource::open(root, {}).value_or_throw();
  source->advise(schedule_of(5, {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}), 1);
  { auto pin = source->acquire(3, nullptr).value_or_throw(); }
  EXPECT_EQ(source->readers()[3], nullptr);  // used at position 3: beyond 0 + 1
  { auto pin = source->acquire(1, nullptr).value_or_throw(); }
  EXPECT_NE(source->readers()[1], nullptr);  // used at 1, within the lookahead
  source->advance(2);
  EXPECT_EQ(source->readers()[1], nullptr);  // passed
}

// Each idle unit is let go when the plan passes its own last use, however many moves of the plan
// pass none (they check no unit: UnitReadSource's sweep_at_) and whichever was released last.
TEST(ImageFolderSource, EachKeptUnitGoesWhenThePlanPassesItsLastUse) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  auto source = ImageFolderSource::open(root, {}).value_or_throw();
  source->advise(
      schedule_of(8, {{0, 5}, {1, 2}, {2, 6}, {7, 7}, {ShardUse::kUnused, ShardUse::kUnused}}), 2);
  for (int u : {0, 2, 1}) {
    auto pin = source->acquire(u, nullptr).value_or_throw();
  }
  const auto kept = [&] { return units_in_memory(*source); };
  EXPECT_EQ(kept(), (std::vector<int>{0, 1, 2}));
  source->advance(1);
  source->advance(2);
  EXPECT_EQ(kept(), (std::vector<int>{0, 1, 2}));
  source->advance(3);  // unit 1's use ended at 2
  EXPECT_EQ(kept(), (std::vector<int>{0, 2}));
  { auto pin = source->acquire(3, nullptr).value_or_throw(); }  // used at 7: beyond 3 + 2
  EXPECT_EQ(kept(), (std::vector<int>{0, 2}));
  source->advance(6);  // unit 0's ended at 5
  EXPECT_EQ(kept(), (std::vector<int>{2}));
  { auto pin = source->acquire(3, nullptr).value_or_throw(); }  // within 6 + 2 now
  source->advance(7);
  EXPECT_EQ(kept(), (std::vector<int>{3}));
  source->advance(4);  // back: unit 3 is beyond 4 + 2
  EXPECT_EQ(kept(), (std::vector<int>{}));
}

// acquire_all pins the units in memory under one hold and reads the others: every unit stays
// while any pin holds it, and all go together when the plan no longer wants them.
TEST(ImageFolderSource, UnitsPinnedTogetherStayWhilePinnedAndGoTogether) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  auto source = ImageFolderSource::open(root, {}).value_or_throw();
  // Every unit used last, at 4: none wanted from position 0.
  source->advise(schedule_of(5, std::vector<ShardUse>(5, ShardUse{4, 4})), 1);
  const auto kept = [&] { return units_in_memory(*source); };
  std::optional<ShardPin> one = source->acquire(1, nullptr).value_or_throw();
  std::optional<ShardPin> two = source->acquire(3, nullptr).value_or_throw();
  {
    // Units 1 and 3 at hand (one hold), 0 and 2 read.
    const ShardPins pins = source->acquire_all({0, 1, 2, 3}, nullptr, nullptr).value_or_throw();
    ASSERT_EQ(pins.size(), 4u);
    for (size_t k = 0; k < pins.size(); ++k) EXPECT_EQ(pins[k].shard(), static_cast<int>(k));
    one.reset();
    two.reset();
    EXPECT_EQ(kept(), (std::vector<int>{0, 1, 2, 3}));  // the batch's pins hold them
  }
  EXPECT_EQ(kept(), (std::vector<int>{}));
  { const ShardPins pins = source->acquire_all({2, 4}, nullptr, nullptr).value_or_throw(); }
  EXPECT_EQ(kept(), (std::vector<int>{}));
  source->advance(3);  // now every unit is wanted (used at 4, within 3 + 1)
  {
    std::optional<ShardPin> held = source->acquire(2, nullptr).value_or_throw();
    const ShardPins pins = source->acquire_all({1, 2, 4}, nullptr, nullptr).value_or_throw();
  }
  EXPECT_EQ(kept(), (std::vector<int>{1, 2, 4}));  // idle, wanted
  { const ShardPins pins = source->acquire_all({1, 2, 4}, nullptr, nullptr).value_or_throw(); }
  source->advance(5);  // past their use
  EXPECT_EQ(kept(), (std::vector<int>{}));
}

TEST(ImageFolderListingCache, AChangedFolderIsListedAgain) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  const std::string cache = tmp.path() + "/cache";
  const ImageFolderListing first =
      cached_class_folder_listing(root, image_files(), cache).value_or_throw();
  ASSERT_EQ(first.samples.size(), 5u);
  ASSERT_EQ(fs::exists(cache + "/image-folders"), true);
  const fs::path saved = fs::directory_iterator(cache + "/image-folders")->path();
  // The saved listing is what a second open reads: a hand-made one of the same stamps is used.
  ImageFolderListing edited = first;
  edited.samples.pop_back();
  throw_if_error(write_file_atomically(saved.string(), encode_listing(root, edited)));
  EXPECT_EQ(cached_class_folder_listing(root, image_files(), cache).value_or_throw().samples.size(),
            4u);
  // A new file in a sub-folder changes its stamp: listed again, the new file in its place.
  source_test_put(root + "/cat/z/d.jpg", source_test_jpeg(8, 8));
  const ImageFolderListing second =
      cached_class_folder_listing(root, image_files(), cache).value_or_throw();
  ASSERT_EQ(second.samples.size(), 6u);
  EXPECT_EQ(second.samples[3].path, root + "/cat/z/d.jpg");
  // A damaged file is listed again too.
  throw_if_error(write_file_atomically(saved.string(), "STKIFLS1 damaged"));
  EXPECT_EQ(cached_class_folder_listing(root, image_files(), cache).value_or_throw().samples.size(),
            6u);
}

TEST(ImageFolderListingCache, EncodedListingsDecodeAndDamageIsRefused) {
  testing::TempDir tmp;
  const std::string root = source_test_folder(tmp);
  const ImageFolderListing listing = list_image_folder(root).value_or_throw();
  const std::string bytes = encode_listing(root, listing);
  auto span = [](const std::string& s, size_t n) {
    return ByteSpan{reinterpret_cast<const uint8_t*>(s.data()), n};
  };
  const ImageFolderListing back = decode_listing(span(bytes, bytes.size()), root).value_or_throw();
  EXPECT_EQ(back.classes, listing.classes);
  ASSERT_EQ(back.samples.size(), listing.samples.size());
  EXPECT_EQ(back.samples[4].path, listing.samples[4].path);
  EXPECT_EQ(back.samples[4].label, listing.samples[4].label);
  EXPECT_EQ(back.directories.size(), listing.directories.size());
  for (size_t n : {size_t{0}, size_t{15}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_EQ(decode_listing(span(bytes, n), root).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(decode_listing(span(bytes, bytes.size()), root + "x").status().code(),
            StatusCode::kCorrupt);
}

}  // namespace
}  // namespace stoker
