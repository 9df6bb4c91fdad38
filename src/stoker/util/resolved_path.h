#pragma once
// The path the kernel reaches for a path given by the user, so that the path a command checks
// is the path it then uses: `a/link/../b` is `b` beside the link's target, as open(2) sees it,
// never `a/b` as the text reads. Stateless; thread-safe.

#include <string>

#include "stoker/util/status.h"

namespace stoker {

// The absolute path of `path`: its longest existing prefix resolved by the file system
// (realpath: symbolic links, `.` and `..`), the rest appended with its own `.` and `..`
// removed (they name nothing that exists yet, so no link can redirect them). A trailing `/`
// is dropped. kIoError naming `path` if the existing prefix cannot be resolved (permissions).
Result<std::string> resolved_path(const std::string& path);

}  // namespace stoker
