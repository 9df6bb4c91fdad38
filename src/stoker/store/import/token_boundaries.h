#pragma once
// Document boundaries in a token array's concatenate-and-split samples (token_source.h) and the
// fields computed from them, as a viewed reader's computed fields (record_views.h), so a sample's
// boundary fields are written straight into its batch slots as its tokens are.
//
// A document starts at token 0 and after each end-of-document token (the token ends the document
// it closes, as nanoGPT's EOT 50256 and Megatron-LM's EOD do), or where Megatron-LM's document
// index says. Sample i of seq_len L (input_ids: tokens [iL, iL + L)) is made of segments, its
// runs of tokens of one document: one starts at 0, and one at each j in (0, L) where token
// iL + j starts a document. Then:
// - position_ids[j] = j - (the start of j's segment): 0 at each segment's first token, a sample
//   that starts mid-document included. Its tokens before the sample are in no batch the model
//   sees with it, so a position counted from the document's own start would name context that is
//   not there; counted from the segment's start, positions are those a varlen kernel given
//   cu_seqlens sees (each segment a sequence from 0), and they restart exactly where cu_seqlens
//   puts a boundary (Hugging Face's DataCollatorWithFlattening and Megatron-LM's
//   reset_position_ids give the same for segments inside the sample).
// - cu_seqlens: the segment starts, then L (FlashAttention's varlen cu_seqlens for the sample,
//   int64 [segments + 1]).
// - masked labels: labels[j] (token iL + j + 1) is kIgnoredLabel where that token starts a
//   document: the prediction that would cross into the next document; with prompts (an id
//   that ends each document's prompt), also where that token is in its document's prompt.
// - prompts: a document's prompt is its tokens up to its first prompt-end token (that one
//   included; none where it has none), so the labels that predict them are masked and the loss
//   is the response's (the tokens after it), as supervised fine-tuning masks prompt tokens.
// - document_mask: uint8 [L, L], 1 at [q, k] where k <= q and tokens q and k are of one segment
//   (causal attention within each document: block-diagonal, each block lower-triangular), else 0.
// Thread-safe (immutable).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "stoker/store/import/token_layout.h"
#include "stoker/store/record_views.h"

namespace stoker {

// PyTorch's cross_entropy ignore_index: a masked label.
constexpr int64_t kIgnoredLabel = -100;

// The document starts that `n` tokens of `type` at `tokens` give: p + 1 for each token p equal
// to `eos` (which fits `type`), in order.
std::vector<uint32_t> eos_document_starts(TokenType type, const uint8_t* tokens, size_t n,
                                          uint64_t eos);

// The schema's indices of the boundary fields (-1: not asked): labels where they are computed
// (masked at boundaries where `mask_boundaries`, and on prompts); segment_ids for packed rows
// only (token_packing.h).
struct BoundaryFields {
  int labels = -1;
  bool mask_boundaries = false;
  int position_ids = -1;
  int cu_seqlens = -1;
  int segment_ids = -1;
  int document_mask = -1;
  int attention_mask = -1;  // packed rows only
};

// Tokens [first, last] of the array, the targets of masked labels.
struct PromptRange {
  uint64_t first = 0;
  uint64_t last = 0;
};

// The prompts of the documents starting at 0 and at `starts` (sorted) whose prompt-end tokens
// are at `ends` (sorted): each document's tokens from its first up to its first end, in order
// (its first token the target of the label at the document before's last token).
std::vector<PromptRange> document_prompts(const std::vector<uint64_t>& starts,
                                          const std::vector<uint64_t>& ends);

// The prompts' ranges (null: none), and the array index of token 0 of the reader's tokens.
struct PromptMasks {
  std::shared_ptr<const std::vector<PromptRange>> ranges;
  uint64_t first_token = 0;

  // Sets each of the n int64 labels at `out` whose target, token `target` + k of the reader's
  // tokens, lies in a prompt to kIgnoredLabel.
  void apply(uint64_t target, size_t n, uint8_t* out) const;
};

// Stores `value` as the int64 at index `at` of `out` (any alignment); inline, as loops over
// a sample's tokens call it.
inline void store_int64(uint8_t* out, size_t at, int64_t value) {
  std::memcpy(out + at * sizeof(int64_t), &value, sizeof(int64_t));
}
// Writes the document mask of a sample of L tokens whose segments start at `segments` (0, the
// starts in order, then L: its cu_seqlens) into the L * L bytes at `out`.
void write_document_mask(const std::vector<uint64_t>& segments, uint64_t length, uint8_t* out);
// Writes the cu_seqlens `segments` as int64 at `out`.
void write_segments(const std::vector<uint64_t>& segments, uint8_t* out);

// The boundary fields of a unit's samples, the unit's tokens (from its first sample's first
// token) of `type` at `tokens`, `starts` the document starts among them (sorted, each counted
// from that first token, unique; a start at 0 or past the unit's last label is ignored).
class SampleBoundaries : public ComputedFields {
 public:
  SampleBoundaries(std::vector<uint32_t> starts, int64_t seq_len, BoundaryFields fields,
                   TokenType type, const uint8_t* tokens, PromptMasks prompts = {});
  size_t rows(uint64_t i, int field) const override;
  void write(uint64_t i, int field, uint8_t* out) const override;

 private:
  // Sample i's document starts in (iL, iL + L + within) as [first, last) of starts_ (within 0:
  // its segments' starts after 0; 1: also its last label's).
  std::pair<const uint32_t*, const uint32_t*> inside(uint64_t i, uint64_t within) const;
  // Sample i's segments' starts, then L (its cu_seqlens).
  std::vector<uint64_t> segments(uint64_t i) const;

  std::vector<uint32_t> starts_;
  uint64_t seq_len_;
  BoundaryFields fields_;
  TokenType type_;
  const uint8_t* tokens_;
  PromptMasks prompts_;
};

}  // namespace stoker
