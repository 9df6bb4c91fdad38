#include "stoker/video/video_bytes.h"

#include <algorithm>
#include <cstring>
#include <list>
#include <utility>
#include <vector>

namespace stoker::video {
namespace {

class MemoryBytes : public VideoBytes {
 public:
  MemoryBytes(std::string name, ByteSpan bytes) : name_(std::move(name)), bytes_(bytes) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size; }
  Status read(uint64_t offset, uint8_t* out, size_t n) override {
    std::memcpy(out, bytes_.data + offset, n);
    return Status::ok();
  }

 private:
  std::string name_;
  ByteSpan bytes_;
};

class BlockedBytes : public VideoBytes {
 public:
  BlockedBytes(std::unique_ptr<VideoBytes> source, size_t block_bytes, size_t blocks_kept)
      : source_(std::move(source)), block_bytes_(block_bytes), blocks_kept_(blocks_kept) {}
  const std::string& name() const override { return source_->name(); }
  uint64_t size() const override { return source_->size(); }

  Status read(uint64_t offset, uint8_t* out, size_t n) override {
    while (n > 0) {
      const uint64_t first = offset / block_bytes_;
      STOKER_ASSIGN_OR_RETURN(const std::vector<uint8_t>* block, block_at(first));
      const size_t within = static_cast<size_t>(offset - first * block_bytes_);
      const size_t take = std::min(n, block->size() - within);
      std::memcpy(out, block->data() + within, take);
      offset += take;
      out += take;
      n -= take;
    }
    return Status::ok();
  }

 private:
  // Block `b`, kept or read now.
  Result<const std::vector<uint8_t>*> block_at(uint64_t b) {
    for (auto at = kept_.begin(); at != kept_.end(); ++at)
      if (at->first == b) {
        kept_.splice(kept_.end(), kept_, at);
        return &kept_.back().second;
      }
    const uint64_t start = b * block_bytes_;
    std::vector<uint8_t> block(
        static_cast<size_t>(std::min<uint64_t>(block_bytes_, size() - start)));
    STOKER_RETURN_IF_ERROR(source_->read(start, block.data(), block.size()));
    if (kept_.size() >= blocks_kept_) kept_.pop_front();
    kept_.emplace_back(b, std::move(block));
    return &kept_.back().second;
  }

  std::unique_ptr<VideoBytes> source_;
  const size_t block_bytes_;
  const size_t blocks_kept_;
  std::list<std::pair<uint64_t, std::vector<uint8_t>>> kept_;  // least recently used first
};

}  // namespace

std::unique_ptr<VideoBytes> memory_video_bytes(std::string name, ByteSpan bytes) {
  return std::make_unique<MemoryBytes>(std::move(name), bytes);
}

std::unique_ptr<VideoBytes> blocked_video_bytes(std::unique_ptr<VideoBytes> source,
                                                size_t block_bytes, size_t blocks_kept) {
  return std::make_unique<BlockedBytes>(std::move(source), block_bytes, blocks_kept);
}

}  // namespace stoker::video
