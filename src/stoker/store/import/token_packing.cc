#include "stoker/store/import/token_packing.h"

#include <algorithm>
#include <utility>

#include "stoker/util/checksum.h"

namespace stoker {
namespace {

// The open rows of a plan being made: each one's pieces and free room.
struct OpenRows {
  std::vector<std::vector<PackedPiece>> pieces;
  std::vector<uint64_t> room;

  // The open row `how` puts a piece of `count` tokens into, or -1 where none has room.
  int64_t choose(uint64_t count, TokenPacking how) const {
    int64_t chosen = -1;
    for (size_t r = 0; r < room.size(); ++r) {
      if (room[r] < count) continue;
      if (how == TokenPacking::kFirstFit) return static_cast<int64_t>(r);
      if (chosen < 0 || room[r] < room[static_cast<size_t>(chosen)])
        chosen = static_cast<int64_t>(r);
    }
    return chosen;
  }

  // Closes every open row into `plan`, in order.
  void close(PackingPlan& plan) {
    for (const std::vector<PackedPiece>& row : pieces) {
      plan.pieces.insert(plan.pieces.end(), row.begin(), row.end());
      plan.row_starts.push_back(plan.pieces.size());
    }
    pieces.clear();
    room.clear();
  }
};

}  // namespace

PackingPlan pack_documents(const std::vector<uint64_t>& starts, uint64_t tokens, uint64_t seq_len,
                           uint64_t bins, TokenPacking how) {
  PackingPlan plan;
  OpenRows open;
  const auto place = [&](const PackedPiece& piece) {
    int64_t row = open.choose(piece.count, how);
    if (row < 0) {
      if (open.room.size() == bins) open.close(plan);
      open.pieces.emplace_back();
      open.room.push_back(seq_len);
      row = static_cast<int64_t>(open.room.size() - 1);
    }
    open.pieces[static_cast<size_t>(row)].push_back(piece);
    open.room[static_cast<size_t>(row)] -= piece.count;
  };
  auto next = std::upper_bound(starts.begin(), starts.end(), uint64_t{0});
  for (uint64_t begin = 0; begin < tokens;) {
    while (next != starts.end() && *next <= begin) ++next;
    const uint64_t end = next != starts.end() && *next < tokens ? *next : tokens;
    for (uint64_t first = begin; first < end; first += seq_len) {
      const uint64_t count = std::min(seq_len, end - first);
      place({first, static_cast<uint32_t>(count), first + count < end});
    }
    begin = end;
  }
  open.close(plan);
  return plan;
}

uint64_t PackingPlan::digest(uint64_t first_row, uint64_t count) const {
  std::vector<uint64_t> words;  // each row's piece count, then each piece's first and count
  for (uint64_t r = first_row; r < first_row + count; ++r) {
    words.push_back(row_starts[r + 1] - row_starts[r]);
    for (uint64_t p = row_starts[r]; p < row_starts[r + 1]; ++p) {
      words.push_back(pieces[p].first);
      words.push_back(uint64_t{pieces[p].count} << 1 | (pieces[p].continues ? 1 : 0));
    }
  }
  return xxh3_64(words.data(), words.size() * sizeof(uint64_t));
}

PackedRows::PackedRows(std::shared_ptr<const PackingPlan> plan, uint64_t first_row, int64_t seq_len,
                       BoundaryFields fields, int64_t pad_id, TokenType type, const uint8_t* tokens,
                       uint64_t base, PromptMasks prompts)
    : plan_(std::move(plan)),
      first_row_(first_row),
      seq_len_(static_cast<uint64_t>(seq_len)),
      fields_(fields),
      pad_id_(pad_id),
      type_(type),
      tokens_(tokens),
      base_(base),
      prompts_(std::move(prompts)) {}

std::pair<const PackedPiece*, const PackedPiece*> PackedRows::pieces(uint64_t i) const {
  const PackedPiece* all = plan_->pieces.data();
  return {all + plan_->row_starts[first_row_ + i], all + plan_->row_starts[first_row_ + i + 1]};
}

std::vector<uint64_t> PackedRows::segments(uint64_t i) const {
  const auto [from, to] = pieces(i);
  std::vector<uint64_t> starts{0};
  for (const PackedPiece* p = from; p != to; ++p) starts.push_back(starts.back() + p->count);
  if (starts.back() == seq_len_) starts.pop_back();
  starts.push_back(seq_len_);
  return starts;
}

size_t PackedRows::rows(uint64_t i, int /*field*/) const { return segments(i).size(); }

void PackedRows::write(uint64_t i, int field, uint8_t* out) const {
  if (field == fields_.cu_seqlens) return write_segments(segments(i), out);
  if (field == fields_.document_mask) return write_document_mask(segments(i), seq_len_, out);
  const size_t item = token_type_size(type_);
  const auto [from, to] = pieces(i);
  uint64_t at = 0;  // the piece's first position in the row
  int64_t segment = 0;
  for (const PackedPiece* p = from; p != to; ++p, ++segment) {
    const uint8_t* first = tokens_ + (p->first - base_) * item;
    if (field == 0) {  // input_ids
      widen_to_int64(type_, first, p->count, out + at * sizeof(int64_t));
    } else if (field == 1) {  // labels: the next tokens of the document
      const size_t next = p->count - 1 + (p->continues ? 1 : 0);
      widen_to_int64(type_, first + item, next, out + at * sizeof(int64_t));
      if (!p->continues) store_int64(out, at + p->count - 1, kIgnoredLabel);
      prompts_.apply(p->first + 1, p->count, out + at * sizeof(int64_t));
    } else if (field == fields_.position_ids) {
      for (uint64_t j = 0; j < p->count; ++j) store_int64(out, at + j, static_cast<int64_t>(j));
    } else {  // segment_ids, attention_mask
      const int64_t value = field == fields_.segment_ids ? segment + 1 : 1;
      for (uint64_t j = 0; j < p->count; ++j) store_int64(out, at + j, value);
    }
    at += p->count;
  }
  const int64_t padding = field == 0 ? pad_id_ : field == 1 ? kIgnoredLabel : 0;
  for (; at < seq_len_; ++at) store_int64(out, at, padding);
}

}  // namespace stoker
