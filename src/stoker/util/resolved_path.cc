#include "stoker/util/resolved_path.h"

#include <filesystem>
#include <system_error>

namespace stoker {

Result<std::string> resolved_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  // weakly_canonical: the existing prefix by canonical() (the kernel's realpath), then the
  // rest normalised; never the whole path by text.
  if (!ec) absolute = fs::weakly_canonical(absolute, ec);
  if (ec) return io_error("cannot resolve '" + path + "': " + ec.message());
  std::string resolved = absolute.string();
  while (resolved.size() > 1 && resolved.back() == '/') resolved.pop_back();
  return resolved;
}

}  // namespace stoker
