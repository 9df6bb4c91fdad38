#include "stoker/util/resolved_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

std::string resolved(const std::string& path) { return resolved_path(path).value_or_throw(); }

TEST(ResolvedPathTest, DotDotAfterALinkIsTheLinkTargetsParent) {
  testing::TempDir dir;
  fs::create_directories(dir / "src/cls");
  fs::create_directories(dir / "elsewhere/a/b");
  fs::create_directory_symlink("../../elsewhere/a/b", dir / "src/cls/hop");
  const std::string real = fs::canonical(dir.path()).string();
  EXPECT_EQ(resolved(dir / "src/cls/hop/../newds"), real + "/elsewhere/a/newds");
  EXPECT_EQ(resolved(dir / "src/cls/hop/../new/x/../y/"), real + "/elsewhere/a/new/y");
  EXPECT_EQ(resolved(dir / "src/./cls//newds"), real + "/src/cls/newds");
}

TEST(ResolvedPathTest, ARelativePathIsAbsolute) {
  testing::TempDir dir;
  const fs::path before = fs::current_path();
  fs::current_path(dir.path());
  const std::string got = resolved("name");
  fs::current_path(before);
  EXPECT_EQ(got, fs::canonical(dir.path()).string() + "/name");
}

}  // namespace
}  // namespace stoker
