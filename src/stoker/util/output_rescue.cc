#include "stoker/util/output_rescue.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace stoker {

Status write_or_rescue(const std::string& what, const std::string& path,
                       const std::function<Status(const std::string&)>& write,
                       std::string* written_to) {
  std::string unused;
  std::string& where = written_to ? *written_to : unused;
  where.clear();
  const Status written = write(path);
  if (written.is_ok()) {
    where = path;
    return written;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string dir = (fs::temp_directory_path(ec) / "stoker-rescue-XXXXXX").string();
  if (ec || ::mkdtemp(dir.data()) == nullptr) {
    return Status(written.code(), written.message() + "; " + what +
                                      " could not be saved elsewhere either (no temporary "
                                      "directory: " +
                                      (ec ? ec.message() : std::strerror(errno)) + ")");
  }
  fs::path name = fs::path(path).lexically_normal().filename();
  if (name.empty() || name == "." || name == "..") name = "output";
  const std::string rescue = (fs::path(dir) / name).string();
  const Status rescued = write(rescue);
  if (!rescued.is_ok()) {
    fs::remove_all(dir, ec);
    return Status(written.code(), written.message() + "; " + what +
                                      " could not be saved elsewhere either (" + rescued.message() +
                                      ")");
  }
  where = rescue;
  return Status(written.code(),
                written.message() + "; " + what + " was saved to " + rescue + " instead");
}

}  // namespace stoker
