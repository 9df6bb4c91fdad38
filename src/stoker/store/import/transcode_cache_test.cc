#include "stoker/store/import/transcode_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/store/image_record.h"
#include "stoker/store/import/image_folder_source.h"
#include "stoker/testing/image_fixtures.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
namespace fixtures = image::testing;

// A unit read in place, named `name`: a record of each fixture (JPEGs progressive, grey, CMYK
// and corrupt ones included; PNGs), its label the fixture's position, its image as it is.
ShardReader unit(const std::string& name, size_t first = 0) {
  const Schema schema = image_record_schema();
  const ImageRecordFields fields = ImageRecordFields::find(schema).value();
  std::vector<std::vector<uint8_t>> records;
  const std::vector<fixtures::Fixture>& all = fixtures::image_fixtures();
  for (size_t i = first; i < all.size(); ++i) {
    ImageRecordValues values;
    values.stored = fixtures::span(all[i].bytes);
    values.original = values.stored;
    values.label = static_cast<int64_t>(i);
    records.push_back(encode_image_record(schema, fields, values).value());
  }
  return ShardReader::in_memory(name, schema, records);
}

// The pixels of `stored` decoded whole or cropped to `crop`, or the decode's error.
std::string decoded(ByteSpan stored, std::optional<image::CropRect> crop) {
  static image::DecodeBuffer buffer;
  image::DecodeRequest request;
  request.crop = crop;
  Result<image::DecodedCrop> d = image::decode_rgb(stored, request, buffer);
  if (!d.is_ok()) return "error";
  const std::vector<uint8_t> pixels = fixtures::packed(d.value().pixels);
  return std::string(pixels.begin(), pixels.end());
}

// Every record of `got` equals `want`'s but for its image, whose pixels, whole and in crops, are
// the same; returns how many images differ in bytes (were transcoded).
int expect_same_pixels(const ShardReader& got, const ShardReader& want) {
  const Schema& schema = want.schema();
  const int image = ImageRecordFields::find(schema).value().image;
  EXPECT_EQ(got.records(), want.records());
  int transcoded = 0;
  for (uint64_t i = 0; i < want.records() && i < got.records(); ++i) {
    SCOPED_TRACE(fixtures::image_fixtures()[i].name);
    EXPECT_EQ(0, std::memcmp(got.record(i).data, want.record(i).data, schema.fixed_bytes()));
    const ByteSpan a = got.variable_field(i, image).value();
    const ByteSpan b = want.variable_field(i, image).value();
    if (std::string(a.data, a.data + a.size) != std::string(b.data, b.data + b.size)) ++transcoded;
    EXPECT_EQ(decoded(a, std::nullopt), decoded(b, std::nullopt));
    Result<image::ImageHeader> header = image::read_image_header(b);
    if (!header.is_ok()) continue;
    for (const image::CropRect& c :
         fixtures::crops_of(header.value().width, header.value().height, 6, 7))
      EXPECT_EQ(decoded(a, c), decoded(b, c))
          << c.x << "," << c.y << " " << c.width << "x" << c.height;
  }
  return transcoded;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir))
    files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

ino_t inode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

fs::file_time_type hours_ago(int hours) {
  return fs::file_time_type::clock::now() - std::chrono::hours(hours);
}

// Sets when the cached file `path` was last used, as a run then would have.
void set_used(const std::string& path, fs::file_time_type when) { fs::last_write_time(path, when); }

TEST(TranscodeCacheTest, TranscodesJpegsWithTheSamePixelsAndKeepsThem) {
  stoker::testing::TempDir dir;
  std::shared_ptr<TranscodeCache> cache = TranscodeCache::open(dir.path(), 1ull << 30).value();
  const ShardReader original = unit("a.tar");
  const ShardReader first = cache->transcoded(unit("a.tar"));
  EXPECT_NE(first.path(), "a.tar");
  EXPECT_GT(expect_same_pixels(first, original), 5);
  ASSERT_EQ(files_in(dir.path()).size(), 1u);
  EXPECT_EQ(cache->held_bytes(), fs::file_size(files_in(dir.path())[0]));

  // Later reads, by this process and another, read the kept file (not written again) and
  // record their use in its mtime.
  const ino_t written = inode(first.path());
  set_used(first.path(), hours_ago(5));
  std::shared_ptr<TranscodeCache> later = TranscodeCache::open(dir.path(), 1ull << 30).value();
  EXPECT_EQ(later->held_bytes(), cache->held_bytes());
  const ShardReader again = later->transcoded(unit("a.tar"));
  EXPECT_EQ(again.path(), first.path());
  EXPECT_EQ(inode(again.path()), written);
  EXPECT_GT(fs::last_write_time(again.path()), hours_ago(1));
  expect_same_pixels(again, original);
}

TEST(TranscodeCacheTest, AChangedUnitIsAnotherEntry) {
  stoker::testing::TempDir dir;
  std::shared_ptr<TranscodeCache> cache = TranscodeCache::open(dir.path(), 1ull << 30).value();
  const std::string before = cache->transcoded(unit("a.tar")).path();
  const std::string after = cache->transcoded(unit("a.tar", 1)).path();
  EXPECT_NE(before, after);
  EXPECT_EQ(files_in(dir.path()).size(), 2u);
}

// Damages the cached file `path`: truncated to half, or a byte in its middle changed.
void damage(const std::string& path, bool truncate) {
  const uintmax_t size = fs::file_size(path);
  if (truncate) {
    fs::resize_file(path, size / 2);
    return;
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(size / 2));
  file.put('\x5a' ^ static_cast<char>(size));
}

TEST(TranscodeCacheTest, ADamagedEntryIsNamedInANoteDeletedAndRebuilt) {
  for (const bool truncate : {false, true}) {
    SCOPED_TRACE(truncate ? "truncated" : "a byte changed");
    stoker::testing::TempDir dir;
    const std::string path =
        TranscodeCache::open(dir.path(), 1ull << 30).value()->transcoded(unit("a.tar")).path();
    const uintmax_t size = fs::file_size(path);
    damage(path, truncate);
    std::shared_ptr<TranscodeCache> cache = TranscodeCache::open(dir.path(), 1ull << 30).value();
    std::string note;
    ::testing::internal::CaptureStderr();
    const ShardReader rebuilt = cache->transcoded(unit("a.tar"), &note);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // the library prints nothing
    EXPECT_EQ(note.rfind("transcode cache: " + path + " (of a.tar) is damaged, rebuilt: ", 0), 0u)
        << note;
    EXPECT_EQ(note.find('\n'), std::string::npos);
    EXPECT_EQ(rebuilt.path(), path);
    EXPECT_EQ(fs::file_size(path), size);
    EXPECT_EQ(cache->held_bytes(), size);
    expect_same_pixels(rebuilt, unit("a.tar"));
    // A sound file gives no note.
    std::string none;
    cache->transcoded(unit("a.tar"), &none);
    TranscodeCache::open(dir.path(), 1ull << 30).value()->transcoded(unit("a.tar"), &none);
    EXPECT_EQ(none, "");
  }
}

TEST(TranscodeCacheTest, AUnitOverTheBudgetIsReadAsItIs) {
  stoker::testing::TempDir dir;
  const uint64_t unit_bytes = unit("a.tar").file_bytes();
  // Room for one unit: the first is kept, the second read as it is (the first, written by this
  // run, does not give way).
  std::shared_ptr<TranscodeCache> cache =
      TranscodeCache::open(dir.path(), unit_bytes + unit_bytes / 2).value();
  const ShardReader a = cache->transcoded(unit("a.tar"));
  EXPECT_NE(a.path(), "a.tar");
  const ShardReader b = cache->transcoded(unit("b.tar"));
  EXPECT_EQ(b.path(), "b.tar");
  EXPECT_EQ(expect_same_pixels(b, unit("b.tar")), 0);
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{a.path()});
  // A kept unit is still read from the cache.
  EXPECT_EQ(cache->transcoded(unit("a.tar")).path(), a.path());
}

uint64_t bytes_in(const std::string& dir) {
  uint64_t bytes = 0;
  for (const std::string& file : files_in(dir)) bytes += fs::file_size(file);
  return bytes;
}

// Cached files by the name of their unit.
using CachedUnits = std::map<std::string, std::string>;

// The files of the units `names`, sorted as files_in sorts them.
std::vector<std::string> files_of(const CachedUnits& cached,
                                  const std::vector<std::string>& names) {
  std::vector<std::string> files;
  for (const std::string& name : names) files.push_back(cached.at(name));
  std::sort(files.begin(), files.end());
  return files;
}

// The units `oldest_first` cached under `dir` by an earlier run, which used them last hours ago
// in that order.
CachedUnits cached_earlier(const std::string& dir, const std::vector<std::string>& oldest_first) {
  std::shared_ptr<TranscodeCache> earlier = TranscodeCache::open(dir, 1ull << 30).value();
  CachedUnits cached;
  int hours = 10 * static_cast<int>(oldest_first.size());
  for (const std::string& name : oldest_first) {
    cached[name] = earlier->transcoded(unit(name)).path();
    set_used(cached[name], hours_ago(hours));
    hours -= 10;
  }
  return cached;
}

// A budget that holds `files` cached units of unit()'s records and room for one more.
uint64_t budget_for(const CachedUnits& cached, int files) {
  const uint64_t file_bytes = fs::file_size(cached.begin()->second);
  return files * file_bytes + std::max<uint64_t>(file_bytes, unit("x").file_bytes());
}

TEST(TranscodeCacheTest, MakesRoomByDeletingTheLeastRecentlyUsedFiles) {
  stoker::testing::TempDir dir;
  CachedUnits cached = cached_earlier(dir.path(), {"c", "a", "b"});
  std::shared_ptr<TranscodeCache> cache =
      TranscodeCache::open(dir.path(), budget_for(cached, 2)).value();
  const std::vector<std::vector<std::string>> after = {
      {"a", "b", "d"}, {"b", "d", "e"}, {"d", "e", "f"}};
  for (size_t i = 0; i < after.size(); ++i) {
    const std::string name(1, static_cast<char>('d' + i));
    SCOPED_TRACE(name);
    cached[name] = cache->transcoded(unit(name)).path();
    EXPECT_EQ(files_in(dir.path()), files_of(cached, after[i]));
    EXPECT_EQ(cache->held_bytes(), bytes_in(dir.path()));
  }
  // What this run wrote never gives way: another unit is read as it is, nothing deleted.
  EXPECT_EQ(cache->transcoded(unit("g")).path(), "g");
  EXPECT_EQ(files_in(dir.path()), files_of(cached, {"d", "e", "f"}));
  EXPECT_EQ(cache->held_bytes(), bytes_in(dir.path()));
}

TEST(TranscodeCacheTest, AFileReadInThisRunNeverGivesWay) {
  stoker::testing::TempDir dir;
  CachedUnits cached = cached_earlier(dir.path(), {"a", "b"});
  std::shared_ptr<TranscodeCache> cache =
      TranscodeCache::open(dir.path(), budget_for(cached, 1)).value();
  EXPECT_EQ(cache->transcoded(unit("a")).path(), cached["a"]);
  // The oldest again (as if its use had not been recorded), a stays: this run read it.
  set_used(cached["a"], hours_ago(100));
  cached["c"] = cache->transcoded(unit("c")).path();
  EXPECT_EQ(files_in(dir.path()), files_of(cached, {"a", "c"}));
  EXPECT_EQ(cache->transcoded(unit("d")).path(), "d");
  EXPECT_EQ(files_in(dir.path()), files_of(cached, {"a", "c"}));
}

TEST(TranscodeCacheTest, AFileAnotherRunUsedSinceThisOneBeganNeverGivesWay) {
  stoker::testing::TempDir dir;
  CachedUnits cached = cached_earlier(dir.path(), {"a"});
  std::shared_ptr<TranscodeCache> cache =
      TranscodeCache::open(dir.path(), budget_for(cached, 1)).value();
  // Another run, begun later, reads a: it may read it at the faster speed every epoch.
  std::shared_ptr<TranscodeCache> other = TranscodeCache::open(dir.path(), 1ull << 30).value();
  EXPECT_EQ(other->transcoded(unit("a")).path(), cached["a"]);
  cached["b"] = cache->transcoded(unit("b")).path();
  EXPECT_NE(cached["b"], "b");
  EXPECT_EQ(cache->transcoded(unit("c")).path(), "c");
  EXPECT_EQ(files_in(dir.path()), files_of(cached, {"a", "b"}));
}

TEST(TranscodeCacheTest, ReadingAFileRecordsItsUseForLaterRuns) {
  stoker::testing::TempDir dir;
  CachedUnits cached = cached_earlier(dir.path(), {"a", "b", "c"});
  // A run reads a, the least recently used: now the most recently used.
  TranscodeCache::open(dir.path(), 1ull << 30).value()->transcoded(unit("a"));
  // A day later, another run makes room: b and c give way before a.
  for (const auto& [name, file] : cached)
    set_used(file, fs::last_write_time(file) - std::chrono::hours(24));
  std::shared_ptr<TranscodeCache> cache =
      TranscodeCache::open(dir.path(), budget_for(cached, 2)).value();
  cached["d"] = cache->transcoded(unit("d")).path();
  EXPECT_EQ(files_in(dir.path()), files_of(cached, {"a", "c", "d"}));
  cached["e"] = cache->transcoded(unit("e")).path();
  EXPECT_EQ(files_in(dir.path()), files_of(cached, {"a", "d", "e"}));
}

TEST(TranscodeCacheTest, AFileDeletedByAnotherRunWhileReadIsReadAndMadeAgain) {
  stoker::testing::TempDir dir;
  std::shared_ptr<TranscodeCache> cache = TranscodeCache::open(dir.path(), 1ull << 30).value();
  const ShardReader read = cache->transcoded(unit("a"));
  const uint64_t size = fs::file_size(read.path());
  ASSERT_TRUE(fs::remove(read.path()));  // another run made room
  EXPECT_GT(expect_same_pixels(read, unit("a")), 5);
  ::testing::internal::CaptureStderr();
  const ShardReader again = cache->transcoded(unit("a"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(again.path(), read.path());
  EXPECT_EQ(fs::file_size(again.path()), size);
  EXPECT_EQ(cache->held_bytes(), size);
}

TEST(TranscodeCacheTest, RecordsNotOfImagesPassAsTheyAre) {
  stoker::testing::TempDir dir;
  std::shared_ptr<TranscodeCache> cache = TranscodeCache::open(dir.path(), 1ull << 30).value();
  const Schema schema = Schema::create({Field("x", DType::kInt64)}).value();
  const std::vector<uint8_t> record(8, 1);
  EXPECT_EQ(cache->transcoded(ShardReader::in_memory("x", schema, {record})).path(), "x");
  EXPECT_TRUE(files_in(dir.path()).empty());
}

// An image folder under `dir` of one JPEG, `jpeg`, read in place through a transcode cache in
// `dir`/cache.
std::shared_ptr<ImageFolderSource> folder_through_cache(const stoker::testing::TempDir& dir,
                                                        const std::vector<uint8_t>& jpeg) {
  fs::create_directories(dir / "folder/cat");
  throw_if_error(
      write_file_atomically(dir / "folder/cat/a.jpg", std::string(jpeg.begin(), jpeg.end())));
  std::shared_ptr<ImageFolderSource> source =
      ImageFolderSource::open(dir / "folder", {}).value_or_throw();
  const std::shared_ptr<TranscodeCache> cache =
      TranscodeCache::open(dir / "cache", 1ull << 30).value_or_throw();
  source->set_unit_pass([cache](ShardReader read, std::string& note) {
    return cache->transcoded(std::move(read), &note);
  });
  return source;
}

std::vector<uint8_t> progressive_jpeg() {
  fixtures::JpegSpec spec;
  spec.progressive = true;
  return fixtures::encode_jpeg(spec);
}

TEST(TranscodeCacheTest, AUnitReadSourceReadsItsUnitsThroughIt) {
  stoker::testing::TempDir dir;
  const std::vector<uint8_t> jpeg = progressive_jpeg();
  std::shared_ptr<ImageFolderSource> source = folder_through_cache(dir, jpeg);
  const ShardPin pin = source->acquire(0, [] { return false; }).value_or_throw();
  const ShardReader& unit = *source->readers()[0];
  EXPECT_EQ(fs::path(unit.path()).parent_path(), fs::path(dir / "cache"));
  const int image = ImageRecordFields::find(unit.schema()).value().image;
  const ByteSpan stored = unit.variable_field(0, image).value();
  const image::ImageHeader header = image::read_image_header(stored).value_or_throw();
  EXPECT_FALSE(header.progressive);
  EXPECT_GT(header.restart_interval, 0);
  EXPECT_EQ(decoded(stored, std::nullopt), decoded(fixtures::span(jpeg), std::nullopt));
  EXPECT_EQ(source->stats().notes, 0);
}

TEST(TranscodeCacheTest, AUnitReadSourceCountsTheDamagedFilesRebuiltInItsStats) {
  stoker::testing::TempDir dir;
  const std::vector<uint8_t> jpeg = progressive_jpeg();
  std::string cached;
  {
    std::shared_ptr<ImageFolderSource> earlier = folder_through_cache(dir, jpeg);
    const ShardPin pin = earlier->acquire(0, [] { return false; }).value_or_throw();
    cached = earlier->readers()[0]->path();
  }
  damage(cached, /*truncate=*/true);
  std::shared_ptr<ImageFolderSource> source = folder_through_cache(dir, jpeg);
  ::testing::internal::CaptureStderr();
  const ShardPin pin = source->acquire(0, [] { return false; }).value_or_throw();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(source->readers()[0]->path(), cached);
  ShardSourceStats stats = source->stats();
  EXPECT_EQ(stats.notes, 1);
  EXPECT_NE(stats.last_note.find(cached + " (of "), std::string::npos) << stats.last_note;
  // The line a caller prints: the notes after those it told already.
  EXPECT_EQ(new_notes_line(stats, 0), stats.last_note);
  EXPECT_EQ(new_notes_line(stats, 1), "");
  stats.notes = 3;
  EXPECT_EQ(new_notes_line(stats, 1), stats.last_note + " (the last of 2 notes)");
}

}  // namespace
}  // namespace stoker
