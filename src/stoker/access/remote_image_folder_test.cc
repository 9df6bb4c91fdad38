// An ImageFolder over HTTP (remote_image_folder.h, read through remote_files.h), on nginx on
// loopback, listed from its HTML and its JSON index pages: the classes and samples are the local
// folder's, in torchvision's order, and the records are the local folder's records; a later run
// reads the files from the cache (no GET); the groups of the files the loader's plan needs next
// are fetched ahead; a group GETted one file at a time (deterministic) or eight at once gives the
// same records; a file gone from the server, a file that is no image, a folder without classes
// and an index page that cannot be parsed are each one line naming the URL (and the file). A
// listing is bounded: a link looping back is listed once, pages without end stop at a bound,
// and a cancel ends it (issue 66, H5).
#include "stoker/access/remote_image_folder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "stoker/access/data_source.h"
#include "stoker/store/import/image_folder_source.h"
#include "stoker/store/shard_schedule.h"
#include "stoker/testing/dataset_records.h"
#include "stoker/testing/hostile_http_server.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;

// nginx serving ROOT/folder: classes cat (a nested folder, a name with a space, a file that is
// no image by its extension) and dog (an upper-case extension), and ROOT/bad (a file with an
// image's name that is no image) and ROOT/empty (no class folder).
class RemoteImageFolderTest : public testing::ServerSuite<RemoteImageFolderTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    put("folder/dog/b.jpg", jpeg(20, 10));
    put("folder/dog/a.JPG", jpeg(16, 12));
    put("folder/cat/z/c.jpeg", jpeg(8, 24));
    put("folder/cat/z b/d.jpg", jpeg(10, 10));
    put("folder/cat/x.jpg", jpeg(30, 9));
    put("folder/cat/notes.txt", "not an image");
    put("folder/cat/y y.jpg", jpeg(12, 12));
    put("bad/cat/x.jpg", jpeg(8, 8));
    put("bad/cat/y.jpg", "no image at all");
    put("empty/readme.txt", "no class folders");
    start_nginx();
  }
  void SetUp() override {
    ServerSuite::SetUp();
    if (IsSkipped()) return;
    access_.cache_dir = cache_.path() + "/cache";
  }
  static std::string jpeg(int width, int height) {
    image::testing::JpegSpec spec;
    spec.width = width;
    spec.height = height;
    const std::vector<uint8_t> bytes = image::testing::encode_jpeg(spec);
    return std::string(bytes.begin(), bytes.end());
  }
  static void put(const std::string& path, const std::string& bytes) {
    fs::create_directories(fs::path(root() + "/" + path).parent_path());
    throw_if_error(write_file_atomically(root() + "/" + path, bytes));
  }
  // GETs of files (not folders' index pages) under `prefix` in nginx's access log since the
  // suite began.
  static int gets(const std::string& prefix) {
    std::ifstream log(*dir_ / "nginx/access.log");
    int count = 0;
    for (std::string line; std::getline(log, line);)
      count += line.rfind("GET " + prefix, 0) == 0 && line.find("/ 200 ") == std::string::npos &&
               line.find(" 200 ") != std::string::npos;
    return count;
  }
  static std::vector<std::string> log_lines() {
    std::ifstream log(*dir_ / "nginx/access.log");
    std::vector<std::string> lines;
    for (std::string line; std::getline(log, line);) lines.push_back(line);
    return lines;
  }
  Result<std::shared_ptr<const Dataset>> open(const std::string& spec,
                                              const std::string& kind = "auto") {
    return open_dataset(spec, access_, kShardByShard, kind);
  }
  std::vector<std::string> local_records(const std::string& folder) {
    return testing::all_records(*open(root() + "/" + folder, "imagefolder").value_or_throw());
  }

  testing::TempDir cache_;
  DataAccessOptions access_;
};

TEST_F(RemoteImageFolderTest, ListingIsTorchvisionsOrderFromHtmlAndJsonIndexes) {
  const ImageFolderListing local = list_image_folder(root() + "/folder").value_or_throw();
  ASSERT_EQ(local.samples.size(), 6u);
  for (const char* index : {"_index", "_index_json"}) {
    SCOPED_TRACE(index);
    const std::string base = url(std::string(index) + "/folder");
    const RemoteImageFolder remote = list_remote_image_folder(base + "/").value_or_throw();
    EXPECT_EQ(remote.location, base);
    EXPECT_EQ(remote.listing.classes, local.classes);
    ASSERT_EQ(remote.listing.samples.size(), local.samples.size());
    EXPECT_EQ(remote.listing.ignored_files, 1u);
    for (size_t i = 0; i < local.samples.size(); ++i) {
      const std::string relative = local.samples[i].path.substr(root().size() + 8);
      std::string encoded;  // the space, as a URL has it
      for (char c : relative) encoded += c == ' ' ? std::string("%20") : std::string(1, c);
      EXPECT_EQ(remote.listing.samples[i].path, base + "/" + encoded);
      EXPECT_EQ(remote.listing.samples[i].label, local.samples[i].label);
      EXPECT_EQ(remote.files[i].size, fs::file_size(local.samples[i].path));
    }
  }
}

TEST_F(RemoteImageFolderTest, RecordsAreTheLocalFoldersAndALaterRunReadsTheCache) {
  const std::vector<std::string> local = local_records("folder");
  const int before = gets("/_index_json/folder/");
  {
    auto remote = open(url("_index_json/folder/")).value_or_throw();
    EXPECT_NE(remote->describe().find(url("_index_json/folder")), std::string::npos);
    EXPECT_EQ(remote->manifest().class_names, (std::vector<std::string>{"cat", "dog"}));
    EXPECT_EQ(testing::all_records(*remote), local);
  }
  EXPECT_EQ(gets("/_index_json/folder/") - before, 6) << "each file downloaded once";
  auto again = open(url("_index_json/folder"), "imagefolder").value_or_throw();
  EXPECT_EQ(testing::all_records(*again), local);
  EXPECT_EQ(gets("/_index_json/folder/") - before, 6) << "a later run reads the cache";
  // The HTML index: sizes asked by HEAD, the same records.
  EXPECT_EQ(testing::all_records(*open(url("_index/folder/")).value_or_throw()), local);
}

// Groups of two files (the default's are larger than this folder): the horizon counts files,
// and their groups are fetched.
TEST_F(RemoteImageFolderTest, GroupsAreFetchedAheadInTheLoadersOrder) {
  RemoteImageFolder folder = list_remote_image_folder(url("_index/folder/")).value_or_throw();
  auto cache = ShardCache::open(cache_.path() + "/groups", uint64_t{1} << 30).value_or_throw();
  RemoteFilesOptions options;
  options.group_files = 2;
  options.group_bytes = uint64_t{1} << 20;
  auto files = RemoteFiles::open_listed(std::move(folder.files), folder.location, cache, options)
                   .value_or_throw();
  ImageFolderSourceOptions source_options;
  source_options.units_ahead = RemoteFiles::kUnitsListed;
  auto dataset =
      Dataset::open(ImageFolderSource::open_listed(folder.location, std::move(folder.listing),
                                                   files, source_options)
                        .value_or_throw())
          .value_or_throw();
  const int before = gets("/_index/folder/");
  // The loader's plan: the dog images (records 4, 5: the third group) first, then the cat ones
  // (0 to 3: the first and second).
  ShardSchedule plan;
  plan.epoch_size = 6;
  plan.now = {{2, 2}, {3, 3}, {4, 4}, {5, 5}, {0, 0}, {1, 1}};  // by unit: a file each
  plan.after = plan.now;
  dataset->advise(plan, 0);
  // Before anything is measured, the horizon is four files: the dogs' and the first two cats'
  // (records 4, 5, 0, 1), so the third group and the first, not the second.
  for (int waited = 0; gets("/_index/folder/") - before < 4 && waited < 1000; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(gets("/_index/folder/") - before, 4) << "the horizon's groups, before any pin";
  std::vector<std::string> objects;
  for (const auto& entry : fs::directory_iterator(cache->dir() + "/" + kObjectsKey + "/shards"))
    objects.push_back(entry.path().filename());
  std::sort(objects.begin(), objects.end());
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].rfind("a.JPG+1.", 0), 0u) << objects[0];
  EXPECT_EQ(objects[1].rfind("x.jpg+1.", 0), 0u) << objects[1];
  EXPECT_EQ(testing::all_records(*dataset), local_records("folder"));
  EXPECT_EQ(gets("/_index/folder/") - before, 6) << "the second group read when pinned, once";
}

// A group's files GETted one at a time (the deterministic variant) or eight at once: the same
// records, the local folder's.
TEST_F(RemoteImageFolderTest, AGroupIsTheSameFetchedOneOrEightFilesAtOnce) {
  for (const int streams : {1, 8}) {
    SCOPED_TRACE(streams);
    RemoteImageFolder folder =
        list_remote_image_folder(url("_index_json/folder/")).value_or_throw();
    auto cache =
        ShardCache::open(cache_.path() + "/streams-" + std::to_string(streams), uint64_t{1} << 30)
            .value_or_throw();
    RemoteFilesOptions options;
    options.group_files = 32;
    options.group_bytes = uint64_t{1} << 20;
    options.group_streams = streams;
    auto files = RemoteFiles::open_listed(std::move(folder.files), folder.location, cache, options)
                     .value_or_throw();
    auto dataset =
        Dataset::open(ImageFolderSource::open_listed(folder.location, std::move(folder.listing),
                                                     files, ImageFolderSourceOptions())
                          .value_or_throw())
            .value_or_throw();
    EXPECT_EQ(testing::all_records(*dataset), local_records("folder"));
  }
}

TEST_F(RemoteImageFolderTest, BadFilesAreRecordsNamingTheirUrl) {
  put("gone/cat/x.jpg", jpeg(8, 8));
  put("gone/cat/y.jpg", jpeg(9, 9));
  auto dataset = open(url("_index_json/gone/")).value_or_throw();
  fs::remove(root() + "/gone/cat/y.jpg");  // listed, then gone: a 404
  auto bad = open(url("_index_json/bad/")).value_or_throw();
  for (const auto& [data, file, why] :
       {std::tuple{dataset, std::string("gone/cat/y.jpg"), std::string("HTTP 404")},
        std::tuple{bad, std::string("bad/cat/y.jpg"), std::string("")}}) {
    const int64_t index = 1;
    ShardPins pins = data->pin(&index, 1, nullptr).value_or_throw();
    const Status named = data->record_error(1, corrupt("the transform's message"));
    const std::string message = named.message();
    EXPECT_EQ(message.rfind(url("_index_json/" + file) + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(why), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    const int64_t good = 0;
    ShardPins kept = data->pin(&good, 1, nullptr).value_or_throw();
    // "HTTP 404", not "404": the server's port may start with those digits.
    EXPECT_EQ(data->record_error(0, corrupt("decode failed")).message().find("HTTP 404"),
              std::string::npos);
  }
}

TEST_F(RemoteImageFolderTest, AFolderWithoutClassesOrAnIndexThatCannotBeParsedIsOneLine) {
  const Status empty = open(url("_index/empty"), "imagefolder").status();
  EXPECT_NE(empty.message().find(url("_index/empty") + ": no class folders"), std::string::npos)
      << empty.message();
  // A page cut inside a tag.
  testing::HostileHttpServer server([](const testing::HostileRequest&) {
    return testing::HostileResponse{testing::http_response(
        "200 OK", "Content-Type: text/html\r\n", "<html><a href=\"cat/\">cat</a><a href=\"dog")};
  });
  const std::string base = server.url() + "/train/";
  const Status cut = open(base, "imagefolder").status();
  EXPECT_EQ(cut.code(), StatusCode::kCorrupt) << cut.message();
  EXPECT_NE(cut.message().find(server.url() + "/train/"), std::string::npos) << cut.message();
  EXPECT_EQ(cut.message().find('\n'), std::string::npos) << cut.message();
}

// An HTML-listed file whose HEAD fails (404, 403, 500, a redirect to a host that does not
// answer) or gives no size is read as an error naming its URL and the HEAD's answer, not the
// cache's disk ("no room ... (0 bytes)": a file alone in its group was admitted at size 0); the
// other files are read, an empty one too (its decode then says it is empty).
TEST(RemoteImageFolderHead, AFileWhoseHeadFailsIsReadAsItsUrlAndStatus) {
  ::setenv("STOKER_RETRY_SECONDS", "0", 1);  // one attempt
  image::testing::JpegSpec spec;
  const std::vector<uint8_t> jpeg = image::testing::encode_jpeg(spec);
  const std::string image(jpeg.begin(), jpeg.end());
  const std::map<std::string, std::string> failing = {
      {"b.jpg", "404 Not Found"}, {"c.jpg", "403 Forbidden"}, {"d.jpg", "500 Server Error"}};
  testing::HostileHttpServer server([&](const testing::HostileRequest& request) {
    const std::string path = request.line.substr(request.line.find(' ') + 1);
    const std::string name = path.substr(0, path.find(' '));
    std::string response;
    if (name == "/train/") {
      response = testing::http_response("200 OK", "", "<a href=\"cat/\">");
    } else if (name == "/train/cat/") {
      response = testing::http_response("200 OK", "",
                                        "<a href=\"a.jpg\"><a href=\"b.jpg\"><a href=\"c.jpg\">"
                                        "<a href=\"d.jpg\"><a href=\"e.jpg\"><a href=\"f.jpg\">"
                                        "<a href=\"g.jpg\">");
    } else if (name == "/train/cat/a.jpg" && request.line.rfind("HEAD", 0) == 0) {
      response = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(image.size()) +
                 "\r\nConnection: close\r\n\r\n";
    } else if (name == "/train/cat/a.jpg") {
      response = testing::http_response("200 OK", "", image);
    } else if (name == "/train/cat/e.jpg") {  // to a port nothing listens on
      response =
          "HTTP/1.1 302 Found\r\nLocation: http://localhost:1/e.jpg\r\n"
          "Content-Length: 0\r\nConnection: close\r\n\r\n";
    } else if (name == "/train/cat/f.jpg") {  // no Content-Length
      response = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
    } else if (name == "/train/cat/g.jpg") {  // empty
      response = testing::http_response("200 OK", "", "");
    } else {
      response = testing::http_response(failing.at(name.substr(11)), "", "");
    }
    return testing::HostileResponse{response};
  });
  const std::pair<std::string, std::string> expected[] = {{"b.jpg", "HTTP 404"},
                                                          {"c.jpg", "HTTP 403"},
                                                          {"d.jpg", "HTTP 500"},
                                                          {"e.jpg", "connect"},
                                                          {"f.jpg", "gives no size"}};
  testing::TempDir dir;
  for (const int group_files : {1, kGroupFiles}) {
    SCOPED_TRACE(group_files);
    RemoteImageFolder folder = list_remote_image_folder(server.url() + "/train/").value_or_throw();
    auto cache =
        ShardCache::open(dir / std::to_string(group_files), uint64_t{1} << 30).value_or_throw();
    RemoteFilesOptions options;
    options.group_files = group_files;
    options.group_bytes = kGroupBytes;
    auto files = RemoteFiles::open_listed(std::move(folder.files), folder.location, cache, options)
                     .value_or_throw();
    for (const size_t read : {0, 6})
      EXPECT_TRUE(files->open(read, nullptr).is_ok())
          << files->open(read, nullptr).status().message();
    for (size_t i = 1; i <= 5; ++i) {
      const auto& [file, why] = expected[i - 1];
      const std::string message = files->open(i, nullptr).status().message();
      EXPECT_EQ(message.rfind(server.url() + "/train/cat/" + file + ": ", 0), 0u) << message;
      EXPECT_NE(message.find(why), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
  ::unsetenv("STOKER_RETRY_SECONDS");
}

// A server whose every folder page is `page(path)` (paths ending in '/'), and whose .jpg files
// are 10 bytes (a HEAD gets their size); the requests it had, by path.
testing::HostileHttpServer::Handler listing_server(
    std::function<std::string(const std::string& path)> page) {
  return [page = std::move(page)](const testing::HostileRequest& request) {
    const size_t at = request.line.find(' ') + 1;
    const std::string path = request.line.substr(at, request.line.find(' ', at) - at);
    if (path.back() == '/')
      return testing::HostileResponse{testing::http_response("200 OK", "", page(path))};
    if (request.line.rfind("HEAD ", 0) == 0)
      return testing::HostileResponse{
          "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"};
    return testing::HostileResponse{testing::http_response("200 OK", "", "0123456789")};
  };
}

// A link looping back (a class folder's `loop/` serving the class folder's page, as nginx does
// for a symlink to its folder) is listed once: the class's image is one sample, and the loop's
// page is asked for once (it went 64 folders deep before, then failed).
TEST(RemoteImageFolderBounds, ALinkLoopingBackIsListedOnce) {
  testing::HostileHttpServer server(listing_server([](const std::string& path) -> std::string {
    if (path == "/train/") return "<a href=\"cat/\">cat/</a>";
    return "<a href=\"x.jpg\">x.jpg</a><a href=\"loop/\">loop/</a>";  // cat/, cat/loop/, ...
  }));
  Result<RemoteImageFolder> folder = list_remote_image_folder(server.url() + "/train/");
  ASSERT_TRUE(folder.is_ok()) << folder.status().message();
  ASSERT_EQ(folder.value().listing.samples.size(), 1u);
  EXPECT_EQ(folder.value().listing.samples[0].path, server.url() + "/train/cat/x.jpg");
  EXPECT_EQ(server.requests().size(), 4u);  // train/, cat/, cat/loop/, the HEAD of x.jpg
}

// A server answering every path with one page (`a/` and `b/`) repeats the root's page in each
// class folder: nothing is walked below, and the classes have no images (issue 66, H5: 4,589
// pages in 120 s before).
TEST(RemoteImageFolderBounds, OnePageForEveryPathEndsAtOnce) {
  testing::HostileHttpServer server(listing_server([](const std::string&) {
    return std::string("<a href=\"a/\">a/</a><a href=\"b/\">b/</a>");
  }));
  const Status listed = list_remote_image_folder(server.url() + "/train/").status();
  ASSERT_FALSE(listed.is_ok());
  EXPECT_EQ(listed.message().find('\n'), std::string::npos) << listed.message();
  EXPECT_NE(listed.message().find(server.url() + "/train"), std::string::npos) << listed.message();
  EXPECT_EQ(server.requests().size(), 3u);  // train/, a/, b/
}

// Pages without end, each its own (a/, b/ and an image named after its path): the listing ends
// at the first bound it passes, one line naming the folder and the bound, its requests bounded
// by it.
TEST(RemoteImageFolderBounds, PagesWithoutEndStopAtTheBounds) {
  const auto endless = listing_server([](const std::string& path) {
    std::string name = path;
    std::replace(name.begin(), name.end(), '/', '_');
    return "<a href=\"a/\">a/</a><a href=\"b/\">b/</a><a href=\"" + name + ".jpg\">i</a>";
  });
  struct Case {
    ListingLimits limits;
    std::string says;
    size_t most_requests;
  };
  const Case cases[] = {{{64, 40, 1000}, "more than 40 folders to list", 40},
                        {{64, 1000, 30}, "more than 30 files listed", 32},
                        {{8, 1000, 1000}, "folders nested deeper than 8", 11}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    testing::HostileHttpServer server(endless);
    const Status listed =
        list_remote_image_folder(server.url() + "/train/", nullptr, c.limits).status();
    ASSERT_FALSE(listed.is_ok());
    EXPECT_EQ(listed.message().find('\n'), std::string::npos) << listed.message();
    EXPECT_EQ(listed.message().rfind(server.url() + "/train/", 0), 0u) << listed.message();
    EXPECT_NE(listed.message().find(c.says), std::string::npos) << listed.message();
    EXPECT_LE(server.requests().size(), c.most_requests);
  }
}

// A cancel (Python's Ctrl-C) ends a listing without end: kCancelled, with no more than the
// requests already under way.
TEST(RemoteImageFolderBounds, ACancelEndsTheListing) {
  testing::HostileHttpServer server(listing_server([](const std::string& path) {
    return "<a href=\"a/\">a/</a><a href=\"b/\">b/</a><a href=\"" + std::to_string(path.size()) +
           ".jpg\">i</a>";
  }));
  const Status listed = list_remote_image_folder(server.url() + "/train/", [&] {
                          return server.requests().size() >= 10;
                        }).status();
  EXPECT_EQ(listed.code(), StatusCode::kCancelled) << listed.message();
  EXPECT_LE(server.requests().size(), 10u + kRequestThreads);
}

}  // namespace
}  // namespace stoker::remote
