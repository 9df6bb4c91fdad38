#include "stoker/store/import/data_files.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

namespace stoker {
namespace {

bool ends_with(const std::string& path, const std::string& ext) {
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

bool is_glob(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

}  // namespace

bool is_data_path(const std::string& path, const std::string& ext) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (ends_with(path, ext)) return is_glob(path) || fs::is_regular_file(path, ec);
  if (!fs::is_directory(path, ec)) return false;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (ends_with(entry.path().string(), ext) && entry.is_regular_file(ec)) return true;
  return false;
}

Result<std::vector<std::string>> list_data_files(const std::string& path, const std::string& ext) {
  if (path.find('\n') != std::string::npos) {
    std::vector<std::string> files;
    for (size_t start = 0; start <= path.size();) {
      const size_t end = std::min(path.find('\n', start), path.size());
      STOKER_ASSIGN_OR_RETURN(std::vector<std::string> some,
                              list_data_files(path.substr(start, end - start), ext));
      files.insert(files.end(), some.begin(), some.end());
      start = end + 1;
    }
    return files;
  }
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (is_glob(path)) {
    glob_t found{};
    if (::glob(path.c_str(), 0, nullptr, &found) == 0)
      for (size_t i = 0; i < found.gl_pathc; ++i)
        if (fs::is_regular_file(found.gl_pathv[i], ec)) files.emplace_back(found.gl_pathv[i]);
    ::globfree(&found);
  } else if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (ends_with(entry.path().string(), ext) && entry.is_regular_file(ec))
        files.push_back(entry.path().string());
  } else if (fs::exists(path, ec)) {
    files.push_back(path);
  } else {
    return not_found(path + ": no such file or directory");
  }
  if (files.empty()) return not_found(path + ": holds no " + ext + " file");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace stoker
