// Parquet files over HTTP read by row-group range (remote_files.h, parquet_source.h): opening
// HEADs each file and GETs its footer by range (the last 8 bytes, then the footer), kept in the
// cache for a later open of the same file; a row group's two column chunks are GETted in one
// range (the small chunk between them read and dropped), with the ETag listed (If-Match), when
// it is first read or ahead of the loader's order, and kept in the cache; the records are the
// local file's. A file changed on the server during a run, a server that answers a range with
// the whole file (200), a range cut short and a size other than the one listed are each one
// line naming the URL and the row group.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "stoker/access/data_source.h"
#include "stoker/access/remote_objects.h"
#include "stoker/net/remote_url.h"
#include "stoker/pipeline/loader_core.h"
#include "stoker/store/shard_schedule.h"
#include "stoker/testing/dataset_records.h"
#include "stoker/testing/hostile_http_server.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/tar_fixtures.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;

constexpr int kRows = 12;
constexpr int kRowsPerGroup = 3;
constexpr int kGroups = kRows / kRowsPerGroup;

// Writes argv[2] from the JPEGs argv[1]/I.jpg (I < argv[3]) in Hugging Face's layout (an image
// struct of bytes and path, an int64 label, another column), argv[4] rows a row group.
const char* const kWriter = R"(
import sys
import pyarrow as pa, pyarrow.parquet as pq
d, out, count, per_group = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
images = [{"bytes": open(f"{d}/{i}.jpg", "rb").read(), "path": f"{i}.jpg"} for i in range(count)]
table = pa.table({"image": pa.array(images, pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                  "label": pa.array([i % 4 for i in range(count)], pa.int64()),
                  "other": pa.array(range(count))})
pq.write_table(table, out, row_group_size=per_group, compression="snappy")
)";

// Writes `path` (kWriter): `rows` JPEGs of sizes (8 + i % 64) x (6 + i % 5) as `dir`/I.jpg, in
// row groups of `per_group` rows.
void write_images_and_parquet(const std::string& dir, const std::string& path, int rows = kRows,
                              int per_group = kRowsPerGroup) {
  fs::create_directories(dir);
  for (int i = 0; i < rows; ++i) {
    image::testing::JpegSpec jpeg;
    jpeg.width = 8 + i % 64;
    jpeg.height = 6 + i % 5;
    const std::vector<uint8_t> bytes = image::testing::encode_jpeg(jpeg);
    throw_if_error(write_file_atomically(dir + "/" + std::to_string(i) + ".jpg",
                                         std::string(bytes.begin(), bytes.end())));
  }
  const std::string script = dir + "/writer.py";
  throw_if_error(write_file_atomically(script, kWriter));
  const std::string command = std::string(STOKER_PYTHON) + " " + script + " " + dir + " " + path +
                              " " + std::to_string(rows) + " " + std::to_string(per_group);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

// nginx serving ROOT/pq/train.parquet and ROOT/pq/many.parquet (128 row groups: the units the
// loader keeps in memory are few beside them).
class RemoteParquetTest : public testing::ServerSuite<RemoteParquetTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    fs::create_directories(root() + "/pq");
    write_images_and_parquet(*dir_ / "img", root() + "/pq/train.parquet");
    write_images_and_parquet(*dir_ / "many", root() + "/pq/many.parquet", 2560, 20);
    start_nginx();
  }
  // nginx's log of the requests for /pq/ after the first `skip`, once there are `count` of
  // them (or 5 s passed: nginx writes a line after its response): "METHOD URI STATUS range=R
  // if_match=E".
  static std::vector<std::string> requests(size_t skip = 0, size_t count = 0) {
    std::vector<std::string> lines;
    for (int waited = 0; waited < 500; ++waited) {
      lines.clear();
      std::ifstream log(*dir_ / "nginx/access.log");
      for (std::string line; std::getline(log, line);)
        if (line.find(" /pq/") != std::string::npos) lines.push_back(line);
      if (lines.size() >= skip + count) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    lines.erase(lines.begin(),
                lines.begin() + static_cast<ptrdiff_t>(std::min(skip, lines.size())));
    return lines;
  }
  RemoteParquetTest() { access_.cache_dir = cache_.path() + "/cache"; }
  Result<std::shared_ptr<const Dataset>> open(const std::string& spec) {
    return open_dataset(spec, access_, kShardByShard, "parquet");
  }

  testing::TempDir cache_;
  DataAccessOptions access_;
};

TEST_F(RemoteParquetTest, RowGroupsAreFetchedByRangeAndAreTheLocalRecords) {
  const std::vector<std::string> local =
      testing::all_records(*open(root() + "/pq/train.parquet").value_or_throw());
  ASSERT_EQ(local.size(), static_cast<size_t>(kRows));
  const size_t before = requests().size();
  auto remote = open(url("pq/train.parquet")).value_or_throw();
  // A HEAD, then the footer's two ranges.
  std::vector<std::string> asked = requests(before, 3);
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0].rfind("HEAD /pq/train.parquet 200", 0), 0u) << asked[0];
  EXPECT_EQ(testing::all_records(*remote), local);
  // Then each row group's two column chunks, a small one between them (image.path): one GET
  // a row group, a range asked with the ETag listed.
  asked = requests(before + 1, 2 + kGroups);
  EXPECT_EQ(asked.size(), 2u + kGroups);
  for (const std::string& line : asked) {
    EXPECT_EQ(line.rfind("GET /pq/train.parquet 206 range=bytes=", 0), 0u) << line;
    EXPECT_EQ(line.find("if_match=\""), line.find(" if_match=") + 1) << line;
  }
  // A later run: its HEAD alone, the footer and the row groups from the cache.
  const size_t later = requests(before, 3 + kGroups).size() + before;
  EXPECT_EQ(testing::all_records(*open(url("pq/train.parquet")).value_or_throw()), local);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // for a GET too many to show
  asked = requests(later, 1);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].rfind("HEAD /pq/train.parquet 200", 0), 0u) << asked[0];
  // A file changed on the server since: its footer is read again.
  fs::copy_file(root() + "/pq/train.parquet", root() + "/pq/again.parquet",
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(testing::all_records(*open(url("pq/again.parquet")).value_or_throw()), local);
  const fs::path again = root() + "/pq/again.parquet";
  fs::last_write_time(again, fs::last_write_time(again) + std::chrono::seconds(10));
  const size_t changed = requests().size();
  EXPECT_EQ(testing::all_records(*open(url("pq/again.parquet")).value_or_throw()), local);
  asked = requests(changed, 3);
  ASSERT_GE(asked.size(), 3u);
  EXPECT_EQ(asked[1].rfind("GET /pq/again.parquet 206", 0), 0u) << asked[1];
}

// An http:// folder of Parquet files is listed from its index page (nginx's autoindex): the
// same records as the brace pattern of its files gives.
TEST_F(RemoteParquetTest, AFolderIsListedFromItsIndexPage) {
  fs::create_directories(root() + "/listed");
  for (const char* name : {"a.parquet", "b.parquet"})
    fs::copy_file(root() + "/pq/train.parquet", root() + "/listed/" + name,
                  fs::copy_options::overwrite_existing);
  const std::vector<std::string> named =
      testing::all_records(*open(url("listed/{a,b}.parquet")).value_or_throw());
  ASSERT_EQ(named.size(), 2u * kRows);
  EXPECT_TRUE(testing::all_records(*open(url("_index/listed/")).value_or_throw()) == named);
}

// A remote folder of Hugging Face's split files is two datasets, as a local one is: its
// train-*.parquet files and its test-*.parquet files, each read with the local split's records.
TEST_F(RemoteParquetTest, AFolderOfHuggingFacesSplitsIsTwoDatasetsAsALocalOne) {
  fs::create_directories(root() + "/hf");
  for (const char* name : {"train-00000-of-00002.parquet", "train-00001-of-00002.parquet",
                           "test-00000-of-00001.parquet"})
    fs::copy_file(root() + "/pq/train.parquet", root() + "/hf/" + name,
                  fs::copy_options::overwrite_existing);
  const DataLocation local = locate(root() + "/hf").value_or_throw();
  const DataLocation remote = locate(url("_index/hf/")).value_or_throw();
  ASSERT_TRUE(local.folder);
  ASSERT_TRUE(remote.folder);
  EXPECT_EQ(remote.path, url("_index/hf"));
  EXPECT_EQ(remote.train, url("_index/hf/train-00000-of-00002.parquet") + "\n" +
                              url("_index/hf/train-00001-of-00002.parquet"));
  EXPECT_EQ(remote.eval, url("_index/hf/test-00000-of-00001.parquet"));
  for (const auto& [local_split, remote_split] :
       {std::pair(local.train, remote.train), std::pair(local.eval, remote.eval)}) {
    const auto read = [&](const std::string& split) {
      return testing::all_records(
          *open_dataset(split, access_, kShardByShard, "auto").value_or_throw());
    };
    const std::vector<std::string> records = read(local_split);
    EXPECT_EQ(records.size(), local_split == local.train ? 2u * kRows : size_t{kRows});
    EXPECT_TRUE(read(remote_split) == records) << remote_split;
  }
}

TEST_F(RemoteParquetTest, RowGroupsAreFetchedAheadInTheLoadersOrder) {
  const std::vector<std::string> local =
      testing::all_records(*open(root() + "/pq/train.parquet").value_or_throw());
  auto dataset = open(url("pq/train.parquet")).value_or_throw();
  const size_t before = requests().size();
  // The loader's plan, each row group's first and last position: 2 and 3 first, then 0 and 1.
  ShardSchedule plan;
  plan.epoch_size = kRows;
  plan.now = {{6, 8}, {9, 11}, {0, 2}, {3, 5}};
  plan.after = plan.now;
  dataset->advise(plan, 0);
  // Every row group GETted before any is pinned, two at a time: 0 and 1 after 2 or 3.
  std::vector<std::string> asked = requests(before, kGroups);
  ASSERT_EQ(asked.size(), static_cast<size_t>(kGroups)) << "all fetched ahead";
  auto first_byte = [](const std::string& line) {
    const size_t at = line.find("range=bytes=");
    return at == std::string::npos ? uint64_t{0} : std::stoull(line.substr(at + 12));
  };
  std::vector<uint64_t> starts;  // in file order: row groups 0 to 3
  for (const std::string& line : asked) starts.push_back(first_byte(line));
  std::sort(starts.begin(), starts.end());
  EXPECT_GE(first_byte(asked[0]), starts[2]) << asked[0] << ": not row group 2 or 3";
  EXPECT_EQ(testing::all_records(*dataset), local);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // for a GET too many to show
  EXPECT_EQ(requests(before).size(), static_cast<size_t>(kGroups)) << "the reader found each";
}

TEST_F(RemoteParquetTest, AFileChangedOnTheServerDuringARunStopsItNamingItsUrl) {
  fs::copy_file(root() + "/pq/train.parquet", root() + "/pq/moving.parquet",
                fs::copy_options::overwrite_existing);
  auto remote = open(url("pq/moving.parquet")).value_or_throw();
  // A new version: nginx's ETag (its time and size) changes.
  const fs::path served = root() + "/pq/moving.parquet";
  fs::last_write_time(served, fs::last_write_time(served) + std::chrono::seconds(10));
  const int64_t first = 0;
  const Status status = remote->pin(&first, 1, nullptr).status();
  EXPECT_EQ(status.code(), StatusCode::kCorrupt) << status.message();
  EXPECT_EQ(status.message().rfind(url("pq/moving.parquet") + ": row group 0: ", 0), 0u)
      << status.message();
  EXPECT_NE(status.message().find("changed on the server"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
}

// get_ranges asks ranges at most kCoalesceGap apart in one GET, whatever their order, drops
// the bytes between them, and gives each range its own bytes in the order asked.
TEST_F(RemoteParquetTest, RangesCloseTogetherAreOneGetAndFarApartAreTwo) {
  const uint64_t size = 2 * kCoalesceGap;
  std::string content(size, '\0');
  for (uint64_t i = 0; i < size; ++i) content[i] = static_cast<char>(i % 251);
  throw_if_error(write_file_atomically(root() + "/pq/bytes.bin", content));
  auto store = store_of(parse_remote_url(url("pq")).value()).value();
  auto fetch = [&](const std::vector<FileRange>& ranges) {
    std::string out;
    for (const FileRange& r : ranges) out.resize(out.size() + r.size);
    const size_t before = requests().size();
    throw_if_error(get_ranges(*store, "bytes.bin", size, ranges, "", "a test",
                              [&](uint64_t at, const char* data, size_t n) {
                                std::copy(data, data + n, out.begin() + static_cast<ptrdiff_t>(at));
                                return Status::ok();
                              }));
    std::string expected;
    for (const FileRange& r : ranges) expected += content.substr(r.offset, r.size);
    EXPECT_EQ(out, expected);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // for a GET too many to show
    return requests(before);
  };
  std::vector<std::string> asked = fetch({{1000, 10}, {0, 20}, {5000, 7}});
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_NE(asked[0].find("range=bytes=0-5006"), std::string::npos) << asked[0];
  asked = fetch({{kCoalesceGap + 100, 10}, {0, 50}});
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_NE(asked[0].find("range=bytes=0-49"), std::string::npos) << asked[0];
}

// The bytes of the ranges asked in `lines` (requests()).
uint64_t range_bytes(const std::vector<std::string>& lines) {
  uint64_t bytes = 0;
  for (const std::string& line : lines) {
    uint64_t first = 0, last = 0;
    const size_t at = line.find("range=bytes=");
    if (at != std::string::npos &&
        std::sscanf(line.c_str() + at, "range=bytes=%lu-%lu", &first, &last) == 2)
      bytes += last - first + 1;
  }
  return bytes;
}

// A cache of half the row groups' chunks, as for tars (remote_files_eviction_test.cc): in the
// epochs after the first, next-use fetches about the floor (the chunks less the cache), least
// recently used clearly more.
TEST_F(RemoteParquetTest, NextUseFetchesAboutTheFloorOfRowGroupsEachEpoch) {
  const std::string spec = url("pq/many.parquet");
  size_t seen = requests().size();
  auto fetched = [&]() {  // the bytes asked since the last call
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // nginx logs after answering
    const std::vector<std::string> lines = requests(seen);
    seen += lines.size();
    return range_bytes(lines);
  };
  auto all = open(spec).value_or_throw();  // the footer
  fetched();
  testing::all_records(*all);
  const uint64_t chunks = fetched();  // every row group's, once
  std::map<EvictionPolicy, double> over_floor;
  for (EvictionPolicy policy : {EvictionPolicy::kNextUse, EvictionPolicy::kLru}) {
    access_.cache_dir = cache_.path() + "/half-" + std::to_string(static_cast<int>(policy));
    access_.cache_gb = static_cast<double>(chunks / 2) / 1e9;
    access_.cache_policy = policy;
    LoaderOptions o;
    o.workers = 2;
    o.batch_size = 20;
    o.shuffle_window = 3;
    LoaderCore loader(open(spec).value_or_throw(), o);
    for (int64_t e = 0; e < 4; ++e) {
      if (e == 1) fetched();  // epoch 0's
      LoaderCore::Epoch epoch = loader.epoch(e);
      for (HostBatch batch; epoch.next(batch);) {
      }
    }
    over_floor[policy] = double(fetched()) / double(3 * (chunks - chunks / 2));
    RecordProperty("epochs_1_3_" + std::to_string(static_cast<int>(policy)),
                   std::to_string(over_floor[policy]));
  }
  // (A little under the floor may be: row groups the loader keeps in memory across an epoch's
  // end are not read again. Without read-ahead a fixed choice of victims comes near the floor
  // too; the tars' threaded test is the one that tells the plan apart.)
  EXPECT_LE(over_floor[EvictionPolicy::kNextUse], 1.05);
  EXPECT_GE(over_floor[EvictionPolicy::kNextUse], 0.9);
  EXPECT_GE(over_floor[EvictionPolicy::kLru], 1.3);
}

// A server that answers the footer's ranges as it should and a row group's with `bad`.
class HostileParquetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_images_and_parquet(tmp_ / "img", tmp_ / "t.parquet");
    file_ = tar_fixtures::file_bytes(tmp_ / "t.parquet");
    ::setenv("STOKER_RETRY_SECONDS", "0", 1);  // one attempt
  }
  void TearDown() override { ::unsetenv("STOKER_RETRY_SECONDS"); }

  // The one-line error of reading row group 0 from a server answering its ranges with `bad`
  // (the range's first and last byte), the footer's as asked.
  Status read_first_group(const std::function<std::string(uint64_t first, uint64_t last)>& bad) {
    const uint64_t size = file_.size();
    const std::string headers = "ETag: \"v1\"\r\nConnection: close\r\n";
    testing::HostileHttpServer server([&](const testing::HostileRequest& r) {
      if (r.line.rfind("HEAD ", 0) == 0)
        return testing::HostileResponse{"HTTP/1.1 200 OK\r\nContent-Length: " +
                                        std::to_string(size) + "\r\n" + headers + "\r\n"};
      uint64_t first = 0, last = 0;
      const size_t at = r.head.find("Range: bytes=");
      if (at == std::string::npos ||
          std::sscanf(r.head.c_str() + at, "Range: bytes=%lu-%lu", &first, &last) != 2)
        return testing::HostileResponse{testing::http_response("400 Bad Request", "", "")};
      if (last + 1 < size - 8 && first < size / 2)
        return testing::HostileResponse{bad(first, last)};
      return testing::HostileResponse{testing::http_response(
          "206 Partial Content",
          "ETag: \"v1\"\r\nContent-Range: bytes " + std::to_string(first) + "-" +
              std::to_string(last) + "/" + std::to_string(size) + "\r\n",
          file_.substr(first, last - first + 1))};
    });
    DataAccessOptions access;
    access.cache_dir = tmp_ / "cache";
    url_ = server.url() + "/t.parquet";
    auto dataset = open_dataset(url_, access, kShardByShard, "parquet");
    if (!dataset.is_ok()) return dataset.status();
    const int64_t first = 0;
    return dataset.value()->pin(&first, 1, nullptr).status();
  }
  // The range [first, last] sent as a 206 whose Content-Range gives the object's size as `total`.
  std::string partial(uint64_t first, uint64_t last, uint64_t total, size_t bytes) {
    return testing::http_response("206 Partial Content",
                                  "ETag: \"v1\"\r\nContent-Range: bytes " + std::to_string(first) +
                                      "-" + std::to_string(last) + "/" + std::to_string(total) +
                                      "\r\n",
                                  file_.substr(first, bytes));
  }
  void expect_one_line(const Status& status, const std::string& why) {
    EXPECT_FALSE(status.is_ok());
    EXPECT_EQ(status.message().rfind(url_ + ": row group 0: ", 0), 0u) << status.message();
    EXPECT_NE(status.message().find(why), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  }

  testing::TempDir tmp_;
  std::string file_;
  std::string url_;
};

TEST_F(HostileParquetTest, TheWholeFileForARangeIsOneLine) {
  const Status status = read_first_group([&](uint64_t, uint64_t) {
    return testing::http_response("200 OK", "ETag: \"v1\"\r\n", file_);
  });
  expect_one_line(status, "status 200, not 206");
}

TEST_F(HostileParquetTest, ARangeCutShortIsOneLine) {
  const Status status = read_first_group([&](uint64_t first, uint64_t last) {
    return partial(first, first + (last - first) / 2, file_.size(), (last - first) / 2 + 1);
  });
  expect_one_line(status, "");
}

TEST_F(HostileParquetTest, AnotherSizeThanListedIsOneLine) {
  const Status status = read_first_group([&](uint64_t first, uint64_t last) {
    return partial(first, last, file_.size() + 1, last - first + 1);
  });
  expect_one_line(status, "gives its size as");
}

}  // namespace
}  // namespace stoker::remote
