#pragma once
// InPlaceFiles: the files a record source reads in place (WebDataset tars, Parquet files):
// local files (local_files, here), or remote objects copied into the shard cache
// (access/remote_files.h). Each file has a name for messages (its path, or its redacted URL),
// an identity (its size, and its modification time or ETag: what a cache keeps about the file,
// such as a tar's index, is of the file while its identity holds), a key under which such a
// cache keeps it, and is opened for reading as a file descriptor that an OpenFile holds open (a
// remote file's cached copy, pinned so that no process evicts it meanwhile). Thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// What a file is: its size, and a local file's modification time in ns or a remote object's
// XXH3-64 of its ETag.
struct FileIdentity {
  uint64_t size = 0;
  int64_t stamp = 0;
  bool operator==(const FileIdentity& o) const { return size == o.size && stamp == o.stamp; }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
};

// A file open for reading: `fd` reads the bytes whose identity is `identity` from `offset` on,
// while `hold` lives. The offset is 0 but for a remote file kept with others in one object of
// the cache (access/remote_files.h's groups: an image folder's files), which only a reader that
// asks for groups gets.
struct OpenFile {
  int fd = -1;
  FileIdentity identity;
  std::shared_ptr<void> hold;
  uint64_t offset = 0;
};

// Bytes [offset, offset + size) of a file.
struct FileRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// A piece of a file that a reader reads by range (a Parquet row group's column chunks): its
// ranges, read as one buffer, their bytes one after the other.
struct FilePiece {
  size_t file = 0;
  std::string what;  // for messages after the file's name: "row group 3"
  std::vector<FileRange> ranges;
};

class InPlaceFiles {
 public:
  virtual ~InPlaceFiles() = default;
  // Each file's name, in the dataset's order.
  virtual const std::vector<std::string>& names() const = 0;
  // File `file`'s identity now (a local file's stat; a remote one's as listed when opened).
  virtual Result<FileIdentity> identity(size_t file) const = 0;
  // 16 hex digits naming file `file` in a cache folder (its absolute path's or URL's XXH3-64).
  virtual std::string key(size_t file) const = 0;
  // File `file` open for reading: one line naming it when it cannot be read; kCancelled when
  // `cancelled` (may be empty) turns true while a remote file is downloaded for it.
  virtual Result<OpenFile> open(size_t file, const std::function<bool()>& cancelled) const = 0;
  // The bytes of `piece`'s ranges, one after the other, read now (not kept: a footer). One line
  // naming the file (a remote one's URL) and the piece's `what` when they cannot all be read.
  virtual Result<std::string> read_ranges(const FilePiece& piece) const;
  // The pieces a reader reads by range, declared once before any is read: remote files keep each
  // in the cache as a unit of its own, and plan's next_read then numbers the pieces, not the
  // files. Local ones need nothing.
  virtual Status declare_pieces(const std::vector<FilePiece>& /*pieces*/) const {
    return Status::ok();
  }
  // Piece `index` of those declared, `piece`: read_ranges' bytes, through the cache for remote
  // files; its errors, and kCancelled as open's.
  virtual Result<std::string> read_piece(size_t /*index*/, const FilePiece& piece,
                                         const std::function<bool()>& /*cancelled*/) const {
    return read_ranges(piece);
  }
  // The files a reader needs next, soonest first (replacing the previous ones): remote files
  // are downloaded ahead of the reader; local ones need nothing.
  virtual void fetch_ahead(const std::vector<size_t>& /*files*/) const {}
  // The declared pieces a reader needs next, soonest first (replacing the previous ones): remote
  // files download them ahead of the reader; local ones need nothing.
  virtual void fetch_pieces_ahead(const std::vector<size_t>& /*pieces*/) const {}
  // The reader's plan (replacing the previous): when each file is next read whole, as a
  // position of its ShardSchedule (kNever: not again), and the position now. A cache of remote
  // files gives up the file read farthest ahead; local ones need nothing.
  virtual void plan(std::function<int64_t(size_t file)> /*next_read*/, int64_t /*position*/) const {
  }
};

// pread into `out` until `n` bytes or the file's end: the bytes read; errors name `path`.
Result<size_t> read_at(int fd, const std::string& path, uint64_t offset, uint8_t* out, size_t n);

// The identity of the regular file open as `fd`; errors name `path`.
Result<FileIdentity> file_identity(int fd, const std::string& path);

// The local files at `paths`.
std::shared_ptr<const InPlaceFiles> local_files(std::vector<std::string> paths);

}  // namespace stoker
