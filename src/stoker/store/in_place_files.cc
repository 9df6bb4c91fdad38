#include "stoker/store/in_place_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "stoker/util/regular_file.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

class LocalFiles : public InPlaceFiles {
 public:
  explicit LocalFiles(std::vector<std::string> paths) : paths_(std::move(paths)) {}

  const std::vector<std::string>& names() const override { return paths_; }

  Result<FileIdentity> identity(size_t file) const override {
    STOKER_ASSIGN_OR_RETURN(OpenFile now, open(file));
    return now.identity;
  }

  std::string key(size_t file) const override { return path_key(paths_[file]); }

  Result<OpenFile> open(size_t file) const override {
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

Result<FileIdentity> file_identity(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(fmt::format("{}: {}", path, std::strerror(errno)));
  return FileIdentity{static_cast<uint64_t>(st.st_size),
                      int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

std::shared_ptr<const InPlaceFiles> local_files(std::vector<std::string> paths) {
  return std::make_shared<LocalFiles>(std::move(paths));
}

}  // namespace stoker
