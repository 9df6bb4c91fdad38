#pragma once
// VideoBytes: a video's bytes read at random, wherever they are: in memory (a record's), or
// elsewhere by ranges (a remote file's: access/ makes those, video_reference.h). A VideoFile
// reads through one (video_file.h), in blocks and with a small cache of them where the bytes
// are not in memory (blocked_video_bytes). Errors are one line naming the bytes (name()). One
// thread at a time.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker::video {

class VideoBytes {
 public:
  virtual ~VideoBytes() = default;
  // How errors name them ("" : a record's, which the loader names).
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  // Bytes [offset, offset + n) into `out` (within size()).
  virtual Status read(uint64_t offset, uint8_t* out, size_t n) = 0;
};

// `bytes` (borrowed: they outlive the reader), named `name`.
std::unique_ptr<VideoBytes> memory_video_bytes(std::string name, ByteSpan bytes);

// `source` read in blocks of `block_bytes` (aligned), the last `blocks_kept` of them kept (least
// recently used dropped): a demuxer's small reads (64 KiB) cost a request per block, not each.
std::unique_ptr<VideoBytes> blocked_video_bytes(std::unique_ptr<VideoBytes> source,
                                                size_t block_bytes, size_t blocks_kept);

}  // namespace stoker::video
