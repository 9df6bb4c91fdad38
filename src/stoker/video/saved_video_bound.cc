#include "stoker/video/saved_video_bound.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "stoker/util/saved_form.h"

namespace stoker::video {
namespace {

namespace fs = std::filesystem;

struct SavedFile {
  std::string path;
  uint64_t bytes = 0;
  int64_t used_ns = 0;  // its mtime, since the epoch
};

// The saved indexes under `cache_dir` (its folder's folders' *.index files; those that vanish
// meanwhile left out, temporaries not counted).
std::vector<SavedFile> list_saved(const std::string& cache_dir) {
  std::vector<SavedFile> files;
  std::error_code ec;
  for (const fs::directory_entry& folder :
       fs::directory_iterator(fs::path(cache_dir) / kVideoIndexFolder, ec)) {
    std::error_code inner;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder.path(), inner)) {
      if (entry.path().extension() != ".index") continue;
      SavedFile file{entry.path().string()};
      struct stat st {};
      if (::stat(file.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      file.bytes = static_cast<uint64_t>(st.st_size);
      file.used_ns = st.st_mtim.tv_sec * int64_t{1'000'000'000} + st.st_mtim.tv_nsec;
      files.push_back(std::move(file));
    }
  }
  return files;
}

uint64_t bytes_of(const std::vector<SavedFile>& files) {
  uint64_t bytes = 0;
  for (const SavedFile& file : files) bytes += file.bytes;
  return bytes;
}

std::mutex held_mutex;
// The bytes of each cache folder's saved indexes, counted at this process's first save there,
// with its saves since.
std::map<std::string, uint64_t>& held() {
  static auto* held = new std::map<std::string, uint64_t>;  // never destroyed: used at exit
  return *held;
}

// The bound on `cache_dir`'s saved indexes when they hold `holding` bytes.
uint64_t bound_of(const std::string& cache_dir, uint64_t holding) {
  if (const uint64_t set = saved_form_bound(cache_dir); set > 0) return set;
  std::error_code ec;
  const fs::space_info space = fs::space(cache_dir, ec);
  return (ec ? 0 : space.available / 2) + holding;
}

}  // namespace

void count_saved_video(const std::string& cache_dir, uint64_t bytes) {
  std::lock_guard lock(held_mutex);
  auto [at, first] = held().try_emplace(cache_dir, 0);
  at->second = first ? bytes_of(list_saved(cache_dir)) : at->second + bytes;
  const uint64_t bound = bound_of(cache_dir, at->second);
  if (at->second > bound) at->second = evict_saved_videos(cache_dir, bound / 8 * 7);
}

void touch_saved_video(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

uint64_t evict_saved_videos(const std::string& cache_dir, uint64_t keep_bytes) {
  std::vector<SavedFile> files = list_saved(cache_dir);
  std::sort(files.begin(), files.end(), [](const SavedFile& a, const SavedFile& b) {
    return std::tie(a.used_ns, a.path) < std::tie(b.used_ns, b.path);
  });
  uint64_t held = bytes_of(files);
  for (const SavedFile& file : files) {
    if (held <= keep_bytes) break;
    std::error_code ec;
    fs::remove(file.path, ec);  // gone already (another process's eviction): room all the same
    held -= file.bytes;
  }
  return held;
}

}  // namespace stoker::video
