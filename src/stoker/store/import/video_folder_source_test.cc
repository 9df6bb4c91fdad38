// VideoFolderSource: class folders of videos read in place as {video: the file's bytes, label},
// a file that cannot be read named, the listing cached per extension list.
#include "stoker/store/import/video_folder_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "stoker/store/dataset.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/video_set.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

void video_test_put(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  throw_if_error(write_file_atomically(path, bytes));
}

// root/{jump,run}/...: four files with a video extension (bytes the source does not decode),
// one without, one a dangling symbolic link.
std::string video_test_folder(const testing::TempDir& tmp) {
  const std::string root = tmp.path() + "/videos";
  video_test_put(root + "/run/b.mp4", "video b");
  video_test_put(root + "/run/a.AVI", "video a");
  video_test_put(root + "/run/c.webm", "video c");
  video_test_put(root + "/jump/sub/d.avi", "video d");
  video_test_put(root + "/jump/notes.txt", "not a video");
  fs::create_symlink("nowhere.mp4", root + "/jump/gone.mp4");
  return root;
}

TEST(VideoFolderSource, RecordsAreEachFilesBytesAndClassIndex) {
  testing::TempDir tmp;
  const std::string root = video_test_folder(tmp);
  auto source = VideoFolderSource::open(root, {"avi", "mp4"}, {}).value_or_throw();
  EXPECT_EQ(source->manifest().class_names, (std::vector<std::string>{"jump", "run"}));
  EXPECT_EQ(source->manifest().schema.to_json(),
            Schema::create({{"video", DType::kBytes}, {"label", DType::kInt64}})
                .value_or_throw()
                .to_json());
  auto dataset = Dataset::open(source).value_or_throw();
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"jump/gone.mp4", 0}, {"jump/sub/d.avi", 0}, {"run/a.AVI", 1}, {"run/b.mp4", 1}};
  ASSERT_EQ(dataset->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(source->listing().samples[i].path, root + "/" + want[i].first);
    const int64_t index = static_cast<int64_t>(i);
    ShardPins pins = dataset->pin(&index, 1, nullptr).value_or_throw();
    const ByteSpan record = dataset->record(i);
    const ByteSpan video = variable_field(dataset->schema(), record, 0).value_or_throw();
    int64_t label = -1;
    std::memcpy(&label, fixed_field(dataset->schema(), record, 1), sizeof label);
    EXPECT_EQ(label, want[i].second);
    const std::string bytes(reinterpret_cast<const char*>(video.data), video.size);
    EXPECT_EQ(bytes, i == 0 ? "" : read_file(root + "/" + want[i].first).value_or_throw());
  }
  // The dangling link is a bad record naming its file and why.
  EXPECT_EQ(dataset->record_error(0, corrupt("empty video")).message(),
            root + "/jump/gone.mp4: a dangling symbolic link (dataset record 0)");
  EXPECT_EQ(dataset->record_error(1, corrupt("cannot decode")).message(),
            root + "/jump/sub/d.avi: cannot decode (dataset record 1)");
}

TEST(VideoFolderSource, ListingsAreCachedPerExtensionList) {
  testing::TempDir tmp;
  const std::string root = video_test_folder(tmp);
  ClassFolderSourceOptions options;
  options.listing_cache_dir = tmp.path() + "/cache";
  const auto samples = [&](std::vector<std::string> extensions) {
    return VideoFolderSource::open(root, std::move(extensions), options)
        .value_or_throw()
        ->listing()
        .samples.size();
  };
  EXPECT_EQ(samples({"avi", "mp4"}), 4u);
  EXPECT_EQ(samples({"avi", "webm"}), 3u);
  EXPECT_EQ(samples({"avi", "mp4"}), 4u);  // its own listing, not the other one
  size_t saved = 0;
  for (const auto& entry : fs::directory_iterator(tmp.path() + "/cache/video-folders"))
    saved += entry.path().extension() == ".listing";
  EXPECT_EQ(saved, 2u);
}

TEST(VideoFolderSource, AFolderWithoutVideosIsOneLineNamingIt) {
  testing::TempDir tmp;
  const std::string root = tmp.path() + "/images";
  video_test_put(root + "/cat/x.jpg", "an image");
  EXPECT_EQ(VideoFolderSource::open(root, {"avi", "mp4"}, {}).status().message(),
            root + ": found no file with a video extension (avi mp4) for the class cat");
}

// With a VideoClips enumeration, a sample per clip: 75 frames give (75 - 60) / 5 + 1 = 4 clips
// of 60 frames 5 apart, 50 frames none, a file that is no video one bad sample naming it; each
// clip reads its video's record, which clip it is its part. The frame counts are kept in the
// cache folder, and a file changed since is indexed again.
TEST(VideoFolderSource, ClipsAreSamplesOfTheirVideosRecord) {
  testing::TempDir tmp;
  const std::string root = tmp.path() + "/videos";
  const std::string long_video =
      read_file(video::testing::video_path("h264_gop12_bframes.mp4"), uint64_t{1} << 30)
          .value_or_throw();
  const std::string short_video =
      read_file(video::testing::video_path("h264_gop1.mp4"), uint64_t{1} << 30).value_or_throw();
  video_test_put(root + "/a/long.mp4", long_video);
  video_test_put(root + "/a/short.mp4", short_video);
  video_test_put(root + "/b/bad.mp4", "not a video");
  ClassFolderSourceOptions options;
  options.listing_cache_dir = tmp.path() + "/cache";
  const video::VideoClips clips{60, 5, 0};
  auto source = VideoFolderSource::open(root, {"mp4"}, options, clips).value_or_throw();
  EXPECT_EQ(source->clip_counts(), (std::vector<int64_t>{4, 0, 0}));
  EXPECT_EQ(source->manifest().sample_parts,
            "video_clips(frames_per_clip=60, step_between_clips=5, frame_rate=none)");
  auto dataset = Dataset::open(source).value_or_throw();
  ASSERT_EQ(dataset->size(), 5u);
  for (int64_t i = 0; i < 5; ++i) {
    ShardPins pins = dataset->pin(&i, 1, nullptr).value_or_throw();
    const ByteSpan record = dataset->record(static_cast<uint64_t>(i));
    const ByteSpan video = variable_field(dataset->schema(), record, 0).value_or_throw();
    int64_t label = -1;
    std::memcpy(&label, fixed_field(dataset->schema(), record, 1), sizeof label);
    EXPECT_EQ(label, i < 4 ? 0 : 1);
    EXPECT_EQ(video.size, i < 4 ? long_video.size() : 0u);
    EXPECT_EQ(dataset->part(static_cast<uint64_t>(i)), i < 4 ? i : 0);
    EXPECT_EQ(dataset->found_bad(static_cast<uint64_t>(i)).is_ok(), i < 4);
  }
  const int64_t last = 4;
  ShardPins pins = dataset->pin(&last, 1, nullptr).value_or_throw();
  const std::string bad = dataset->found_bad(4).message();
  EXPECT_EQ(bad.rfind(root + "/b/bad.mp4: ", 0), 0u) << bad;
  EXPECT_NE(bad.find("(dataset record 4, the file's sample 0)"), std::string::npos) << bad;
  EXPECT_NE(dataset->record_error(3, corrupt("x")).message().find("the file's sample 3"),
            std::string::npos);

  // The short video swapped in for the long one: indexed again, no clip.
  fs::remove(root + "/a/long.mp4");
  video_test_put(root + "/a/long.mp4", short_video);
  auto changed = VideoFolderSource::open(root, {"mp4"}, options, clips).value_or_throw();
  EXPECT_EQ(changed->clip_counts(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(changed->manifest().records, 1u);  // the bad file's sample alone
  // An enumeration that cannot be: one line naming the argument.
  EXPECT_EQ(VideoFolderSource::open(root, {"mp4"}, options, video::VideoClips{16, 0, 0})
                .status()
                .message(),
            root + ": step_between_clips 0 must be at least 1");
}

// clips_per_video 3: each video, read or not, gives 3 samples of its record, parts 0..2, in
// listing order (nothing is read at open); not with an enumeration of every clip.
TEST(VideoFolderSource, ClipsPerVideoAreThatManySamplesOfEachVideosRecord) {
  testing::TempDir tmp;
  const std::string root = video_test_folder(tmp);
  auto source = VideoFolderSource::open(root, {"mp4", "avi"}, {}, std::nullopt, 3).value_or_throw();
  EXPECT_EQ(source->manifest().sample_parts, "clips_per_video(3)");
  auto dataset = Dataset::open(source).value_or_throw();
  const size_t videos = source->listing().samples.size();
  ASSERT_EQ(dataset->size(), 3 * videos);
  for (int64_t i = 0; i < static_cast<int64_t>(dataset->size()); ++i) {
    ShardPins pins = dataset->pin(&i, 1, nullptr).value_or_throw();
    EXPECT_EQ(dataset->part(static_cast<uint64_t>(i)), i % 3);
    int64_t label = -1;
    std::memcpy(&label, fixed_field(dataset->schema(), dataset->record(i), 1), sizeof label);
    EXPECT_EQ(label, source->listing().samples[static_cast<size_t>(i / 3)].label) << i;
  }
  EXPECT_EQ(
      VideoFolderSource::open(root, {"mp4"}, {}, video::VideoClips{16, 1, 0}, 2).status().message(),
      root +
          ": clips_per_video 2 must be at least 1, and 1 with frames_per_clip (whose clips "
          "are every clip of each video)");
}

}  // namespace
}  // namespace stoker
