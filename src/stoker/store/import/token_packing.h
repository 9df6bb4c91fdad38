#pragma once
// Whole-document packing of a token array (token_source.h): its documents (token_boundaries.h's)
// placed whole into rows of seq_len L, padded, as Google Grain's first-fit and best-fit packing
// place them, so no document is cut where the loader would cut it by position.
//
// A document of n tokens is its pieces: floor(n / L) of L tokens, then the rest (if any), in
// order; a piece is placed whole. The pieces, in array order, go into `bins` open rows (Grain's
// num_packing_bins): first-fit puts a piece into the first open row with room for it, best-fit
// into the open row it leaves with the least room (the first such); a piece that fits none opens
// a row while fewer than `bins` are open, else every open row is closed, in order (the rows of
// the plan), and it starts the next ones. At the end the open rows are closed. So the plan is a
// pure function of the documents' lengths, L, `bins` and the rule, and every token of the array
// is in exactly one row.
//
// Row r's fields (written by PackedRows): its pieces one after the other from position 0, then
// padding to L. input_ids: the pieces' tokens, pad_id on padding. labels: each position's next
// token where it is of the same document (a piece cut from a longer document predicts the next
// piece's first token), else kIgnoredLabel: a document's last token, and padding; with prompts
// (token_boundaries.h), also where that token is in its document's prompt.
// position_ids: 0 at each piece's first token (as concatenate-and-split's segments count), 0 on
// padding. segment_ids: k + 1 on the k-th piece of the row, 0 on padding (Grain's). cu_seqlens:
// the pieces' starts, the padding's start where there is padding, then L: the padding is a
// segment of its own, so the row's segments cover it whole. document_mask: token_boundaries.h's
// over those segments. attention_mask: 1 on the pieces' tokens, 0 on padding. Thread-safe
// (immutable).

#include <cstdint>
#include <memory>
#include <vector>

#include "stoker/store/import/token_boundaries.h"

namespace stoker {

enum class TokenPacking { kNone, kFirstFit, kBestFit };

// A piece of a document placed in a row: tokens [first, first + count) of the array;
// `continues`: the token after it is of the same document (the next piece's first).
struct PackedPiece {
  uint64_t first = 0;
  uint32_t count = 0;
  bool continues = false;
};

struct PackingPlan {
  std::vector<PackedPiece> pieces;      // row after row, each row's in place order
  std::vector<uint64_t> row_starts{0};  // row r: pieces [row_starts[r], row_starts[r + 1])

  uint64_t rows() const { return row_starts.size() - 1; }
  // The XXH3-64 of rows [first_row, first_row + count)'s pieces: a unit's identity, so that a
  // loader's state restores only into a plan of the same rows.
  uint64_t digest(uint64_t first_row, uint64_t count) const;
};

// The plan of an array of `tokens` tokens whose documents start at 0 and at each of `starts`
// (sorted; those outside (0, tokens) and repeats are ignored), in rows of `seq_len` tokens
// (1 to 2^31), `bins` open rows (from 1), by `how` (kFirstFit or kBestFit).
PackingPlan pack_documents(const std::vector<uint64_t>& starts, uint64_t tokens, uint64_t seq_len,
                           uint64_t bins, TokenPacking how);

// The fields of rows [first_row, ...) of `plan` (row first_row + i is record i), their tokens of
// `type` at `tokens`, token t of the array at index t - `base` (each row's tokens and the labels
// after them held there).
class PackedRows : public ComputedFields {
 public:
  PackedRows(std::shared_ptr<const PackingPlan> plan, uint64_t first_row, int64_t seq_len,
             BoundaryFields fields, int64_t pad_id, TokenType type, const uint8_t* tokens,
             uint64_t base, PromptMasks prompts = {});
  size_t rows(uint64_t i, int field) const override;
  void write(uint64_t i, int field, uint8_t* out) const override;

 private:
  // Record i's pieces, [first, last).
  std::pair<const PackedPiece*, const PackedPiece*> pieces(uint64_t i) const;
  // Record i's segments' starts, then L (its cu_seqlens).
  std::vector<uint64_t> segments(uint64_t i) const;

  std::shared_ptr<const PackingPlan> plan_;
  uint64_t first_row_;
  uint64_t seq_len_;
  BoundaryFields fields_;
  int64_t pad_id_;
  TokenType type_;
  const uint8_t* tokens_;
  uint64_t base_;
  PromptMasks prompts_;  // of the array's tokens (first_token 0)
};

}  // namespace stoker
