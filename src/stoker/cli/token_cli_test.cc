// `stoker inspect`, `verify` and `bench loader` on token files (--source tokens --param ...,
// cli/source_options.h), the real binary run: what inspect shows, verify's checks of every id
// and of a Megatron-LM index against its .bin, bench's tokens/s; bad files one line, exit 1.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/testing/cli_run.h"
#include "stoker/testing/megatron_bytes.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

using testing::expect_one_line_error;
using testing::run;
using testing::RunResult;

void write_tokens(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(tokens.data()),
             static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
}

// 1000 uint16 tokens, ids 10 + i % 300, but a 7 (the end of a document) at every 100th: the
// largest 308 (token 298).
std::vector<uint16_t> documents() {
  std::vector<uint16_t> tokens(1000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = 10 + i % 300;
  for (size_t i = 99; i < tokens.size(); i += 100) tokens[i] = 7;
  return tokens;
}

class TokenCliTest : public ::testing::Test {
 protected:
  void SetUp() override { write_tokens(bin_, documents()); }

  testing::TempDir dir_;
  const std::string bin_ = dir_ / "train.bin";
  const std::string tokens_ = " --source tokens --param seq_len=16";
};

TEST_F(TokenCliTest, InspectShowsFormatTokensDocumentsSamplesAndLargestId) {
  RunResult r = run("inspect " + bin_ + tokens_ +
                        " --param eos_id=7 --param return_position_ids=true --param "
                        "vocab_size=50257",
                    dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("format    nanoGPT .bin, uint16\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens    1000 (largest id 308, below vocab_size 50257)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("documents 10\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples   62 samples of seq_len 16\n"), std::string::npos) << r.out;
  r = run("inspect --json " + bin_ + tokens_ + " --param dtype=uint32", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("dtype"), "uint32");
  EXPECT_EQ(j.at("tokens"), 500);
  EXPECT_EQ(j.at("samples"), 31);
  EXPECT_TRUE(j.at("documents").is_null());
  EXPECT_EQ(j.at("largest_id"), (uint64_t{307} << 16) + 306);  // tokens 296 and 297
  // Without --source a headerless .bin is not read as tokens; the error says how.
  expect_one_line_error(run("inspect " + bin_, dir_), "--source tokens");
  expect_one_line_error(run("inspect " + bin_ + " --source tokens --param seqlen=4", dir_),
                        "unknown parameter 'seqlen'");
}

TEST_F(TokenCliTest, VerifyChecksEveryIdAgainstTheVocabulary) {
  RunResult r = run("verify " + bin_ + tokens_ + " --param vocab_size=309", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(bin_ + ": all 1000 uint16 tokens verified (ids 0 to 308, below "
                              "vocab_size 309), 62 samples of seq_len 16"),
            std::string::npos)
      << r.out;
  // Token 298 is the first 308; token 999, in the tail no sample holds, is checked too.
  expect_one_line_error(run("verify " + bin_ + tokens_ + " --param vocab_size=308", dir_),
                        bin_ + ": sample 18: token 298 is 308, not below vocab_size 308");
  std::vector<uint16_t> tail = documents();
  tail[999] = 400;
  write_tokens(bin_, tail);
  expect_one_line_error(run("verify " + bin_ + tokens_ + " --param vocab_size=310", dir_),
                        bin_ + ": token 999 is 400, not below vocab_size 310");
  expect_one_line_error(run("verify " + bin_ + tokens_ +
                                " --param eos_id=310 --param "
                                "return_position_ids=true --param "
                                "vocab_size=310",
                            dir_),
                        "eos_id 310 is not below vocab_size 310");
}

TEST_F(TokenCliTest, BadFilesAreOneLineErrors) {
  // A .bin cut short in a token; a Megatron index whose sequences run past its .bin.
  std::ofstream(dir_ / "cut.bin", std::ios::binary) << std::string(2001, 'a');
  for (const char* command : {"inspect ", "verify ", "bench loader --data "})
    expect_one_line_error(run(command + (dir_ / "cut.bin") + tokens_, dir_),
                          dir_ / "cut.bin" + ": 2001 bytes, not a whole number of uint16 tokens");
  write_tokens(dir_ / "m.bin", std::vector<uint16_t>(20, 3));
  std::ofstream(dir_ / "m.idx", std::ios::binary)
      << testing::megatron_index_bytes(8, {12, 9}, {0, 24}, {0, 2});
  // Megatron's dataset is recognised without --source.
  expect_one_line_error(run("verify " + (dir_ / "m.idx") + " --param seq_len=4", dir_),
                        "sequence 1: 9 tokens at byte 24, past the end of " + dir_ / "m.bin");
  std::ofstream(dir_ / "m.idx", std::ios::binary)
      << testing::megatron_index_bytes(8, {12, 8}, {0, 24}, {0, 2});
  RunResult r = run("verify " + (dir_ / "m") + " --param seq_len=4", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("all 20 uint16 tokens verified (ids 0 to 3)"), std::string::npos) << r.out;
}

TEST_F(TokenCliTest, BenchLoaderMeasuresTokensPerSecond) {
  RunResult r = run("bench loader --json --min-seconds 0 --batch 4 --workers 0 --data " + bin_ +
                        tokens_ + " --param vocab_size=50257",
                    dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j.at("tokens_per_s").get<double>(), 16 * j.at("samples_per_s").get<double>());
  expect_one_line_error(
      run("bench loader --min-seconds 0 --data " + bin_ + tokens_ + " --param vocab_size=300",
          dir_),
      "not below vocab_size 300");
}

}  // namespace
}  // namespace stoker
