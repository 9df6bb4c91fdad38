// WebDatasetSource: tars written by Python's tarfile read in place, records in the image
// layout and their other members as fields; bad samples and a changed tar named by tar and
// member.
#include "stoker/store/import/webdataset_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "stoker/store/dataset.h"
#include "stoker/store/image_record.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/tar_fixtures.h"
#include "stoker/testing/test_images.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

std::string wds_test_jpeg(int width, int height) {
  image::testing::JpegSpec spec;
  spec.width = width;
  spec.height = height;
  const std::vector<uint8_t> bytes = image::testing::encode_jpeg(spec);
  return std::string(bytes.begin(), bytes.end());
}

int64_t wds_test_scalar(const Dataset& dataset, uint64_t i, int field) {
  int64_t v;
  std::memcpy(&v, fixed_field(dataset.schema(), dataset.record(i), field), sizeof v);
  return v;
}

TEST(WebDatasetSource, RecordsAreTheTarsSamplesInTheImageLayout) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "tars");
  const std::string a = wds_test_jpeg(20, 10), b = wds_test_jpeg(8, 24), c = wds_test_jpeg(5, 6);
  tar_fixtures::write_tar(
      tmp / "tars/d-01.tar",
      {{"x/0.jpg", a}, {"x/0.cls", " 3\n"}, {"x/1.cls", "-2"}, {"x/1.jpeg", b}});
  // A member only some samples hold (y/2.txt) is no field, so no sample lacks it.
  tar_fixtures::write_tar(
      tmp / "tars/d-02.tar",
      {{"y/2.png", "not read"}, {"y/2.jpg", c}, {"y/2.cls", "+7"}, {"y/2.txt", "a caption"}});
  for (const std::string& spec : {tmp / "tars", tmp / "tars/d-{01..02}.tar",
                                  tmp / "tars/d-01.tar\n" + tmp / "tars/d-02.tar"}) {
    auto source = WebDatasetSource::open(spec, {}).value_or_throw();
    ASSERT_EQ(source->manifest().shards.size(), 2u) << spec;  // a unit a tar, by default
    EXPECT_EQ(source->manifest().shards[1].file, tmp / "tars/d-02.tar");
    EXPECT_EQ(source->manifest().shards[0].records, 2u);
    EXPECT_NE(source->describe().find("fields none; left out: txt (in 1 of 3 samples)"),
              std::string::npos)
        << source->describe();
    auto dataset = Dataset::open(source).value_or_throw();
    EXPECT_EQ(dataset->schema().find("txt"), -1);
    const ImageRecordFields fields = ImageRecordFields::find(dataset->schema()).value_or_throw();
    const std::string images[] = {a, b, c};
    const int64_t labels[] = {3, -2, 7}, widths[] = {20, 8, 5}, heights[] = {10, 24, 6};
    int visited = 0;
    throw_if_error(dataset->for_each_record([&](uint64_t i) -> Status {
      const ByteSpan image =
          variable_field(dataset->schema(), dataset->record(i), fields.image).value_or_throw();
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(image.data), image.size), images[i]);
      EXPECT_EQ(wds_test_scalar(*dataset, i, fields.label), labels[i]);
      EXPECT_EQ(wds_test_scalar(*dataset, i, fields.width), widths[i]);
      EXPECT_EQ(wds_test_scalar(*dataset, i, fields.height), heights[i]);
      EXPECT_EQ(static_cast<uint64_t>(wds_test_scalar(*dataset, i, fields.original_checksum)),
                xxh3_64(images[i].data(), images[i].size()));
      ++visited;
      return Status::ok();
    }));
    EXPECT_EQ(visited, 3);
  }
}

// Field `name` of record i of `dataset`: a bytes or variable-length field's payload, else the
// fixed field's bytes.
std::string wds_test_field(const Dataset& dataset, uint64_t i, const std::string& name) {
  const Schema& schema = dataset.schema();
  const int field = schema.find(name);
  EXPECT_GE(field, 0) << name;
  if (schema.fields()[field].is_fixed())
    return std::string(reinterpret_cast<const char*>(fixed_field(schema, dataset.record(i), field)),
                       schema.fields()[field].fixed_bytes());
  const ByteSpan v = variable_field(schema, dataset.record(i), field).value_or_throw();
  return std::string(reinterpret_cast<const char*>(v.data), v.size);
}

// The last `n` bytes of `bytes`: a .npy file's data.
std::string wds_test_tail(const std::string& bytes, size_t n) {
  return bytes.substr(bytes.size() - n);
}

TEST(WebDatasetSource, OtherMembersAreFieldsNamedByTheirExtension) {
  testing::TempDir tmp;
  const std::string jpeg = wds_test_jpeg(4, 4);
  const std::string grid[] = {tar_fixtures::npy_file("np.arange(6, dtype='<f4').reshape(2, 3)"),
                              tar_fixtures::npy_file("-np.arange(6, dtype='<f4').reshape(2, 3)")};
  const std::string rows[] = {tar_fixtures::npy_file("np.array([[1, 2]], dtype='<i8')"),
                              tar_fixtures::npy_file("np.array([[3, 4], [5, 6], [7, 8]])")};
  const std::string wide[] = {tar_fixtures::npy_file("np.zeros(2)"),  // float64: bytes
                              tar_fixtures::npy_file("np.ones(3)")};
  const std::string scalar = tar_fixtures::npy_file("np.uint8(9)");
  std::vector<tar_fixtures::Member> members;
  for (int i = 0; i < 2; ++i) {
    const std::string key = "k" + std::to_string(i);
    for (const tar_fixtures::Member& m :
         std::vector<tar_fixtures::Member>{{key + ".jpg", jpeg},
                                           {key + ".cls", std::to_string(i)},
                                           {key + ".json", "{\"i\": " + std::to_string(i) + "}"},
                                           {key + ".TXT", "caption " + std::to_string(i)},
                                           {key + ".npy", grid[i]},
                                           {key + ".rows.npy", rows[i]},
                                           {key + ".wide.npy", wide[i]},
                                           {key + ".one.npy", scalar},
                                           {key + ".height", "a name the image layout has"}})
      members.push_back(m);
  }
  tar_fixtures::write_tar(tmp / "t.tar", members);
  WebDatasetSourceOptions options;
  options.index_cache_dir = tmp / "cache";
  for (int open = 0; open < 2; ++open) {  // the index built, then read from the cache
    auto source = WebDatasetSource::open(tmp / "t.tar", options).value_or_throw();
    const Schema& schema = source->manifest().schema;
    const std::vector<Field> want = {
        {"json", DType::kBytes},        {"npy", DType::kFloat32, {2, 3}},
        {"one.npy", DType::kUint8, {}}, {"rows.npy", DType::kInt64, {2}, "N_rows.npy"},
        {"txt", DType::kBytes},         {"wide.npy", DType::kBytes}};
    ASSERT_EQ(schema.fields().size(), 6 + want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(schema.fields()[6 + k], want[k]) << k;
    EXPECT_EQ(source->manifest().max_lengths, (std::map<std::string, uint64_t>{{"rows.npy", 3}}));
    EXPECT_NE(source->describe().find(
                  "label cls, fields json, npy, one.npy, rows.npy, txt, wide.npy; left out: "
                  "height (schema field 'height' repeats)"),
              std::string::npos)
        << source->describe();
    auto dataset = Dataset::open(source).value_or_throw();
    const int64_t all[] = {0, 1};
    ShardPins pins = dataset->pin(all, 2, nullptr).value_or_throw();
    for (uint64_t i = 0; i < 2; ++i) {
      const std::string n = std::to_string(i);
      EXPECT_EQ(wds_test_field(*dataset, i, "json"), "{\"i\": " + n + "}");
      EXPECT_EQ(wds_test_field(*dataset, i, "txt"), "caption " + n);
      EXPECT_EQ(wds_test_field(*dataset, i, "npy"), wds_test_tail(grid[i], 24));
      EXPECT_EQ(wds_test_field(*dataset, i, "rows.npy"), wds_test_tail(rows[i], 16 * (1 + 2 * i)));
      EXPECT_EQ(wds_test_field(*dataset, i, "wide.npy"), wide[i]);
      EXPECT_EQ(wds_test_field(*dataset, i, "one.npy"), "\x09");
      EXPECT_EQ(wds_test_scalar(*dataset, i, schema.find("label")), static_cast<int64_t>(i));
    }
  }
}

TEST(WebDatasetSource, TheLabelIsTheFirstLabelFieldTheSamplesHold) {
  testing::TempDir tmp;
  const std::string jpeg = wds_test_jpeg(4, 4);
  struct Case {
    std::vector<std::pair<std::string, std::string>> fields;  // besides the image
    std::string described;                                    // its label and fields
  };
  const Case cases[] = {
      {{{"cls", "5"}, {"label", "6"}, {"txt", "7"}}, "label cls, fields txt; left out: label"},
      {{{"label", "5"}, {"class", "6"}}, "label label, fields class,"},
      {{{"class", "5"}, {"txt", "a caption"}}, "label class, fields txt,"},
      {{{"txt", " 5\n"}, {"json", "{}"}}, "label txt, fields json,"}};
  for (const Case& c : cases) {
    std::vector<tar_fixtures::Member> members = {{"a.jpg", jpeg}};
    for (const auto& [field, bytes] : c.fields) members.push_back({"a." + field, bytes});
    tar_fixtures::write_tar(tmp / "t.tar", members);
    auto source = WebDatasetSource::open(tmp / "t.tar", {}).value_or_throw();
    EXPECT_NE(source->describe().find(c.described), std::string::npos) << source->describe();
    auto dataset = Dataset::open(source).value_or_throw();
    const int64_t first = 0;
    ShardPins pins = dataset->pin(&first, 1, nullptr).value_or_throw();
    EXPECT_EQ(wds_test_scalar(*dataset, 0, dataset->schema().find("label")), 5);
  }
}

TEST(WebDatasetSource, ALabelNamedOrNoneAndCaptionsEverySampleMustHold) {
  testing::TempDir tmp;
  const std::string jpeg = wds_test_jpeg(4, 4);
  tar_fixtures::write_tar(
      tmp / "t.tar",
      {{"a.jpg", jpeg}, {"a.txt", "a caption"}, {"a.cls", "3"}, {"b.jpg", jpeg}, {"b.cls", "4"}});
  WebDatasetSourceOptions options;
  options.label = "none";
  options.required = {"txt"};
  auto source = WebDatasetSource::open(tmp / "t.tar", options).value_or_throw();
  EXPECT_NE(source->describe().find("label none, fields cls, txt"), std::string::npos)
      << source->describe();
  auto dataset = Dataset::open(source).value_or_throw();
  const int64_t first = 0;
  ShardPins pins = dataset->pin(&first, 1, nullptr).value_or_throw();
  EXPECT_EQ(wds_test_scalar(*dataset, 0, dataset->schema().find("label")), -1);
  EXPECT_EQ(dataset->record_error(1, corrupt("x")).message(),
            tmp / "t.tar" + ": sample b: no txt (dataset record 1)");
  // Without `required`, the caption only one sample holds is left out; a label named is read.
  options = WebDatasetSourceOptions();
  options.label = "cls";
  source = WebDatasetSource::open(tmp / "t.tar", options).value_or_throw();
  EXPECT_NE(source->describe().find("label cls, fields none; left out: txt (in 1 of 2"),
            std::string::npos)
      << source->describe();
}

// The message record_error gives record `i` of the one-tar dataset `tar`.
std::string wds_test_error(const std::string& tar, int64_t i) {
  auto dataset = Dataset::open(WebDatasetSource::open(tar, {}).value_or_throw()).value_or_throw();
  ShardPins pins = dataset->pin(&i, 1, nullptr).value_or_throw();
  return dataset->record_error(static_cast<uint64_t>(i), corrupt("the transform's")).message();
}

TEST(WebDatasetSource, BadSamplesAreNamedByTarAndMember) {
  testing::TempDir tmp;
  const std::string tar = tmp / "t.tar";
  const std::string jpeg = wds_test_jpeg(4, 4);
  tar_fixtures::write_tar(tar, {{"a.jpg", jpeg},
                                {"a.cls", "1"},   // good
                                {"b.jpg", jpeg},  // no label
                                {"c.cls", "2"},   // no image
                                {"d.jpg", jpeg},
                                {"d.cls", "two"},  // a bad label
                                {"e.jpg", "not a jpeg"},
                                {"e.cls", "0"},     // a bad image
                                {"nokey", "x"},     // no key
                                {"a.png", jpeg}});  // a duplicate key
  EXPECT_EQ(wds_test_error(tar, 0), tar + ": member a.jpg: the transform's (dataset record 0)");
  EXPECT_EQ(wds_test_error(tar, 1), tar + ": sample b: no label (cls) (dataset record 1)");
  EXPECT_EQ(wds_test_error(tar, 2),
            tar + ": sample c: no image (jpg, jpeg, png or webp) (dataset record 2)");
  EXPECT_EQ(wds_test_error(tar, 3),
            tar + ": member d.cls: not an integer label (dataset record 3)");
  EXPECT_NE(wds_test_error(tar, 4).find(tar + ": member e.jpg: "), std::string::npos);
  EXPECT_EQ(wds_test_error(tar, 5), tar + ": member nokey: its name has no key (dataset record 5)");
  EXPECT_EQ(wds_test_error(tar, 6),
            tar + ": member a.png: key a again (a duplicate key) (dataset record 6)");

  // A truncated tar: its samples before the cut stand, the cut is a record of its own.
  const std::string whole = tar_fixtures::file_bytes(tar);
  ASSERT_TRUE(write_file_atomically(tar, whole.substr(0, 512 + jpeg.size() / 2)).is_ok());
  auto cut = WebDatasetSource::open(tar, {}).value_or_throw();
  EXPECT_EQ(cut->manifest().records, 1u);
  EXPECT_EQ(wds_test_error(tar, 0), tar + ": member a.jpg: cut short: its " +
                                        std::to_string(jpeg.size()) +
                                        " bytes run past the tar's end (dataset record 0)");
  // Not a tar at all: one bad record; a tar that is not there: the open's error.
  ASSERT_TRUE(write_file_atomically(tar, std::string(1000, 'z')).is_ok());
  EXPECT_EQ(wds_test_error(tar, 0),
            tar + ": not a tar: no tar header at its start (dataset record 0)");
  EXPECT_EQ(WebDatasetSource::open(tmp / "gone.tar", {}).status().message(),
            tmp / "gone.tar" + ": no such tar");
}

// Tars where no sample has an image (videos): records of the label and the other members.
TEST(WebDatasetSource, TarsWithoutImagesAreRecordsOfTheLabelAndTheirMembers) {
  testing::TempDir tmp;
  const std::string tar = tmp / "v.tar";
  tar_fixtures::write_tar(tar, {{"a.mp4", "video a"},
                                {"a.cls", "4"},
                                {"b.mp4", "video b!"},
                                {"b.cls", "5"},
                                {"c.mp4", "no label"}});
  auto source = WebDatasetSource::open(tar, {}).value_or_throw();
  auto dataset = Dataset::open(source).value_or_throw();
  const Schema& schema = dataset->schema();
  ASSERT_EQ(schema.fields().size(), 2u);
  EXPECT_EQ(schema.find("image"), -1);
  const int label = schema.find("label"), mp4 = schema.find("mp4");
  ASSERT_EQ(label, 0);
  ASSERT_GE(mp4, 0);
  const std::string videos[] = {"video a", "video b!"};
  int visited = 0;
  throw_if_error(dataset->for_each_record([&](uint64_t i) -> Status {
    if (i == 2) return Status::ok();  // the bad record
    EXPECT_EQ(wds_test_scalar(*dataset, i, label), 4 + static_cast<int64_t>(i));
    EXPECT_EQ(wds_test_field(*dataset, i, "mp4"), videos[i]);
    ++visited;
    return Status::ok();
  }));
  EXPECT_EQ(visited, 2);
  EXPECT_EQ(wds_test_error(tar, 2), tar + ": sample c: no label (cls) (dataset record 2)");
}

TEST(WebDatasetSource, ATarChangedAfterItsIndexIsCaught) {
  testing::TempDir tmp;
  const std::string tar = tmp / "t.tar";
  const std::string jpeg = wds_test_jpeg(4, 4);
  tar_fixtures::write_tar(tar, {{"a.jpg", jpeg}, {"a.cls", "1"}, {"b.jpg", jpeg}, {"b.cls", "0"}});
  WebDatasetSourceOptions options;
  options.index_cache_dir = tmp / "cache";
  auto dataset =
      Dataset::open(WebDatasetSource::open(tar, options).value_or_throw()).value_or_throw();
  // Rewritten (another size) after the open: every sample is bad.
  tar_fixtures::write_tar(tar, {{"a.jpg", jpeg + "x"}, {"a.cls", "1"}});
  const int64_t both[] = {0, 1};
  ShardPins pins = dataset->pin(both, 2, nullptr).value_or_throw();
  for (const uint64_t record : {0, 1})
    EXPECT_EQ(dataset->record_error(record, corrupt("x")).message(),
              tar + fmt::format(": changed after its index was built (dataset record {})", record));
}

TEST(WebDatasetSource, AMemberNotOfItsFieldsArrayIsABadRecord) {
  testing::TempDir tmp;
  const std::string tar = tmp / "t.tar";
  const std::string jpeg = wds_test_jpeg(4, 4);
  const std::string good = tar_fixtures::npy_file("np.arange(6, dtype='<f4').reshape(2, 3)");
  std::string cut_header = good.substr(0, 40);
  std::string huge = good;  // its shape says more than its bytes hold
  huge.replace(huge.find("(2, 3)"), 6, "(9999999999, 3)");
  huge.erase(huge.find('\n') - 9, 9);
  std::string wrong_length = good + "xx";
  std::vector<tar_fixtures::Member> members;
  const std::pair<std::string, std::string> samples[] = {
      {"a", good},
      {"b", good},
      {"c", tar_fixtures::npy_file("np.zeros((2, 3))")},
      {"d", tar_fixtures::npy_file("np.zeros((2, 4), dtype='<f4')")},
      {"e", cut_header},
      {"f", huge},
      {"g", wrong_length},
      {"h", good}};
  for (const auto& [key, npy] : samples) {
    members.push_back({key + ".jpg", jpeg});
    members.push_back({key + ".cls", "1"});
    members.push_back({key + ".npy", npy});
    if (key != "h") members.push_back({key + ".json", "{}"});  // no field: h lacks it
  }
  tar_fixtures::write_tar(tar, members);
  EXPECT_NE(WebDatasetSource::open(tar, {}).value_or_throw()->describe().find(
                "fields npy; left out: json (in 7 of 8 samples)"),
            std::string::npos);
  const std::string why[] = {
      "member a.jpg: the transform's",
      "member b.jpg: the transform's",
      "member c.npy: field npy: dtype '<f8', not float32",
      "member d.npy: field npy: shape (2, 4), not (2, 3)",
      "member e.npy: field npy: not a .npy array stoker reads: cut short in its header",
      "member f.npy: field npy: shape (9999999999, 3), not (2, 3)",
      "member g.npy: field npy: 26 bytes of data where its shape (2, 3) takes 24",
      "member h.jpg: the transform's"};
  for (int64_t i = 0; i < static_cast<int64_t>(std::size(why)); ++i)
    EXPECT_EQ(wds_test_error(tar, i), fmt::format("{}: {} (dataset record {})", tar, why[i], i));
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// Units are runs of samples_per_unit samples of one tar (0: the tar); whatever the run, the
// records are the same, and errors name the right tar and member.
TEST(WebDatasetSource, UnitsAreRunsOfOneTarsSamples) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "tars");
  std::vector<std::string> images;
  for (int t = 0; t < 2; ++t) {
    std::vector<tar_fixtures::Member> members;
    for (int s = 0; s < 5; ++s) {
      images.push_back(wds_test_jpeg(8, 8));
      members.push_back({fmt::format("k{}/{}.jpg", t, s), images.back()});
      members.push_back({fmt::format("k{}/{}.cls", t, s), std::to_string(10 * t + s)});
    }
    tar_fixtures::write_tar(tmp / fmt::format("tars/d-{}.tar", t), members);
  }
  const auto records_of = [](const Dataset& dataset) {
    std::vector<std::string> records;
    throw_if_error(dataset.for_each_record([&](uint64_t i) -> Status {
      const ByteSpan r = dataset.record(i);
      records.emplace_back(reinterpret_cast<const char*>(r.data), r.size);
      return Status::ok();
    }));
    return records;
  };
  WebDatasetSourceOptions whole;
  whole.samples_per_unit = 0;
  const auto want =
      records_of(*Dataset::open(WebDatasetSource::open(tmp / "tars", whole).value_or_throw())
                      .value_or_throw());
  ASSERT_EQ(want.size(), 10u);
  for (const int run : {0, 1, 2, 1000}) {
    SCOPED_TRACE(run);
    WebDatasetSourceOptions options;
    options.samples_per_unit = run;
    auto source = WebDatasetSource::open(tmp / "tars", options).value_or_throw();
    const std::vector<ShardInfo>& units = source->manifest().shards;
    const size_t per_tar = run == 0 || run > 5 ? 1 : run == 1 ? 5 : 3;
    ASSERT_EQ(units.size(), 2 * per_tar);
    uint64_t records = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      EXPECT_EQ(units[u].file, tmp / fmt::format("tars/d-{}.tar", u / per_tar));
      EXPECT_EQ(units[u].records, per_tar == 1 ? 5u : per_tar == 5 ? 1u : u % 3 == 2 ? 1u : 2u);
      records += units[u].records;
    }
    EXPECT_EQ(records, 10u);
    auto dataset = Dataset::open(source).value_or_throw();
    EXPECT_EQ(records_of(*dataset), want);
    // Record 8 is tar 1's sample 3: the message names its tar and member.
    const int unit = static_cast<int>(per_tar == 1 ? 1 : per_tar == 5 ? 8 : 4);
    const uint64_t in_unit = per_tar == 1 ? 3 : per_tar == 5 ? 0 : 1;
    EXPECT_EQ(source->record_error(unit, in_unit, 8, Status(StatusCode::kCorrupt, "bad")).message(),
              tmp / "tars/d-1.tar" + ": member k1/3.jpg: bad (dataset record 8)");
  }
}

}  // namespace
}  // namespace stoker
