#pragma once
// Which files a Parquet path names (store/import/parquet_source.h), without reading them: a
// file, a folder's `*.parquet` files, or the files of a glob pattern. Apart from the reader so
// that a build without Parquet still recognises the data it cannot read. Stateless.

#include <string>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// Whether `path` names Parquet data: a file or glob pattern ending in .parquet, or a directory
// holding a .parquet file.
bool is_parquet_path(const std::string& path);

// The files `path` names, sorted by name: the file itself, a directory's regular `*.parquet`
// files (not its sub-folders'), or a glob pattern's regular files; several such paths one a
// line, each one's files in turn. kNotFound naming the path that names none.
Result<std::vector<std::string>> list_parquet_files(const std::string& path);

}  // namespace stoker
