#pragma once
// made_once: a folder of test data made once per build and shared by every test process after.
// ctest runs each test in a process of its own, so a fixture made "once per test program" is made
// once per test; one that takes seconds (the video set) is made here instead, under
// <build>/test-data/, and kept. The folder's name carries a hash of what makes it (the making
// script's bytes), so a changed script makes it anew. Processes that ask at once wait on a lock;
// the first makes the data into a temporary folder and renames it whole, so none sees it half made.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "stoker/testing/build_paths.h"
#include "stoker/util/checksum.h"
#include "stoker/util/file_lock.h"

namespace stoker::testing {

// A hex key of the bytes of `file` (empty when it cannot be read).
inline std::string file_key(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Hash128 hash = xxh3_128(bytes.data(), bytes.size());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(hash.high),
                static_cast<unsigned long long>(hash.low));
  return hex;
}

// The folder <kTestDataDir>/<name>-<key>, made by `make(folder)` (true when it made it whole)
// if no process of this build made it before. Empty when making failed (the next caller tries
// again); nothing of a failed try is left.
inline std::string made_once(const std::string& name, const std::string& key,
                             const std::function<bool(const std::string&)>& make) {
  namespace fs = std::filesystem;
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
