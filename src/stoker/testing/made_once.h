#pragma once
// made_once: a folder of test data made once per build and shared by every test process after.
// ctest runs each test in a process of its own, so a fixture made "once per test program" is made
// once per test; one that takes seconds (the video set) is made here instead, under
// <build>/test-data/, and kept. The folder's name carries the checksum of the script that makes
// it, so a changed script makes it anew. Processes that ask at once wait on a lock;
// the first makes the data into a temporary folder and renames it whole, so none sees it half made.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "stoker/testing/build_paths.h"
#include "stoker/util/file_checksum.h"
#include "stoker/util/file_lock.h"

namespace stoker::testing {

// The folder <kTestDataDir>/<name>-<key>, key the checksum of `maker` (the script that makes
// it), made by `make(folder)` (true when it made it whole) if no process of this build made it
// before. Empty when making failed (the next caller tries again); nothing of a failed try is left.
inline std::string made_once(const std::string& name, const std::string& maker,
                             const std::function<bool(const std::string&)>& make) {
  namespace fs = std::filesystem;
  Result<uint64_t> checksum = file_checksum(maker);
  if (!checksum.is_ok()) return {};
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(checksum.value()));
  const fs::path root = kTestDataDir;
  const fs::path folder = root / (name + "-" + key);
  std::error_code ec;
  if (fs::is_directory(folder, ec)) return folder.string();
  fs::create_directories(root, ec);
  Result<FileLock> lock =
      FileLock::acquire((root / (name + ".lock")).string(), LockMode::kExclusive, true, true);
  if (!lock.is_ok()) return {};
  if (fs::is_directory(folder, ec)) return folder.string();
  const fs::path partial = root / (name + "-" + key + ".partial-" + std::to_string(::getpid()));
  fs::remove_all(partial, ec);
  fs::create_directories(partial, ec);
  if (ec || !make(partial.string())) {
    fs::remove_all(partial, ec);
    return {};
  }
  fs::rename(partial, folder, ec);
  if (ec) {
    fs::remove_all(partial, ec);
    return {};
  }
  return folder.string();
}

}  // namespace stoker::testing
