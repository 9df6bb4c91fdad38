#include "stoker/store/data_location.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

void make_dataset(const std::string& dir) {
  fs::create_directories(dir);
  std::ofstream(dir + "/manifest.json") << "{}";
}

TEST(DataLocationTest, OneDatasetOrAFolderOfThem) {
  testing::TempDir dir;
  make_dataset(dir / "one");
  DataLocation one = locate_data(dir / "one").value_or_throw();
  EXPECT_FALSE(one.folder);
  EXPECT_EQ(one.train, dir / "one");
  EXPECT_EQ(one.eval, "");
  EXPECT_EQ(one.datasets, std::vector<std::string>{dir / "one"});
  EXPECT_EQ(describe_splits(one), dir / "one");

  make_dataset(dir / "fm/train");
  make_dataset(dir / "fm/test");
  fs::create_directories(dir / "fm/notes");
  DataLocation fm = locate_data(dir / "fm").value_or_throw();
  EXPECT_TRUE(fm.folder);
  EXPECT_EQ(fm.train, dir / "fm/train");
  EXPECT_EQ(fm.eval, dir / "fm/test");
  EXPECT_EQ(fm.datasets, (std::vector<std::string>{dir / "fm/test", dir / "fm/train"}));
  EXPECT_EQ(describe_splits(fm), "test/, train/ of " + dir / "fm");

  make_dataset(dir / "imagenet/train");
  make_dataset(dir / "imagenet/val");
  EXPECT_EQ(locate_data(dir / "imagenet").value_or_throw().eval, dir / "imagenet/val");

  make_dataset(dir / "parts/a");
  DataLocation parts = locate_data(dir / "parts").value_or_throw();
  EXPECT_EQ(parts.train, "");
  EXPECT_EQ(parts.datasets, std::vector<std::string>{dir / "parts/a"});
}

TEST(DataLocationTest, NeitherIsNamed) {
  testing::TempDir dir;
  Result<DataLocation> missing = locate_data(dir / "none");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), dir / "none" + ": no such dataset directory");
  // A file is there, but is no dataset: said so, not that nothing is there.
  std::ofstream(dir / "tokens.bin") << "ab";
  Result<DataLocation> file = locate_data(dir / "tokens.bin");
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(file.status().message(),
            dir / "tokens.bin" + ": a file, not a dataset (a directory holding manifest.json)");
  fs::create_directories(dir / "empty/sub");
  EXPECT_EQ(locate_data(dir / "empty").status().message(),
            dir / "empty" +
                ": neither a dataset (no manifest.json) nor a folder of datasets (train/ and test/ "
                "or val/)");
  // A symlink loop is left for Dataset::open to report.
  fs::create_symlink(dir / "loop", dir / "loop");
  EXPECT_EQ(locate_data(dir / "loop").value_or_throw().datasets,
            std::vector<std::string>{dir / "loop"});
}

}  // namespace
}  // namespace stoker
