// The ImageFolder listing against torchvision.datasets.ImageFolder itself (the build's Python
// (STOKER_PYTHON)), and the cases where stoker parts from it.
#include "stoker/store/import/image_folder_scan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  throw_if_error(write_file_atomically(path, "not read by the listing"));
}

// A tree with what makes ImageFolder's order subtle: nested folders whose sorted paths are not
// a depth-first walk (b/sub, b/sub-dir, b/sub.jpg, b/sub/deeper: '-' and '.' sort before '/'),
// a directory named like an image, extensions in upper case, files without an image extension,
// names that are not UTF-8 or sort differently by code point than by byte, symbolic links to
// classes and to folders, a FIFO and a dangling link named as images, a hidden class.
void make_tree(const std::string& root) {
  for (const char* name : {"b/x.jpg",
                           "b/y.PNG",
                           "b/z.txt",
                           "b/sub/a.jpg",
                           "b/sub-dir/c.jpeg",
                           "b/sub.jpg/d.png",
                           "b/sub/deeper/e.webp",
                           "b/\xff-dir/f.jpg",
                           "b/\xee\x80\x80-dir/g.jpg",
                           "b/Tiff.TIFF",
                           "a/1.jpg",
                           "a/10.jpg",
                           "a/2.jpg",
                           "a/Z.jpg",
                           "a/\xc3\xa9.jpg",
                           "a/\xff.jpg",
                           "a/\xee\x80\x80.jpg",
                           "a/.jpg",
                           "a/notes.jpg.txt",
                           ".hidden/h.bmp",
                           "c/own.ppm",
                           "top-level-file.jpg"})
    touch(root + "/" + name);
  fs::create_directory_symlink("b", root + "/link-to-b");
  fs::create_directory_symlink("../a", root + "/c/linked-a");
  testing::make_fifo(root + "/c/fifo.jpg");
  fs::create_symlink("nowhere.jpg", root + "/c/dangling.jpg");
  fs::create_directory_symlink("nowhere", root + "/dangling-class");
}

std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes)
    out += "0123456789abcdef"[c >> 4], out += "0123456789abcdef"[c & 15];
  return out;
}

// torchvision's classes and samples for `root`, as lines "class HEX" and "sample HEX LABEL";
// empty if the build's Python (STOKER_PYTHON) has no torchvision.
std::string torchvision_listing(const testing::TempDir& dir, const std::string& root) {
  const std::string script = dir / "list.py", out = dir / "listing.txt";
  throw_if_error(write_file_atomically(script, R"(
import os, sys
from torchvision.datasets import ImageFolder
ds = ImageFolder(os.fsdecode(sys.argv[1].encode()))
with open(sys.argv[2], "w") as out:
    for name in ds.classes:
        out.write("class %s\n" % os.fsencode(name).hex())
    for path, label in ds.samples:
        out.write("sample %s %d\n" % (os.fsencode(path).hex(), label))
)"));
  if (std::system((STOKER_PYTHON " " + script + " '" + root + "' '" + out + "'").c_str()) != 0)
    return "";
  return read_file(out).value_or_throw();
}

std::string stoker_listing(const ImageFolderListing& listing) {
  std::ostringstream out;
  for (const std::string& name : listing.classes) out << "class " << hex(name) << "\n";
  for (const ImageFolderSample& s : listing.samples)
    out << "sample " << hex(s.path) << " " << s.label << "\n";
  return out.str();
}

TEST(ImageFolderScanTest, ListsWhatTorchvisionsImageFolderListsInItsOrder) {
  testing::TempDir dir;
  testing::HangGuard guard(120);
  const std::string root = dir / "root";
  make_tree(root);
  ImageFolderListing listing = list_image_folder(root).value_or_throw();
  const std::string expected = torchvision_listing(dir, root);
  if (expected.empty()) GTEST_SKIP() << STOKER_PYTHON " with torchvision is not available";
  EXPECT_EQ(stoker_listing(listing), expected);
  // Spelled out, what the comparison covers:
  EXPECT_EQ(listing.classes, (std::vector<std::string>{".hidden", "a", "b", "c", "link-to-b"}));
  EXPECT_EQ(listing.samples[1].path, root + "/a/.jpg");
  // Code point order: b"\xff" (U+DCFF) before U+E000 (bytes EE 80 80), unlike byte order.
  const size_t n = listing.samples.size();
  EXPECT_EQ(listing.samples[n - 2].path, root + "/link-to-b/\xff-dir/f.jpg");
  EXPECT_EQ(listing.samples[n - 1].path, root + "/link-to-b/\xee\x80\x80-dir/g.jpg");
  // b/z.txt and a/notes.jpg.txt, each twice: through link-to-b and c/linked-a.
  EXPECT_EQ(listing.ignored_files, 4u);
  EXPECT_TRUE(listing.bad.empty());
}

TEST(ImageFolderScanTest, ExtensionsAreTorchvisionsInAnyCase) {
  for (const char* name :
       {"a.jpg", "a.JPEG", "x.Png", "a.ppm", "a.bmp", "a.pgm", "a.tif", "a.TIFF", "a.webp", ".jpg"})
    EXPECT_TRUE(has_image_extension(name)) << name;
  for (const char* name : {"a.gif", "a.jpg.txt", "jpg", "a.jp", "a.heic", ""})
    EXPECT_FALSE(has_image_extension(name)) << name;
}

TEST(ImageFolderScanTest, OtherFoldersListTheFilesOfTheirExtensionsAsMakeDatasetDoes) {
  // torchvision's video datasets: make_dataset(root, class_to_idx, ("avi", "mp4")), which
  // matches endings without a dot ("xavi") in the lower-cased name.
  testing::TempDir dir;
  const std::string root = dir / "root";
  for (const char* name : {"walk/b.avi", "walk/a.MP4", "walk/xavi", "walk/c.mkv", "walk/sub/d.mp4",
                           "run/e.avi", "run/e.jpg"})
    touch(root + "/" + name);
  const ClassFolderFiles videos{{"avi", "mp4"}, "a video extension", "a VideoFolder", "videos"};
  const ImageFolderListing listing = list_class_folder(root, videos).value_or_throw();
  EXPECT_EQ(listing.classes, (std::vector<std::string>{"run", "walk"}));
  std::vector<std::string> paths;
  for (const ImageFolderSample& sample : listing.samples) paths.push_back(sample.path);
  EXPECT_EQ(paths, (std::vector<std::string>{root + "/run/e.avi", root + "/walk/a.MP4",
                                             root + "/walk/b.avi", root + "/walk/xavi",
                                             root + "/walk/sub/d.mp4"}));
  EXPECT_EQ(listing.samples.back().label, 1);
  EXPECT_EQ(listing.ignored_files, 2u);           // e.jpg, c.mkv
  EXPECT_FALSE(has_extension("a.AVI", {"AVI"}));  // an upper-case extension takes none
  touch(root + "/jump/j.jpg");
  EXPECT_EQ(list_class_folder(root, videos).status().message(),
            root + ": found no file with a video extension (avi mp4) for the class jump");
  fs::remove_all(root);
  touch(root + "/x.mp4");
  EXPECT_EQ(list_class_folder(root, videos).status().message(),
            root + ": no class folders (a VideoFolder holds one folder per class)");
}

TEST(ImageFolderScanTest, SymbolicLinkLoopsAreBadEntriesNotWalked) {
  testing::TempDir dir;
  const std::string root = dir / "root";
  touch(root + "/a/x.jpg");
  touch(root + "/a/deep/y.jpg");
  fs::create_directory_symlink("..", root + "/a/deep/up");       // back to a/
  fs::create_directory_symlink(".", root + "/a/self");           // to a/ itself
  fs::create_directory_symlink("../../a", root + "/a/deep/a2");  // also a/
  ImageFolderListing listing = list_image_folder(root).value_or_throw();
  ASSERT_EQ(listing.samples.size(), 2u);
  EXPECT_EQ(listing.samples[0].path, root + "/a/x.jpg");
  EXPECT_EQ(listing.samples[1].path, root + "/a/deep/y.jpg");
  ASSERT_EQ(listing.bad.size(), 3u);
  for (const BadEntry& bad : listing.bad)
    EXPECT_EQ(bad.reason, "a symbolic link loop: leads back to a directory it is inside")
        << bad.path;
}

TEST(ImageFolderScanTest, AnEmptyClassIsRefusedNamingIt) {
  testing::TempDir dir;
  const std::string root = dir / "root";
  touch(root + "/full/x.jpg");
  fs::create_directories(root + "/empty");
  touch(root + "/text-only/readme.txt");
  touch(root + "/nested-empty/sub/readme.md");
  auto listing = list_image_folder(root);
  ASSERT_FALSE(listing.is_ok());
  EXPECT_EQ(listing.status().message(),
            root +
                ": found no file with an image extension (.jpg .jpeg .png .ppm .bmp .pgm .tif "
                ".tiff .webp) for the classes empty, nested-empty, text-only");
}

TEST(ImageFolderScanTest, ManyEmptyClassesAreAbbreviated) {
  testing::TempDir dir;
  const std::string root = dir / "root";
  for (int i = 0; i < 25; ++i) fs::create_directories(root + "/c" + std::to_string(100 + i));
  auto listing = list_image_folder(root);
  ASSERT_FALSE(listing.is_ok());
  EXPECT_NE(listing.status().message().find("c108, c109 and 15 more"), std::string::npos)
      << listing.status().message();
}

TEST(ImageFolderScanTest, RootsThatAreNotImageFoldersAreRefused) {
  testing::TempDir dir;
  EXPECT_EQ(list_image_folder(dir / "missing").status().message(),
            dir / "missing" + ": no such directory");
  touch(dir / "file");
  EXPECT_EQ(list_image_folder(dir / "file").status().message(), dir / "file: not a directory");
  fs::create_directories(dir / "flat");
  touch(dir / "flat/x.jpg");
  EXPECT_EQ(list_image_folder(dir / "flat").status().message(),
            dir / "flat: no class folders (an ImageFolder holds one folder per class)");
}

TEST(ImageFolderScanTest, AClassNameThatIsNotUtf8IsRefusedWithItsBytesEscaped) {
  testing::TempDir dir;
  touch(dir / "root/good/x.jpg");
  touch(dir / "root/caf\xe9/x.jpg");  // Latin-1
  auto listing = list_image_folder(dir / "root");
  ASSERT_FALSE(listing.is_ok());
  EXPECT_EQ(listing.status().message(),
            dir /
                "root: class folder name caf\\xe9 is not UTF-8 (class names are stored as JSON "
                "text)");
}

}  // namespace
}  // namespace stoker
