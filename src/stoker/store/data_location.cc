#include "stoker/store/data_location.h"

#include <algorithm>
#include <filesystem>

#include "stoker/store/manifest.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// A directory with an entry manifest.json of any kind (a link that loops included: Dataset::open
// says what is wrong with it).
bool is_dataset(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(dir / kManifestName, ec));
}

}  // namespace

Result<DataLocation> locate_data(const std::string& path) {
  DataLocation where;
  where.path = path;
  std::error_code ec;
  const bool directory = fs::is_directory(path, ec);
  if (is_dataset(path) || (!directory && ec && ec != std::errc::no_such_file_or_directory)) {
    where.datasets = {path};
    where.train = path;
    return where;
  }
  if (!directory) return Manifest::load(path).status();  // a file, or nothing there
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (is_dataset(entry.path())) where.datasets.push_back(entry.path().string());
  }
  if (where.datasets.empty()) {
    return not_found(path + ": neither a dataset (no " + kManifestName +
                     ") nor a folder of datasets (train/ and test/ or val/)");
  }
  std::sort(where.datasets.begin(), where.datasets.end());
  where.folder = true;
  auto has = [&](const std::string& split) {
    return std::find(where.datasets.begin(), where.datasets.end(),
                     (fs::path(path) / split).string()) != where.datasets.end();
  };
  if (has("train")) where.train = (fs::path(path) / "train").string();
  if (has("test")) {
    where.eval = (fs::path(path) / "test").string();
  } else if (has("val")) {
    where.eval = (fs::path(path) / "val").string();
  }
  return where;
}

std::string describe_splits(const DataLocation& where) {
  if (!where.folder) return where.path;
  std::string splits;
  for (const std::string& dataset : where.datasets)
    splits += (splits.empty() ? "" : ", ") + fs::path(dataset).filename().string() + "/";
  return splits + " of " + where.path;
}

}  // namespace stoker
