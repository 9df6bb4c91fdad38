#pragma once
// The saved form of what a cache keeps between runs (an image folder's listing, a tar's index, a
// video's index): 8 bytes of magic, the XXH3-64 of the body, then the body, written with put_u64
// and put_text and read back by SavedReader, every read checked against the end. Functions and
// a plain reader; thread-safe to use on distinct objects.

#include <cstdint>
#include <optional>
#include <string>

#include "stoker/util/byte_span.h"

namespace stoker {

void put_u64(std::string& out, uint64_t v);
// The size, then the bytes.
void put_text(std::string& out, const std::string& text);

// `magic` (8 bytes), the body's checksum, the body.
std::string seal(const char (&magic)[8], const std::string& body);
// The body of `bytes` when it starts with `magic` and its checksum holds; nullopt otherwise.
std::optional<ByteSpan> unseal(ByteSpan bytes, const char (&magic)[8]);

// Reads a body: each call false when the rest is too short.
class SavedReader {
 public:
  explicit SavedReader(ByteSpan bytes) : at_(bytes.data), end_(bytes.data + bytes.size) {}
  bool u64(uint64_t& v);
  bool text(std::string& out);
  // A count of items of at least `min_bytes` each that the rest can hold.
  bool count(uint64_t& n, uint64_t min_bytes);
  bool done() const { return at_ == end_; }

 private:
  const uint8_t* at_;
  const uint8_t* end_;
};

// The folders of a cache folder holding saved forms, beside the shard cache's datasets (which a
// shard cache opened on the folder takes for its own): tars' indexes, image and video folders'
// listings, remote Parquet files' footers, videos' indexes (by their bytes), token columns'
// decoded copies (store/import/token_column.h).
inline constexpr const char* kTarIndexFolder = "tar-indexes";
inline constexpr const char* kImageFolderListingFolder = "image-folders";
inline constexpr const char* kVideoFolderListingFolder = "video-folders";
inline constexpr const char* kParquetFooterFolder = "parquet-footers";
inline constexpr const char* kVideoIndexFolder = "video-indexes";
inline constexpr const char* kTokenColumnFolder = "token-columns";  // decoded token columns
// Whether `name` is one of them.
bool is_saved_form_folder(const std::string& name);

// 16 hex digits of the XXH3-64 of `path`'s absolute, normal form: its name in a cache.
std::string path_key(const std::string& path);

// CACHE_DIR/KIND/XXXXXXXXXXXXXXXX.EXTENSION: the file a cache keeps for `path`, named by
// path_key(path).
std::string cache_file_of(const std::string& path, const std::string& cache_dir,
                          const std::string& kind, const std::string& extension);

// The bound on a cache folder's saved forms of one kind that this process's loaders set (their
// cache_gb, in bytes; 0, and where none set one: half the free space plus what they hold), as
// the last loader opened on `cache_dir` set it. Read by videos' saved indexes
// (video/saved_video_bound.h). Thread-safe.
void set_saved_form_bound(const std::string& cache_dir, uint64_t bytes);
uint64_t saved_form_bound(const std::string& cache_dir);

// Writes `bytes` to the cache file `file` (atomic_file.h), its folder made first: best effort,
// as a cache is (a reader that finds no file, or a damaged one, makes it again).
void save_cache_file(const std::string& file, const std::string& bytes);

}  // namespace stoker
