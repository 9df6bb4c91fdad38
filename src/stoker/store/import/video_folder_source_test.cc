// VideoFolderSource: class folders of videos read in place as {video: the file's bytes, label},
// a file that cannot be read named, the listing cached per extension list.
#include "stoker/store/import/video_folder_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "stoker/store/dataset.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/temp_dir.h"
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

}  // namespace
}  // namespace stoker
