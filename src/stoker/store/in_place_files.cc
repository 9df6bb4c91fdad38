#include "stoker/store/in_place_files.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "stoker/util/regular_file.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

FileIdentity identity_of(const struct stat& st) {
  return FileIdentity{static_cast<uint64_t>(st.st_size),
                      int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

class LocalFiles : public InPlaceFiles {
 public:
  explicit LocalFiles(std::vector<std::string> paths) : paths_(std::move(paths)) {}

  const std::vector<std::string>& names() const override { return paths_; }

  // One stat() of the path (nothing opened).
  Result<FileIdentity> identity(size_t file) const override {
    STOKER_ASSIGN_OR_RETURN(struct stat st, stat_regular(paths_[file]));
    return identity_of(st);
  }

  std::string key(size_t file) const override { return path_key(paths_[file]); }

  Result<OpenFile> open(size_t file, const std::function<bool()>& /*cancelled*/) const override {
    const std::string& path = paths_[file];
    STOKER_ASSIGN_OR_RETURN(RegularFile opened, RegularFile::open(path));
    auto held = std::make_shared<RegularFile>(std::move(opened));
    STOKER_ASSIGN_OR_RETURN(FileIdentity identity, file_identity(held->fd(), path));
    return OpenFile{held->fd(), identity, std::move(held)};
  }

 private:
  std::vector<std::string> paths_;
};

}  // namespace

Result<std::string> InPlaceFiles::read_ranges(const FilePiece& piece) const {
  const std::string& name = names()[piece.file];
  STOKER_ASSIGN_OR_RETURN(OpenFile opened, open(piece.file, nullptr));
  std::string bytes;
  for (const FileRange& range : piece.ranges) {
    const size_t at = bytes.size();
    bytes.resize(at + range.size);
    STOKER_ASSIGN_OR_RETURN(
        size_t got,
        read_at(opened.fd, name, range.offset, reinterpret_cast<uint8_t*>(&bytes[at]), range.size));
    if (got != range.size)
      return corrupt(fmt::format("{}: {}: the file ends before byte {}", name, piece.what,
                                 range.offset + range.size));
  }
  return bytes;
}

Result<size_t> read_at(int fd, const std::string& path, uint64_t offset, uint8_t* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error(fmt::format("{}: {}", path, std::strerror(errno)));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

Result<FileIdentity> file_identity(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(fmt::format("{}: {}", path, std::strerror(errno)));
  return identity_of(st);
}

std::shared_ptr<const InPlaceFiles> local_files(std::vector<std::string> paths) {
  return std::make_shared<LocalFiles>(std::move(paths));
}

}  // namespace stoker
