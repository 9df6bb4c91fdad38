// TokenSource: nanoGPT's .bin, .npy and Megatron-LM's indexed datasets, written byte by byte as
// numpy and Megatron-LM write them, read in place as shifted input_ids/labels samples; bad
// files (wrong sizes, corrupt indexes, bad token ids, files changed) refused in one line naming
// the file.
#include "stoker/store/import/token_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <thread>

#include "stoker/store/dataset.h"
#include "stoker/store/import/token_scan.h"
#include "stoker/store/record_view.h"
#include "stoker/testing/megatron_bytes.h"
#include "stoker/testing/npy_bytes.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

template <typename T>
std::string token_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Sample i's field `field` (0: input_ids, 1: labels), its shard pinned while read: its record's
// bytes, and where its unit is views of the file (ShardReader::viewed), the same as the loader's
// copy widens from them.
std::vector<int64_t> sample_field(const Dataset& dataset, uint64_t i, int field) {
  const auto index = static_cast<int64_t>(i);
  ShardPins pins = dataset.pin(&index, 1, nullptr).value_or_throw();
  const int64_t length = dataset.schema().fields()[field].shape[0];
  std::vector<int64_t> out(static_cast<size_t>(length));
  std::memcpy(out.data(), fixed_field(dataset.schema(), dataset.record(i), field),
              out.size() * sizeof(int64_t));
  const Dataset::Location at = dataset.locate(i);
  if (const RecordViews* views = dataset.shard(at.shard).views()) {
    std::vector<int64_t> copied(out.size(), -1);
    views->write(at.record, field, copied.size(), reinterpret_cast<uint8_t*>(copied.data()));
    EXPECT_EQ(copied, out) << "sample " << i << ", field " << field;
  }
  return out;
}

// Whether sample i's unit is views of the file (else records built in memory).
bool viewed(const Dataset& dataset, uint64_t i) {
  const auto index = static_cast<int64_t>(i);
  ShardPins pins = dataset.pin(&index, 1, nullptr).value_or_throw();
  return dataset.shard(dataset.locate(i).shard).views() != nullptr;
}

// Tokens [from, from + n) of `tokens`, widened.
template <typename T>
std::vector<int64_t> slice(const std::vector<T>& tokens, size_t from, size_t n) {
  return std::vector<int64_t>(tokens.begin() + static_cast<ptrdiff_t>(from),
                              tokens.begin() + static_cast<ptrdiff_t>(from + n));
}

std::shared_ptr<const Dataset> open_tokens(const std::string& path, int64_t seq_len,
                                           TokenType raw = TokenType::kUint16) {
  TokenSourceOptions options;
  options.seq_len = seq_len;
  options.raw_type = raw;
  return Dataset::open(TokenSource::open(path, options).value_or_throw()).value_or_throw();
}

std::string open_error(const std::string& path, int64_t seq_len = 4) {
  TokenSourceOptions options;
  options.seq_len = seq_len;
  Result<std::shared_ptr<TokenSource>> source = TokenSource::open(path, options);
  return source.is_ok() ? "opened" : source.status().message();
}

TEST(TokenSource, NanoGptBinSamplesAreShiftedSlices) {
  testing::TempDir tmp;
  std::vector<uint16_t> tokens(14);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(60000 - 997 * i);
  write_bytes(tmp / "train.bin", token_bytes(tokens));
  auto dataset = open_tokens(tmp / "train.bin", 4);
  ASSERT_EQ(dataset->size(), 3u);  // floor((14 - 1) / 4): tokens 12 and 13 only as labels or not
  EXPECT_TRUE(viewed(*dataset, 0));
  EXPECT_EQ(dataset->schema().fields()[0].name, "input_ids");
  EXPECT_EQ(dataset->schema().fields()[1].name, "labels");
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sample_field(*dataset, i, 0), slice(tokens, 4 * i, 4)) << i;
    EXPECT_EQ(sample_field(*dataset, i, 1), slice(tokens, 4 * i + 1, 4)) << i;
  }
  EXPECT_NE(dataset->describe().find("nanoGPT .bin: 14 uint16 tokens, 3 samples of seq_len 4"),
            std::string::npos)
      << dataset->describe();
  // The same bytes as uint32 tokens: 7 of them, pairs of the uint16s.
  auto wide = open_tokens(tmp / "train.bin", 2, TokenType::kUint32);
  ASSERT_EQ(wide->size(), 3u);
  EXPECT_EQ(sample_field(*wide, 1, 1)[1], int64_t{tokens[8]} | (int64_t{tokens[9]} << 16));
}

// Writes `path`: uint32 tokens counting from `first`, `halves` / 2 units' worth of samples of
// `length` tokens; returns them.
std::vector<uint32_t> write_counting_units(const std::string& path, int64_t length, int64_t halves,
                                           uint32_t first) {
  const int64_t per_unit = TokenSource::kUnitTokens / length;
  std::vector<uint32_t> tokens(static_cast<size_t>(per_unit * length * halves / 2));
  std::iota(tokens.begin(), tokens.end(), first);
  write_bytes(path, token_bytes(tokens));
  return tokens;
}

TEST(TokenSource, UnitsSplitTheSamplesAndReadOnlyTheirTokens) {
  testing::TempDir tmp;
  const int64_t length = 1000;
  const int64_t per_unit = TokenSource::kUnitTokens / length;
  const std::vector<uint32_t> tokens = write_counting_units(tmp / "t.bin", length, 3, 100000u);
  auto dataset = open_tokens(tmp / "t.bin", length, TokenType::kUint32);
  ASSERT_EQ(dataset->num_shards(), 2);
  EXPECT_EQ(dataset->shard_starts()[1], static_cast<uint64_t>(per_unit));
  EXPECT_EQ(dataset->size(), (tokens.size() - 1) / length);
  // The last sample of the first unit and the first of the second: each sample's labels reach
  // one token into the next sample's.
  for (uint64_t i : {static_cast<uint64_t>(per_unit - 1), static_cast<uint64_t>(per_unit),
                     dataset->size() - 1}) {
    EXPECT_EQ(sample_field(*dataset, i, 0), slice(tokens, i * length, length)) << i;
    EXPECT_EQ(sample_field(*dataset, i, 1), slice(tokens, i * length + 1, length)) << i;
  }
}

TEST(TokenSource, NpyArraysOfEachIntegerType) {
  testing::TempDir tmp;
  const std::vector<int64_t> tokens{5, 0, 70000, 3, 9, 2, 11};
  write_bytes(tmp / "a.npy",
              testing::npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (7,), }",
                                 token_bytes(tokens)));
  auto dataset = open_tokens(tmp / "a.npy", 3);
  ASSERT_EQ(dataset->size(), 2u);
  EXPECT_EQ(sample_field(*dataset, 1, 0), slice(tokens, 3, 3));
  EXPECT_EQ(sample_field(*dataset, 1, 1), slice(tokens, 4, 3));
  const std::vector<uint16_t> small{1, 2, 3, 4, 5};
  write_bytes(tmp / "b.npy",
              testing::npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (5,), }",
                                 token_bytes(small), 2));
  EXPECT_EQ(sample_field(*open_tokens(tmp / "b.npy", 2), 1, 1), slice(small, 3, 2));
  EXPECT_TRUE(TokenSource::recognises(tmp / "a.npy"));
}

TEST(TokenSource, BadNpyFilesAreRefusedNamingTheFile) {
  testing::TempDir tmp;
  const std::string path = tmp / "x.npy";
  const auto refused = [&](const std::string& dict, const std::string& data) {
    write_bytes(path, testing::npy_bytes(dict, data));
    EXPECT_FALSE(TokenSource::recognises(path)) << dict;
    return open_error(path, 1);
  };
  EXPECT_EQ(refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "abcdefgh"),
            path + ": an array of '<f4', not of integer token ids (uint8 to int64)");
  EXPECT_EQ(
      refused("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", std::string(16, 'a')),
      path + ": an array of 2 dimensions, not 1 (a flat array of tokens)");
  EXPECT_EQ(refused("{'descr': '<i4', 'fortran_order': False, 'shape': (9,), }", "abcd"),
            path + ": 9 tokens of 4 bytes after a 128-byte header, but the file has 132 bytes");
  write_bytes(path, "\x93NUMPY\x01");
  EXPECT_EQ(open_error(path).rfind(path + ": ", 0), 0u) << open_error(path);
}

TEST(TokenSource, BadTokenIdsFailTheirUnitNamingTheSample) {
  testing::TempDir tmp;
  std::vector<int32_t> tokens(20, 7);
  tokens[13] = -3;
  write_bytes(tmp / "n.npy",
              testing::npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (20,), }",
                                 token_bytes(tokens)));
  auto dataset = open_tokens(tmp / "n.npy", 4);
  const int64_t zero = 0;
  Result<ShardPins> pins = dataset->pin(&zero, 1, nullptr);
  ASSERT_FALSE(pins.is_ok());
  EXPECT_EQ(pins.status().message(),
            tmp / "n.npy" + ": sample 3: token 13 is -3, not a token id (0 to 2^63 - 1)");
  std::vector<uint64_t> huge(9, 1);
  huge[8] = uint64_t{1} << 63;  // only sample 1's last label
  write_bytes(tmp / "u.npy",
              testing::npy_bytes("{'descr': '<u8', 'fortran_order': False, 'shape': (9,), }",
                                 token_bytes(huge)));
  EXPECT_EQ(open_tokens(tmp / "u.npy", 4)->pin(&zero, 1, nullptr).status().message(),
            tmp / "u.npy" +
                ": sample 1: token 8 is 9223372036854775808, not a token id (0 to "
                "2^63 - 1)");
}

TEST(TokenSource, BadFilesAndParametersAreOneLineErrors) {
  testing::TempDir tmp;
  write_bytes(tmp / "odd.bin", "abc");
  EXPECT_EQ(open_error(tmp / "odd.bin"),
            tmp / "odd.bin" + ": 3 bytes, not a whole number of uint16 tokens (2 bytes each)");
  write_bytes(tmp / "short.bin", std::string(8, 'a'));
  EXPECT_EQ(open_error(tmp / "short.bin"),
            tmp / "short.bin" + ": 4 tokens, fewer than seq_len + 1 (5): no sample");
  EXPECT_EQ(open_error(tmp / "short.bin", 0),
            tmp / "short.bin" + ": seq_len 0, not in [1, 4194304]");
  EXPECT_EQ(open_error(tmp / "missing.bin").rfind(tmp / "missing.bin: no such token file", 0), 0u);
  // A path that names something other than a file says what it names (never read: a FIFO
  // would block), as does PREFIX.bin beside its .idx.
  ASSERT_EQ(::mkfifo((tmp / "pipe.bin").c_str(), 0600), 0);
  EXPECT_EQ(open_error(tmp / "pipe.bin"), tmp / "pipe.bin: not a regular file (a FIFO)");
  std::filesystem::create_directory(tmp / "folder.npy");
  EXPECT_EQ(open_error(tmp / "folder.npy"), tmp / "folder.npy: not a regular file (a directory)");
  std::filesystem::create_directory(tmp / "docs.bin");
  write_bytes(tmp / "docs.idx", "MMIDIDX");
  EXPECT_EQ(open_error(tmp / "docs"), tmp / "docs.bin: not a regular file (a directory)");
  EXPECT_FALSE(TokenSource::recognises(tmp / "short.bin"));  // a headerless .bin: only by name
}

TEST(TokenSource, AFileChangedSinceOpenFailsItsUnit) {
  testing::TempDir tmp;
  write_bytes(tmp / "c.bin", std::string(40, 'a'));
  auto dataset = open_tokens(tmp / "c.bin", 4);
  write_bytes(tmp / "c.bin", std::string(42, 'a'));
  const int64_t zero = 0;
  EXPECT_EQ(dataset->pin(&zero, 1, nullptr).status().message(),
            tmp / "c.bin" + ": changed since it was opened (its size or time)");
}

// Megatron's dataset `prefix` of three sequences stored out of order (the second first in the
// .bin) and an empty fourth: the array 10 11 12 13 | 20 21 22 30 31, not one run of the .bin; a
// document of the first sequence, one of the next two, an empty one.
void write_out_of_order_megatron(const std::string& prefix) {
  const std::vector<uint16_t> bin{20, 21, 22, 10, 11, 12, 13, 30, 31};
  write_bytes(prefix + ".bin", token_bytes(bin));
  write_bytes(prefix + ".idx",
              testing::megatron_index_bytes(8, {4, 3, 2, 0}, {6, 0, 14, 18}, {0, 1, 3, 4}));
}

TEST(TokenSource, MegatronSequencesInOrderAsOneArray) {
  testing::TempDir tmp;
  // The array is the sequences' tokens in sequence order; the empty one adds nothing.
  write_out_of_order_megatron(tmp / "d_text");
  const std::vector<int64_t> array{10, 11, 12, 13, 20, 21, 22, 30, 31};
  for (const std::string& path : {tmp / "d_text.bin", tmp / "d_text.idx", tmp / "d_text"}) {
    EXPECT_TRUE(TokenSource::recognises(path)) << path;
    auto dataset = open_tokens(path, 2);
    ASSERT_EQ(dataset->size(), 4u);
    // Its tokens are three runs of the file: read into memory, its samples views of them.
    EXPECT_TRUE(viewed(*dataset, 0));
    for (uint64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(sample_field(*dataset, i, 0), slice(array, 2 * i, 2)) << i;
      EXPECT_EQ(sample_field(*dataset, i, 1), slice(array, 2 * i + 1, 2)) << i;
    }
    EXPECT_NE(dataset->describe().find("Megatron-LM indexed dataset: 9 uint16 tokens in 3 "
                                       "documents, 4 samples of seq_len 2"),
              std::string::npos)
        << dataset->describe();
  }
  TokenSourceOptions options;
  options.seq_len = 2;
  auto source = TokenSource::open(tmp / "d_text", options).value_or_throw();
  const auto stamps = source->file_stamps().value_or_throw();
  ASSERT_EQ(stamps.size(), 2u);
  EXPECT_EQ(stamps[1].name, tmp / "d_text.idx");
}

TEST(TokenSource, CorruptMegatronIndexesAreRefusedNamingTheIndex) {
  testing::TempDir tmp;
  write_bytes(tmp / "m.bin", std::string(40, '\1'));  // 20 uint16 tokens
  const std::string idx = tmp / "m.idx";
  const std::string good = testing::megatron_index_bytes(8, {12, 8}, {0, 24}, {0, 2});
  const auto error = [&](const std::string& bytes) {
    write_bytes(idx, bytes);
    return open_error(tmp / "m.bin");
  };
  ASSERT_EQ(error(good), "opened");
  const std::string refused = idx + ": not a Megatron-LM index stoker reads: ";
  EXPECT_EQ(error(good.substr(0, 20)), refused + "20 bytes, fewer than its 34-byte header");
  EXPECT_EQ(error(good.substr(0, good.size() - 8)),
            refused + "2 sequences and 2 document indices, more than its 66 bytes hold");
  EXPECT_EQ(error(good.substr(0, 50)), refused + "2 sequences, more than its 50 bytes hold");
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_EQ(error(magic), refused + "it does not start with MMIDIDX");
  EXPECT_FALSE(TokenSource::recognises(tmp / "m.bin"));
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {12, 8}, {0, 24}, {0, 2}, 2)),
            refused + "version 2, not 1");
  EXPECT_EQ(error(testing::megatron_index_bytes(7, {12, 8}, {0, 24}, {0, 2})),
            refused + "dtype code 7 (float32): not integer token ids");
  EXPECT_EQ(error(testing::megatron_index_bytes(9, {12, 8}, {0, 24}, {0, 2})),
            refused + "dtype code 9, not one of Megatron-LM's (1 to 8)");
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {12, 9}, {0, 24}, {0, 2})),
            refused + "sequence 1: 9 tokens at byte 24, past the end of " + tmp / "m.bin" +
                " (40 bytes)");
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {12, 1},
                                                {0, std::numeric_limits<int64_t>::max()}, {0, 2})),
            refused + "sequence 1: 1 tokens at byte 9223372036854775807, past the end of " +
                tmp / "m.bin" + " (40 bytes)");
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {12, 1}, {0, -2}, {0, 2})),
            refused + "sequence 1: 1 tokens at byte -2, past the end of " + tmp / "m.bin" +
                " (40 bytes)");
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {-1, 8}, {0, 24}, {0, 2})),
            refused + "sequence 0: a length of -1");
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {12, 8}, {0, 24}, {0, 2, 1})),
            refused + "document index 2 is 1, not in [2, 2]");
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {12, 8}, {0, 24}, {1, 2})),
            refused + "document index 0 is 1, not in [0, 0]");
  EXPECT_EQ(error(testing::megatron_index_bytes(8, {12, 8}, {0, 24}, {})),
            refused + "no document index (the first, 0, is always written)");
  EXPECT_EQ(error(good + "xyz"),
            refused +
                "3 bytes after its document indices, neither none nor a mode per sequence "
                "(2)");
  EXPECT_EQ(error(good + "\1\1"), "opened");  // a multimodal dataset's modes
  std::string huge = good;
  const uint64_t count = uint64_t{1} << 62;  // 12 × count overflows
  std::memcpy(huge.data() + 18, &count, sizeof count);
  EXPECT_EQ(error(huge), refused + "4611686018427387904 sequences, more than its 74 bytes hold");
}

TokenSourceOptions boundary_options(int64_t seq_len, int64_t eos_id) {
  TokenSourceOptions options;
  options.seq_len = seq_len;
  options.eos_id = eos_id;
  options.position_ids = options.cu_seqlens = options.mask_boundary_labels = true;
  return options;
}

// Sample i's cu_seqlens: its views' rows, the same as its built record's variable field.
std::vector<int64_t> cu_seqlens(const Dataset& dataset, uint64_t i) {
  const auto index = static_cast<int64_t>(i);
  ShardPins pins = dataset.pin(&index, 1, nullptr).value_or_throw();
  const Dataset::Location at = dataset.locate(i);
  const RecordViews* views = dataset.shard(at.shard).views();
  std::vector<int64_t> out(views->rows(at.record, 3));
  views->write_rows(at.record, 3, reinterpret_cast<uint8_t*>(out.data()));
  const VariableRows built = variable_rows(dataset.schema(), dataset.record(i), 3).value_or_throw();
  EXPECT_EQ(std::vector<int64_t>(reinterpret_cast<const int64_t*>(built.bytes.data),
                                 reinterpret_cast<const int64_t*>(built.bytes.data) + built.rows),
            out)
      << "sample " << i;
  return out;
}

TEST(TokenSource, DocumentBoundariesFromAnEndOfDocumentToken) {
  testing::TempDir tmp;
  // Documents end after each 9: they start at tokens 0, 3, 7 and 9.
  const std::vector<uint16_t> bin{1, 2, 9, 3, 4, 5, 9, 6, 9, 7, 8, 1, 2};
  write_bytes(tmp / "e.bin", token_bytes(bin));
  auto dataset =
      Dataset::open(TokenSource::open(tmp / "e.bin", boundary_options(4, 9)).value_or_throw())
          .value_or_throw();
  ASSERT_EQ(dataset->size(), 3u);
  EXPECT_EQ(dataset->manifest().max_lengths.at("cu_seqlens"), 5u);
  const std::vector<std::vector<int64_t>> labels{{2, 9, -100, 4}, {5, 9, -100, 9}, {-100, 8, 1, 2}};
  const std::vector<std::vector<int64_t>> positions{{0, 1, 2, 0}, {0, 1, 2, 0}, {0, 0, 1, 2}};
  const std::vector<std::vector<int64_t>> cu{{0, 3, 4}, {0, 3, 4}, {0, 1, 4}};
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sample_field(*dataset, i, 0), slice(bin, 4 * i, 4)) << i;
    EXPECT_EQ(sample_field(*dataset, i, 1), labels[i]) << i;
    EXPECT_EQ(sample_field(*dataset, i, 2), positions[i]) << i;
    EXPECT_EQ(cu_seqlens(*dataset, i), cu[i]) << i;
  }
}

TEST(TokenSource, DocumentBoundariesFromMegatronsDocumentIndex) {
  testing::TempDir tmp;
  // Documents start at tokens 0 and 4 (the sequences read into memory, then viewed).
  write_out_of_order_megatron(tmp / "d");
  auto dataset =
      Dataset::open(TokenSource::open(tmp / "d", boundary_options(3, -1)).value_or_throw())
          .value_or_throw();
  ASSERT_EQ(dataset->size(), 2u);
  EXPECT_EQ(sample_field(*dataset, 0, 1), (std::vector<int64_t>{11, 12, 13}));
  EXPECT_EQ(sample_field(*dataset, 0, 2), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(cu_seqlens(*dataset, 0), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(sample_field(*dataset, 1, 0), (std::vector<int64_t>{13, 20, 21}));
  EXPECT_EQ(sample_field(*dataset, 1, 1), (std::vector<int64_t>{-100, 21, 22}));
  EXPECT_EQ(sample_field(*dataset, 1, 2), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(cu_seqlens(*dataset, 1), (std::vector<int64_t>{0, 1, 3}));
}

// How many bytes `dataset`'s source has read after `threads` threads (1: this one) each read
// input_ids of every sample, each thread from its own place on, checking them against `tokens`.
uint64_t read_by_threads(const Dataset& dataset, const std::vector<uint32_t>& tokens,
                         int64_t length, int threads) {
  const auto read_all = [&](int t) {
    const uint64_t n = dataset.size();
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t i = (k + n * static_cast<uint64_t>(t) / static_cast<uint64_t>(threads)) % n;
      EXPECT_EQ(sample_field(dataset, i, 0), slice(tokens, i * length, length)) << i;
    }
  };
  std::vector<std::thread> running;
  for (int t = 1; t < threads; ++t) running.emplace_back(read_all, t);
  read_all(0);
  for (std::thread& thread : running) thread.join();
  return dataset.source().stats().fetched_bytes;
}

// A mapped file's units are views of it: each is read once and kept, its pins holding nothing
// and the loader's plan not asked for, from one thread and from several at once. Units with
// document boundaries of their own follow the plan: let go when their last pin is (no plan
// wants them here), read again when pinned again.
TEST(TokenSource, UnitsOfTheMappingAreReadOnceAndKept) {
  testing::TempDir tmp;
  const int64_t length = 1000;
  const std::vector<uint32_t> tokens = write_counting_units(tmp / "t.bin", length, 5, 7u);
  for (int threads : {1, 4}) {
    auto dataset = open_tokens(tmp / "t.bin", length, TokenType::kUint32);
    ASSERT_EQ(dataset->num_shards(), 3);
    const uint64_t once = dataset->size() * length * sizeof(uint32_t);  // its samples' tokens
    EXPECT_EQ(read_by_threads(*dataset, tokens, length, threads), once) << threads << " threads";
    EXPECT_EQ(read_by_threads(*dataset, tokens, length, threads), once) << threads << " threads";
    for (int u = 0; u < 3; ++u) EXPECT_NE(dataset->source().readers()[u], nullptr) << u;
    EXPECT_FALSE(dataset->follows_plan());  // the loader's plan would change nothing
  }
  TokenSourceOptions options = boundary_options(length, 5);  // no 5 in it: one document
  options.raw_type = TokenType::kUint32;
  auto bounded =
      Dataset::open(TokenSource::open(tmp / "t.bin", options).value_or_throw()).value_or_throw();
  EXPECT_TRUE(bounded->follows_plan());  // it keeps what the plan wants
  const uint64_t unit = bounded->manifest().shards[0].records * length * sizeof(uint32_t);
  for (uint64_t reads = 1; reads <= 2; ++reads) {
    EXPECT_EQ(sample_field(*bounded, 1, 0), slice(tokens, length, length));
    EXPECT_EQ(bounded->source().readers()[0], nullptr);
    EXPECT_EQ(bounded->source().stats().fetched_bytes, unit * reads);
  }
}

TEST(TokenSource, BoundaryOptionsWithoutBoundariesAreOneLineErrors) {
  testing::TempDir tmp;
  write_bytes(tmp / "f.bin", token_bytes(std::vector<uint16_t>(20, 1)));
  auto error = [&](const std::string& path, const TokenSourceOptions& options) {
    Result<std::shared_ptr<TokenSource>> source = TokenSource::open(path, options);
    return source.is_ok() ? "opened" : source.status().message();
  };
  EXPECT_EQ(error(tmp / "f.bin", boundary_options(4, 65536)),
            tmp / "f.bin" + ": eos_id 65536 is no uint16 token (0 to 65535)");
  TokenSourceOptions eos_alone;
  eos_alone.seq_len = 4;
  eos_alone.eos_id = 3;
  EXPECT_NE(error(tmp / "f.bin", eos_alone).find("f.bin: eos_id 3 given, but no field asks"),
            std::string::npos);
  EXPECT_NE(error(tmp / "f.bin", boundary_options(4, -1))
                .find("f.bin: return_position_ids needs document boundaries: give eos_id"),
            std::string::npos);
  // A Megatron index of sequences but no document (its document index only the first 0).
  write_bytes(tmp / "n.bin", token_bytes(std::vector<uint16_t>(20, 1)));
  write_bytes(tmp / "n.idx", testing::megatron_index_bytes(8, {20}, {0}, {0}));
  EXPECT_EQ(error(tmp / "n", boundary_options(4, -1)),
            tmp / "n.idx" +
                ": return_position_ids needs document boundaries, but its document index "
                "holds no document: give eos_id, the end-of-document token id");
  EXPECT_EQ(error(tmp / "n", boundary_options(4, 1)), "opened");
}

// A vocabulary: the first id at or above it fails its unit naming the sample, in a file viewed in
// place, one read into memory (Megatron's sequences out of order) and a packed one; the id
// parameters at or above it are refused at open.
TEST(TokenSource, TokenIdsAtOrAboveTheVocabularyAreRefused) {
  testing::TempDir tmp;
  std::vector<uint16_t> bin(20, 7);
  bin[13] = 500;
  write_bytes(tmp / "v.bin", token_bytes(bin));
  const int64_t zero = 0;
  auto first_error = [&](const std::string& path, TokenSourceOptions options) {
    Result<std::shared_ptr<TokenSource>> source = TokenSource::open(path, options);
    if (!source.is_ok()) return "open: " + source.status().message();
    auto dataset = Dataset::open(source.value()).value_or_throw();
    Result<ShardPins> pins = dataset->pin(&zero, 1, nullptr);
    return pins.is_ok() ? std::string("read") : pins.status().message();
  };
  TokenSourceOptions options;
  options.seq_len = 4;
  options.vocab_size = 500;
  EXPECT_EQ(first_error(tmp / "v.bin", options),
            tmp / "v.bin" + ": sample 3: token 13 is 500, not below vocab_size 500");
  options.vocab_size = 501;
  EXPECT_EQ(first_error(tmp / "v.bin", options), "read");
  options.vocab_size = 70000;  // above every uint16: nothing to scan
  EXPECT_EQ(first_error(tmp / "v.bin", options), "read");
  write_out_of_order_megatron(tmp / "m");  // the array 10 11 12 13 20 21 22 30 31
  options.seq_len = 2;
  options.vocab_size = 31;
  EXPECT_EQ(first_error(tmp / "m", options),
            tmp / "m.bin" + ": sample 3: token 8 is 31, not below vocab_size 31");
  TokenSourceOptions packed;
  packed.seq_len = 4;
  packed.packing = TokenPacking::kFirstFit;
  packed.eos_id = 7;
  packed.vocab_size = 500;
  EXPECT_EQ(first_error(tmp / "v.bin", packed),
            tmp / "v.bin" + ": token 13 is 500, not below vocab_size 500");
  packed.vocab_size = 7;
  EXPECT_EQ(first_error(tmp / "v.bin", packed),
            "open: " + tmp / "v.bin" + ": eos_id 7 is not below vocab_size 7");
  packed.vocab_size = 600;
  packed.pad_id = 600;
  EXPECT_EQ(first_error(tmp / "v.bin", packed),
            "open: " + tmp / "v.bin" + ": pad_id 600 is not below vocab_size 600");
  packed.pad_id = 0;
  packed.prompt_end_id = 650;
  EXPECT_EQ(first_error(tmp / "v.bin", packed),
            "open: " + tmp / "v.bin" + ": prompt_end_id 650 is not below vocab_size 600");
  options.vocab_size = 0;
  EXPECT_EQ(first_error(tmp / "v.bin", options),
            "open: " + tmp / "v.bin" + ": vocab_size 0, not at least 1 (-1: none)");
}

// The scan finds the first id at or above the limit past its first block, for each token size.
TEST(TokenScan, FirstTokenFromAndLargestForEachSize) {
  const auto check = [](auto zero, TokenType type) {
    using T = decltype(zero);
    std::vector<T> tokens(10000, 3);
    tokens[5000] = 9;
    tokens[7000] = 12;
    const auto* bytes = reinterpret_cast<const uint8_t*>(tokens.data());
    EXPECT_EQ(largest_token(type, bytes, tokens.size()), 12u);
    EXPECT_EQ(first_token_from(type, bytes, tokens.size(), 9), std::optional<size_t>(5000));
    EXPECT_EQ(first_token_from(type, bytes, tokens.size(), 10), std::optional<size_t>(7000));
    EXPECT_EQ(first_token_from(type, bytes, tokens.size(), 13), std::nullopt);
  };
  check(uint8_t{}, TokenType::kUint8);
  check(uint16_t{}, TokenType::kUint16);
  check(uint32_t{}, TokenType::kUint32);
  check(uint64_t{}, TokenType::kUint64);
}

}  // namespace
}  // namespace stoker
