#pragma once
// Which files a path names by their extension (Parquet's ".parquet", Arrow's ".arrow"), without
// reading them: a file, a folder's files of that extension, or the files of a glob pattern.
// Apart from the readers so that a build without Arrow still recognises the data it cannot
// read. Stateless.

#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// Whether `path` names data of extension `ext` (".parquet"): a file or glob pattern ending in
// it, or a directory holding a regular file that does.
bool is_data_path(const std::string& path, const std::string& ext);

// The files `path` names, sorted by name: the file itself, a directory's regular files ending in
// `ext` (not its sub-folders'), or a glob pattern's regular files; several such paths one a
// line, each one's files in turn. kNotFound naming the path that names none.
Result<std::vector<std::string>> list_data_files(const std::string& path, const std::string& ext);

}  // namespace stoker
