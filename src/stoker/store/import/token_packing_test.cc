// Whole-document packing: first-fit and best-fit plans as Grain places documents (worked
// examples), every token of random arrays in exactly one whole piece (a property over seq_len,
// bins and rules), and a packed row's fields (its attention mask too) written from the tokens.
#include "stoker/store/import/token_packing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace stoker {
namespace {

// The starts of documents of `lengths`, one after the other from token 0.
std::vector<uint64_t> starts_of(const std::vector<uint64_t>& lengths) {
  std::vector<uint64_t> starts;
  uint64_t at = 0;
  for (uint64_t n : lengths) starts.push_back(at += n);
  return starts;
}

// Each row's pieces as (first, count) pairs.
std::vector<std::vector<std::pair<uint64_t, uint32_t>>> rows_of(const PackingPlan& plan) {
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> rows(plan.rows());
  for (uint64_t r = 0; r < plan.rows(); ++r) {
    for (uint64_t p = plan.row_starts[r]; p < plan.row_starts[r + 1]; ++p)
      rows[r].emplace_back(plan.pieces[p].first, plan.pieces[p].count);
  }
  return rows;
}

using Rows = std::vector<std::vector<std::pair<uint64_t, uint32_t>>>;

TEST(PackDocuments, FirstFitAndBestFitPlaceDocumentsAsGrainDoes) {
  // Documents of 5, 6, 4 and 3 tokens (at 0, 5, 11, 15) in rows of 10, 3 open: first-fit puts
  // the 4 into the first row with room (the 5's), best-fit into the one it fills (the 6's).
  const std::vector<uint64_t> lengths{5, 6, 4, 3};
  const uint64_t tokens = 18;
  EXPECT_EQ(rows_of(pack_documents(starts_of(lengths), tokens, 10, 3, TokenPacking::kFirstFit)),
            (Rows{{{0, 5}, {11, 4}}, {{5, 6}, {15, 3}}}));
  EXPECT_EQ(rows_of(pack_documents(starts_of(lengths), tokens, 10, 3, TokenPacking::kBestFit)),
            (Rows{{{0, 5}, {15, 3}}, {{5, 6}, {11, 4}}}));
  // One open row: a piece that does not fit closes it.
  EXPECT_EQ(rows_of(pack_documents(starts_of(lengths), tokens, 10, 1, TokenPacking::kFirstFit)),
            (Rows{{{0, 5}}, {{5, 6}, {11, 4}}, {{15, 3}}}));
  // Documents of 3, 5 and 3 tokens in rows of 4, 2 open: the 5 is cut into 4 + 1, the 1
  // joining the first row; the last 3 fits no row, so both close and it opens the next.
  const PackingPlan cut = pack_documents({3, 8}, 11, 4, 2, TokenPacking::kFirstFit);
  EXPECT_EQ(rows_of(cut), (Rows{{{0, 3}, {7, 1}}, {{3, 4}}, {{8, 3}}}));
  EXPECT_FALSE(cut.pieces[0].continues);
  EXPECT_FALSE(cut.pieces[1].continues);
  EXPECT_TRUE(cut.pieces[2].continues);  // 3..6: its document goes on at 7
}

TEST(PackDocuments, EveryTokenIsInOneWholePieceOfARowThatHoldsIt) {
  std::mt19937_64 random(5);
  for (uint64_t seq_len : {1, 7, 64}) {
    for (uint64_t bins : {1, 4, 100}) {
      for (TokenPacking how : {TokenPacking::kFirstFit, TokenPacking::kBestFit}) {
        std::vector<uint64_t> lengths(200);
        for (uint64_t& n : lengths) n = 1 + random() % (3 * seq_len);
        const std::vector<uint64_t> starts = starts_of(lengths);
        const uint64_t tokens = starts.back();
        const PackingPlan plan = pack_documents(starts, tokens, seq_len, bins, how);
        std::vector<int> held(tokens, 0);
        for (uint64_t r = 0; r < plan.rows(); ++r) {
          uint64_t used = 0;
          for (uint64_t p = plan.row_starts[r]; p < plan.row_starts[r + 1]; ++p) {
            const PackedPiece& piece = plan.pieces[p];
            for (uint64_t t = piece.first; t < piece.first + piece.count; ++t) ++held[t];
            // The piece is of one document, and continues exactly where that document does.
            const auto end = *std::upper_bound(starts.begin(), starts.end(), piece.first);
            EXPECT_LE(piece.first + piece.count, end);
            EXPECT_EQ(piece.continues, piece.first + piece.count < end);
            used += piece.count;
          }
          EXPECT_GT(used, 0u);
          EXPECT_LE(used, seq_len);
        }
        EXPECT_EQ(std::count(held.begin(), held.end(), 1), static_cast<int64_t>(tokens));
      }
    }
  }
}

// The rules as stated, row by row: each piece to the first open row with room (first-fit), or
// the open row left with the least room, the first such (best-fit); else a new row, every open
// one closed first where `bins` are open. The plan must be this one, however it is found.
Rows stated_rules(const std::vector<uint64_t>& lengths, uint64_t seq_len, uint64_t bins,
                  TokenPacking how) {
  Rows done, open;
  std::vector<uint64_t> room;
  uint64_t at = 0;
  for (uint64_t n : lengths) {
    for (uint64_t first = at; first < at + n; first += seq_len) {
      const auto count = static_cast<uint32_t>(std::min(seq_len, at + n - first));
      size_t row = room.size();
      for (size_t r = 0; r < room.size(); ++r)
        if (room[r] >= count && (row == room.size() || how == TokenPacking::kBestFit) &&
            (row == room.size() || room[r] < room[row]))
          row = r;
      if (row == room.size()) {
        if (room.size() == bins) {
          done.insert(done.end(), open.begin(), open.end());
          open.clear();
          room.clear();
          row = 0;
        }
        open.emplace_back();
        room.push_back(seq_len);
      }
      open[row].emplace_back(first, count);
      room[row] -= count;
    }
    at += n;
  }
  done.insert(done.end(), open.begin(), open.end());
  return done;
}

TEST(PackDocuments, ThePlanIsTheRulesOneOverRandomDocuments) {
  std::mt19937_64 random(11);
  for (uint64_t seq_len : {1, 5, 16}) {
    for (uint64_t bins : {1, 3, 64, 1000}) {
      for (TokenPacking how : {TokenPacking::kFirstFit, TokenPacking::kBestFit}) {
        std::vector<uint64_t> lengths(300);
        for (uint64_t& n : lengths) n = 1 + random() % (2 * seq_len + 1);
        const std::vector<uint64_t> starts = starts_of(lengths);
        EXPECT_EQ(rows_of(pack_documents(starts, starts.back(), seq_len, bins, how)),
                  stated_rules(lengths, seq_len, bins, how))
            << seq_len << " " << bins << " " << static_cast<int>(how);
      }
    }
  }
}

// Many open rows and many pieces: a piece's row is found without looking at every open row
// (each placement was O(bins): 2^16 rows and 4 million pieces took minutes, Ctrl-C unheard).
TEST(PackDocuments, ManyOpenRowsPlanInTimeLinearInThePieces) {
  const uint64_t pieces = uint64_t{1} << 22, seq_len = 4;
  std::vector<uint64_t> lengths(pieces / 2);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = i % 2 ? 3 : 5;  // 3; then 4 + 1
  const std::vector<uint64_t> starts = starts_of(lengths);
  for (TokenPacking how : {TokenPacking::kFirstFit, TokenPacking::kBestFit}) {
    const PackingPlan plan = pack_documents(starts, starts.back(), seq_len, 65536, how);
    uint64_t tokens = 0;
    for (const PackedPiece& piece : plan.pieces) tokens += piece.count;
    EXPECT_EQ(tokens, starts.back());
  }
}

TEST(PackedRows, WritesARowsFieldsFromItsPiecesAndPadding) {
  // Tokens 10..20 (uint16) in documents [0, 3), [3, 8) and [8, 11): the plan above, row 0 =
  // tokens 0..2 and 7, row 1 = 3..6 (its document goes on), row 2 = 8..10 and padding.
  std::vector<uint16_t> tokens(11);
  for (size_t t = 0; t < tokens.size(); ++t) tokens[t] = static_cast<uint16_t>(10 + t);
  auto plan = std::make_shared<const PackingPlan>(
      pack_documents({3, 8}, tokens.size(), 4, 2, TokenPacking::kFirstFit));
  ASSERT_EQ(plan->rows(), 3u);
  BoundaryFields fields;
  fields.position_ids = 2;
  fields.segment_ids = 3;
  fields.cu_seqlens = 4;
  fields.document_mask = 5;
  fields.attention_mask = 6;
  const PackedRows rows(plan, 0, 4, fields, 99, TokenType::kUint16,
                        reinterpret_cast<const uint8_t*>(tokens.data()), 0);
  const auto field = [&](uint64_t i, int f, size_t n) {
    std::vector<int64_t> out(n);
    rows.write(i, f, reinterpret_cast<uint8_t*>(out.data()));
    return out;
  };
  EXPECT_EQ(field(0, 0, 4), (std::vector<int64_t>{10, 11, 12, 17}));
  EXPECT_EQ(field(0, 1, 4), (std::vector<int64_t>{11, 12, -100, -100}));
  EXPECT_EQ(field(0, 2, 4), (std::vector<int64_t>{0, 1, 2, 0}));
  EXPECT_EQ(field(0, 3, 4), (std::vector<int64_t>{1, 1, 1, 2}));
  EXPECT_EQ(field(1, 1, 4), (std::vector<int64_t>{14, 15, 16, 17}));
  EXPECT_EQ(field(2, 0, 4), (std::vector<int64_t>{18, 19, 20, 99}));
  EXPECT_EQ(field(2, 1, 4), (std::vector<int64_t>{19, 20, -100, -100}));
  EXPECT_EQ(field(2, 2, 4), (std::vector<int64_t>{0, 1, 2, 0}));
  EXPECT_EQ(field(2, 3, 4), (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(field(2, 6, 4), (std::vector<int64_t>{1, 1, 1, 0}));  // 0 on padding alone
  EXPECT_EQ(field(1, 6, 4), (std::vector<int64_t>{1, 1, 1, 1}));
  ASSERT_EQ(rows.rows(2, 4), 3u);
  EXPECT_EQ(field(2, 4, 3), (std::vector<int64_t>{0, 3, 4}));
  ASSERT_EQ(rows.rows(1, 4), 2u);
  uint8_t mask[16];
  rows.write(2, 5, mask);
  const uint8_t causal_blocks[16] = {1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1};
  EXPECT_EQ(std::memcmp(mask, causal_blocks, 16), 0);
}

}  // namespace
}  // namespace stoker
