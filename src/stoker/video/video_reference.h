#pragma once
// A reference to a video kept elsewhere, stored in a record's video field in place of its bytes
// (a remote video folder's: access/remote_video_opener.h makes them from the listing, without
// reading the video): a sealed blob (util/saved_form.h: magic "STKVREF1", checksum) of where it
// is (the opener that reads it, by `source`; its `name` there; its URL for messages) and which
// version of it (size, ETag or another version). The video's index is keyed by the blob's bytes
// (video_cache.h), so a changed size or ETag is another key. Reading one asks the opener
// registered for its source, process-wide: the layer that knows the server (access/) registers
// it when it opens the folder; video/ knows only VideoBytes. Thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"
#include "stoker/video/video_bytes.h"

namespace stoker::video {

struct VideoReference {
  std::string source;  // the opener's key: the folder's URL
  std::string name;    // the video there
  std::string url;     // its redacted URL, for messages
  uint64_t size = 0;
  std::string etag;     // "" when its listing gave none
  std::string version;  // another version (a modification time) where it gave no ETag
};

std::string encode_video_reference(const VideoReference& reference);
// Whether `bytes` are a reference (by their magic); a video's own bytes never start so.
bool is_video_reference(ByteSpan bytes);
// The reference `bytes` hold; kCorrupt for bytes that are not a whole one.
Result<VideoReference> decode_video_reference(ByteSpan bytes);

// Reads a reference's bytes by ranges (size() its size; a read of a changed video fails naming
// its URL).
using ReferenceOpener =
    std::function<Result<std::unique_ptr<VideoBytes>>(const VideoReference& reference)>;
// Registers `opener` for references whose source is `source` (replacing one registered before).
void register_reference_opener(const std::string& source, ReferenceOpener opener);
// The reference's bytes through its source's opener; kUnsupported where none is
// registered (a record made by another process).
Result<std::unique_ptr<VideoBytes>> open_video_reference(const VideoReference& reference);

// A remote video is read in blocks of kRemoteBlockBytes, the last kRemoteBlocksKept of them kept
// in memory while it is open, and on disk by its opener (access/remote_video_opener.h); a clip
// reads the header and its GOPs' packets: docs/BENCHMARKS.md measured the block's size.
inline constexpr size_t kRemoteBlockBytes = size_t{64} << 10;
inline constexpr size_t kRemoteBlocksKept = 32;

// The bytes of a record's video field `field` (borrowed), named `name`: a reference's, read by
// ranges in blocks, or the field's own.
Result<std::unique_ptr<VideoBytes>> video_field_bytes(const std::string& name, ByteSpan field);

}  // namespace stoker::video
