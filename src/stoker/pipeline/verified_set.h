#pragma once
// VerifiedSet: which records of a dataset have passed their checksum in this process, so that
// the loader's default policy verifies every record the first time it is read and trusts the
// mapped bytes after that. One bit per record. Thread-safe (atomic words, relaxed order: a lost
// race only means a record is verified twice).

#include <atomic>
#include <cstdint>
#include <memory>

namespace stoker {

class VerifiedSet {
 public:
  explicit VerifiedSet(uint64_t records)
      : words_(new std::atomic<uint64_t>[(records + 63) / 64]()) {}

  bool contains(uint64_t i) const {
    return (words_[i / 64].load(std::memory_order_relaxed) >> (i % 64)) & 1;
  }
  void insert(uint64_t i) {
    words_[i / 64].fetch_or(uint64_t{1} << (i % 64), std::memory_order_relaxed);
  }

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
};

}  // namespace stoker
