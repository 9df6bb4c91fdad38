#include "stoker/store/import/token_packing.h"

#include <algorithm>
#include <set>
#include <utility>

#include "stoker/util/checksum.h"

namespace stoker {
namespace {

// The open rows of a plan being made: each one's pieces and free room, and the room indexed so
// that a piece's row is found in O(log rows): first-fit descends a tree of the rows' largest
// room (`most`: node n's children 2n and 2n + 1, row r the leaf leaves + r; a row not open has
// none), best-fit looks up the least room that holds it in `by_room` (rows with room, by room
// then row).
class OpenRows {
 public:
  explicit OpenRows(TokenPacking how) : how_(how) {}

  size_t size() const { return room_.size(); }

  // The open row `how` puts a piece of `count` tokens (at least 1) into, or -1 where none has
  // room.
  int64_t choose(uint64_t count) const {
    if (how_ == TokenPacking::kBestFit) {
      const auto found = by_room_.lower_bound({count, size_t{0}});
      return found == by_room_.end() ? -1 : static_cast<int64_t>(found->second);
    }
    if (most_.empty() || most_[1] < count) return -1;
    size_t n = 1;
    while (n < leaves_) n = most_[2 * n] >= count ? 2 * n : 2 * n + 1;
    return static_cast<int64_t>(n - leaves_);
  }

  // Opens a row of `room` tokens; its index.
  size_t open(uint64_t room) {
    pieces_.emplace_back();
    room_.push_back(0);
    if (how_ == TokenPacking::kFirstFit && room_.size() > leaves_) grow();
    set_room(room_.size() - 1, room);
    return room_.size() - 1;
  }

  void add(size_t row, const PackedPiece& piece) {
    pieces_[row].push_back(piece);
    set_room(row, room_[row] - piece.count);
  }

  // Closes every open row into `plan`, in order.
  void close(PackingPlan& plan) {
    for (const std::vector<PackedPiece>& row : pieces_) {
      plan.pieces.insert(plan.pieces.end(), row.begin(), row.end());
      plan.row_starts.push_back(plan.pieces.size());
    }
    pieces_.clear();
    room_.clear();
    by_room_.clear();
    std::fill(most_.begin(), most_.end(), 0);
  }

 private:
  void set_room(size_t row, uint64_t room) {
    if (how_ == TokenPacking::kBestFit) {
      if (room_[row] > 0) by_room_.erase({room_[row], row});
      if (room > 0) by_room_.insert({room, row});
      room_[row] = room;
      return;
    }
    room_[row] = room;
    size_t n = leaves_ + row;
    most_[n] = room;
    for (n /= 2; n >= 1; n /= 2) most_[n] = std::max(most_[2 * n], most_[2 * n + 1]);
  }

  // Twice the leaves (at least one), the tree made again from the rows' room.
  void grow() {
    leaves_ = std::max<size_t>(1, 2 * leaves_);
    most_.assign(2 * leaves_, 0);
    for (size_t r = 0; r < room_.size(); ++r) most_[leaves_ + r] = room_[r];
    for (size_t n = leaves_ - 1; n >= 1; --n) most_[n] = std::max(most_[2 * n], most_[2 * n + 1]);
  }

  TokenPacking how_;
  std::vector<std::vector<PackedPiece>> pieces_;
  std::vector<uint64_t> room_;
  size_t leaves_ = 0;
  std::vector<uint64_t> most_;
  std::set<std::pair<uint64_t, size_t>> by_room_;
};

}  // namespace

PackingPlan pack_documents(const std::vector<uint64_t>& starts, uint64_t tokens, uint64_t seq_len,
                           uint64_t bins, TokenPacking how) {
  PackingPlan plan;
  OpenRows open(how);
  const auto place = [&](const PackedPiece& piece) {
    int64_t row = open.choose(piece.count);
    if (row < 0) {
      if (open.size() == bins) open.close(plan);
      row = static_cast<int64_t>(open.open(seq_len));
    }
    open.add(static_cast<size_t>(row), piece);
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
