#include "stoker/util/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "stoker/util/mapping_registry.h"
#include "stoker/util/regular_file.h"

namespace stoker {

Result<MappedFile> MappedFile::open(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(RegularFile regular, RegularFile::open(path));
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(regular.size());
  int fd = regular.release();
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return io_error(path + ": cannot mmap: " + why);
    }
    file.data_ = static_cast<const uint8_t*>(p);
    register_mapping(p, file.size_, path);
  }
  ::close(fd);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_ != nullptr) {
    unregister_mapping(data_);
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace stoker
