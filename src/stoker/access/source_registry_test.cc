#include "stoker/access/source_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "stoker/access/data_source.h"
#include "stoker/testing/megatron_bytes.h"
#include "stoker/testing/npy_bytes.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The registry's names in auto's order; videofolder where the video layer is built
// (STOKER_TEST_VIDEO, cmake/StokerVideo.cmake).
const std::vector<std::string>& source_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all{"parquet", "arrow", "webdataset"};
    if (STOKER_TEST_VIDEO) all.push_back("videofolder");
    all.insert(all.end(), {"imagefolder", "tokens", "stoker"});
    return all;
  }();
  return names;
}

// A one-line kInvalidArgument holding `part`.
template <typename T>
void expect_refused(const Result<T>& result, const std::string& part) {
  ASSERT_FALSE(result.is_ok()) << part;
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find(part), std::string::npos) << result.status().message();
  EXPECT_EQ(result.status().message().find('\n'), std::string::npos);
}

std::string recognised_as(const std::string& location) {
  return source_for("auto", location).value_or_throw()->name;
}

TEST(SourceRegistry, EverySourceIsNamedOnceAndStokersFormatIsAutosLastWord) {
  std::vector<std::string> names;
  for (const SourceSpec& source : data_sources()) {
    EXPECT_FALSE(source.doc.empty()) << source.name;
    EXPECT_TRUE(source.open) << source.name;
    names.push_back(source.name);
  }
  EXPECT_EQ(names, source_names());
  // The fallback takes whatever the others do not.
  EXPECT_TRUE(data_sources().back().recognises("/no/such/thing", nullptr));
  for (size_t i = 1; i < data_sources().size(); ++i)
    EXPECT_LE(data_sources()[i - 1].auto_rank, data_sources()[i].auto_rank);
}

TEST(SourceRegistry, AutoRecognisesEachSourcesDataLocallyAndByUrlsName) {
  testing::TempDir dir;
  const fs::path root = dir.path();
  testing::write_labelled_dataset(root / "ds", 10);
  fs::create_directories(root / "folder/cat");
  std::ofstream(root / "folder/cat/a.jpg") << "x";
  // Class folders of videos (by their names): a video folder where video is built. The first
  // file in name order (class folders, then their entries, sorted) with an image's or a video's
  // extension decides, whatever order the file system lists them in.
  for (const auto& [file, bytes] :
       std::vector<std::pair<std::string, std::string>>{{"mixed/b/b.jpg", "x"},
                                                        {"mixed/b/c.mp4", "x"},
                                                        {"mixed/z/a.mp4", "x"},
                                                        {"byname/z/a.jpg", "x"},
                                                        {"byname/b/d.mp4", "x"},
                                                        {"byname/b/e.jpg", "x"}}) {
    fs::create_directories((root / file).parent_path());
    std::ofstream(root / file) << bytes;
  }
  fs::create_directories(root / "videos/run/sub");
  std::ofstream(root / "videos/run/notes.txt") << "x";
  std::ofstream(root / "videos/run/sub/a.MP4") << "x";
  fs::create_directories(root / "webms/run");
  std::ofstream(root / "webms/run/a.webm") << "x";
  fs::create_directories(root / "tars");
  std::ofstream(root / "tars/d-0.tar") << "";
  std::ofstream(root / "p.parquet") << "PAR1";
  fs::create_directories(root / "saved");
  std::ofstream(root / "saved/data-00000-of-00001.arrow") << "";
  std::ofstream(root / "m.bin") << "tokens";
  std::ofstream(root / "m.idx") << testing::megatron_index_bytes(8, {3}, {0}, {0, 1});
  std::ofstream(root / "t.npy") << testing::npy_bytes(
      "{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }", "tokens");
  std::ofstream(root / "train.bin") << "tokens";
  EXPECT_EQ(recognised_as(root / "ds"), "stoker");
  EXPECT_EQ(recognised_as(root / "folder"), "imagefolder");
  EXPECT_EQ(recognised_as(root / "videos"), STOKER_TEST_VIDEO ? "videofolder" : "imagefolder");
  EXPECT_EQ(recognised_as(root / "webms"), "imagefolder");  // not a default video extension
  EXPECT_EQ(recognised_as(root / "mixed"), "imagefolder");
  EXPECT_EQ(recognised_as(root / "byname"), STOKER_TEST_VIDEO ? "videofolder" : "imagefolder");
  EXPECT_EQ(recognised_as(root / "tars"), "webdataset");
  EXPECT_EQ(recognised_as(root / "tars/d-{0..3}.tar"), "webdataset");
  EXPECT_EQ(recognised_as(root / "p.parquet"), "parquet");
  EXPECT_EQ(recognised_as(root / "*.parquet"), "parquet");
  EXPECT_EQ(recognised_as(root / "saved"), "arrow");
  EXPECT_EQ(recognised_as(root / "saved/data-00000-of-00001.arrow"), "arrow");
  EXPECT_EQ(recognised_as(root / "m.bin"), "tokens");
  EXPECT_EQ(recognised_as(root / "m"), "tokens");
  EXPECT_EQ(recognised_as(root / "t.npy"), "tokens");
  EXPECT_EQ(recognised_as(root / "train.bin"), "stoker");  // a headerless .bin: only by name
  // URLs by their names, without a request (port 9 answers none).
  EXPECT_EQ(recognised_as("http://127.0.0.1:9/x.parquet?sig=s"), "parquet");
  EXPECT_EQ(recognised_as("http://127.0.0.1:9/d-{0..3}.tar"), "webdataset");
  EXPECT_EQ(recognised_as("s3://bucket/ds"), "stoker");
  // Named, a source is taken whatever the location looks like.
  EXPECT_EQ(source_for("parquet", root / "ds").value_or_throw()->name, "parquet");
}

TEST(SourceRegistry, AnUnknownSourceOrParameterIsOneLineNamingWhatThereIs) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir.path() + "/ds", 10);
  const DataAccessOptions access;
  expect_refused(
      remote::open_dataset(dir.path() + "/ds", access, 0, "hdf5"),
      fmt::format("source 'hdf5' is not one of auto, {}", fmt::join(source_names(), ", ")));
  expect_refused(
      remote::open_dataset(dir.path() + "/ds", access, 0, "videofolder", {{"extensions", " "}}),
      STOKER_TEST_VIDEO ? "/ds: no video extension given" : "source 'videofolder' is not one of");
  expect_refused(
      remote::open_dataset(dir.path() + "/ds", access, 0, "auto", {{"image_column", "img"}}),
      "source 'stoker': unknown parameter 'image_column' (it has none)");
  expect_refused(
      remote::open_dataset(dir.path() + "/x.parquet", access, 0, "parquet", {{"image_col", "a"}}),
      "source 'parquet': unknown parameter 'image_col' (parameters: image_column, label_column, "
      "video_column)");
  expect_refused(remote::open_dataset(dir.path() + "/x.parquet", access, 0, "parquet",
                                      {{"label_column", int64_t{3}}}),
                 "source 'parquet': label_column must be");
  // Named, with no parameters: opened.
  EXPECT_EQ(remote::open_dataset(dir.path() + "/ds", access, 0, "stoker").value_or_throw()->size(),
            10u);
}

TEST(SourceRegistry, AFileNoSourceRecognisesIsNotADatasetAndAHeaderlessBinIsNamedTokens) {
  testing::TempDir dir;
  std::ofstream(dir.path() + "/train.bin") << "tokens";
  std::ofstream(dir.path() + "/notes.dat") << "x";
  const DataAccessOptions access;
  const Result<std::shared_ptr<const Dataset>> bin =
      remote::open_dataset(dir.path() + "/train.bin", access, 0, "auto");
  ASSERT_FALSE(bin.is_ok());
  EXPECT_EQ(bin.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bin.status().message(),
            dir.path() +
                "/train.bin: a file, not a dataset (a directory holding manifest.json); "
                "a headerless token file is read where its source is named "
                "(stoker.Tokens(path, seq_len=..., dtype=...) in Python, --source tokens "
                "on the command line)");
  EXPECT_EQ(remote::open_dataset(dir.path() + "/notes.dat", access, 0, "auto").status().message(),
            dir.path() + "/notes.dat: a file, not a dataset (a directory holding manifest.json)");
  EXPECT_EQ(remote::open_dataset(dir.path() + "/none", access, 0, "auto").status().message(),
            dir.path() + "/none: no such dataset directory");
  // Named, the .bin opens as tokens.
  EXPECT_EQ(remote::open_dataset(dir.path() + "/train.bin", access, 0, "tokens",
                                 {{"seq_len", int64_t{1}}})
                .value_or_throw()
                ->size(),
            2u);
}

TEST(SourceRegistry, TheJsonDescribesEverySourceAndItsParameters) {
  const auto json = nlohmann::json::parse(sources_json());
  ASSERT_EQ(json.size(), data_sources().size());
  for (size_t i = 0; i < json.size(); ++i) EXPECT_EQ(json[i]["name"], data_sources()[i].name);
  const auto& parquet = json[0];
  ASSERT_EQ(parquet["params"].size(), 3u);
  EXPECT_EQ(parquet["params"][0]["name"], "image_column");
  EXPECT_EQ(parquet["params"][0]["type"], "text");
  EXPECT_EQ(parquet["params"][0]["default"], "image");
  EXPECT_EQ(parquet["params"][2]["name"], "video_column");
  EXPECT_EQ(parquet["params"][2]["default"], "");
}

}  // namespace
}  // namespace stoker
