#include "stoker/store/import/token_boundaries.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace stoker {
namespace {

// The starts after each token of type T equal to `eos`.
template <typename T>
std::vector<uint32_t> starts_after(const uint8_t* tokens, size_t n, uint64_t eos) {
  const auto end = static_cast<T>(eos);
  std::vector<uint32_t> starts;
  for (size_t p = 0; p < n; ++p) {
    T value;
    std::memcpy(&value, tokens + p * sizeof(T), sizeof(T));
    if (value == end) starts.push_back(static_cast<uint32_t>(p + 1));
  }
  return starts;
}

}  // namespace

std::vector<uint32_t> eos_document_starts(TokenType type, const uint8_t* tokens, size_t n,
                                          uint64_t eos) {
  // Compared as unsigned bits of the token's size: `eos` fits the type, so a signed token
  // equals it exactly when its bits do.
  switch (token_type_size(type)) {
    case 1:
      return starts_after<uint8_t>(tokens, n, eos);
    case 2:
      return starts_after<uint16_t>(tokens, n, eos);
    case 4:
      return starts_after<uint32_t>(tokens, n, eos);
    default:
      return starts_after<uint64_t>(tokens, n, eos);
  }
}

void write_document_mask(const std::vector<uint64_t>& segments, uint64_t length, uint8_t* out) {
  std::memset(out, 0, length * length);
  for (size_t s = 0; s + 1 < segments.size(); ++s) {
    for (uint64_t q = segments[s]; q < segments[s + 1]; ++q)
      std::memset(out + q * length + segments[s], 1, q - segments[s] + 1);
  }
}

void write_segments(const std::vector<uint64_t>& segments, uint8_t* out) {
  for (size_t row = 0; row < segments.size(); ++row)
    store_int64(out, row, static_cast<int64_t>(segments[row]));
}

std::vector<PromptRange> document_prompts(const std::vector<uint64_t>& starts,
                                          const std::vector<uint64_t>& ends) {
  std::vector<PromptRange> prompts;
  bool taken = false;  // whether the document starting at `done` had its first end
  uint64_t done = 0;
  for (uint64_t end : ends) {
    const auto after = std::upper_bound(starts.begin(), starts.end(), end);
    const uint64_t start = after == starts.begin() ? 0 : *(after - 1);
    if (taken && start == done) continue;  // not the document's first end
    taken = true;
    done = start;
    prompts.push_back({start, end});
  }
  return prompts;
}

void PromptMasks::apply(uint64_t target, size_t n, uint8_t* out) const {
  if (!ranges) return;
  const uint64_t first = first_token + target;
  const uint64_t last = first + n;  // past the last target
  auto range = std::upper_bound(ranges->begin(), ranges->end(), first,
                                [](uint64_t t, const PromptRange& r) { return t <= r.last; });
  for (; range != ranges->end() && range->first < last; ++range) {
    for (uint64_t t = std::max(range->first, first); t <= std::min(range->last, last - 1); ++t)
      store_int64(out, t - first, kIgnoredLabel);
  }
}

SampleBoundaries::SampleBoundaries(std::vector<uint32_t> starts, int64_t seq_len,
                                   BoundaryFields fields, TokenType type, const uint8_t* tokens,
                                   PromptMasks prompts)
    : starts_(std::move(starts)),
      seq_len_(static_cast<uint64_t>(seq_len)),
      fields_(fields),
      type_(type),
      tokens_(tokens),
      prompts_(std::move(prompts)) {}

std::pair<const uint32_t*, const uint32_t*> SampleBoundaries::inside(uint64_t i,
                                                                     uint64_t within) const {
  const uint64_t first = i * seq_len_;
  const uint32_t* begin = starts_.data();
  const uint32_t* end = begin + starts_.size();
  const uint32_t* from = std::upper_bound(begin, end, first);
  const uint32_t* to = std::lower_bound(from, end, first + seq_len_ + within);
  return {from, to};
}

size_t SampleBoundaries::rows(uint64_t i, int /*field*/) const {
  const auto [from, to] = inside(i, 0);
  return static_cast<size_t>(to - from) + 2;  // 0, the starts inside, L
}

void SampleBoundaries::write(uint64_t i, int field, uint8_t* out) const {
  const uint64_t first = i * seq_len_;
  if (field == fields_.labels) {
    const size_t item = token_type_size(type_);
    widen_to_int64(type_, tokens_ + (first + 1) * item, seq_len_, out);
    if (fields_.mask_boundaries) {
      const auto [from, to] = inside(i, 1);
      for (const uint32_t* s = from; s != to; ++s) store_int64(out, *s - first - 1, kIgnoredLabel);
    }
    prompts_.apply(first + 1, seq_len_, out);
  } else if (field == fields_.position_ids) {
    const auto [from, to] = inside(i, 0);
    uint64_t segment = 0;  // the start of the segment of token j
    const uint32_t* next = from;
    for (uint64_t j = 0; j < seq_len_; ++j) {
      if (next != to && *next == first + j) {
        segment = j;
        ++next;
      }
      store_int64(out, j, static_cast<int64_t>(j - segment));
    }
  } else if (field == fields_.document_mask) {
    write_document_mask(segments(i), seq_len_, out);
  } else {  // cu_seqlens
    write_segments(segments(i), out);
  }
}

std::vector<uint64_t> SampleBoundaries::segments(uint64_t i) const {
  const uint64_t first = i * seq_len_;
  const auto [from, to] = inside(i, 0);
  std::vector<uint64_t> starts{0};
  for (const uint32_t* s = from; s != to; ++s) starts.push_back(*s - first);
  starts.push_back(seq_len_);
  return starts;
}

}  // namespace stoker
