#include "stoker/util/saved_form.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker {

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

void put_text(std::string& out, const std::string& text) {
  put_u64(out, text.size());
  out += text;
}

std::string seal(const char (&magic)[8], const std::string& body) {
  std::string out(magic, sizeof magic);
  put_u64(out, xxh3_64(body.data(), body.size()));
  return out + body;
}

std::optional<ByteSpan> unseal(ByteSpan bytes, const char (&magic)[8]) {
  if (bytes.size < 16 || std::memcmp(bytes.data, magic, sizeof magic) != 0) return std::nullopt;
  uint64_t checksum = 0;
  std::memcpy(&checksum, bytes.data + 8, 8);
  const ByteSpan body{bytes.data + 16, bytes.size - 16};
  if (xxh3_64(body.data, body.size) != checksum) return std::nullopt;
  return body;
}

bool SavedReader::u64(uint64_t& v) {
  if (end_ - at_ < 8) return false;
  std::memcpy(&v, at_, 8);
  at_ += 8;
  return true;
}

bool SavedReader::text(std::string& out) {
  uint64_t n = 0;
  if (!u64(n) || n > static_cast<uint64_t>(end_ - at_)) return false;
  out.assign(reinterpret_cast<const char*>(at_), n);
  at_ += n;
  return true;
}

bool SavedReader::count(uint64_t& n, uint64_t min_bytes) {
  return u64(n) && n <= static_cast<uint64_t>(end_ - at_) / min_bytes;
}

bool is_saved_form_folder(const std::string& name) {
  return name == kTarIndexFolder || name == kImageFolderListingFolder ||
         name == kVideoFolderListingFolder || name == kParquetFooterFolder ||
         name == kVideoIndexFolder || name == kTokenColumnFolder;
}

std::string path_key(const std::string& path) {
  std::error_code ignored;
  const std::string absolute = std::filesystem::absolute(path, ignored).lexically_normal().string();
  return fmt::format("{:016x}", xxh3_64(absolute.data(), absolute.size()));
}

std::string cache_file_of(const std::string& path, const std::string& cache_dir,
                          const std::string& kind, const std::string& extension) {
  return fmt::format("{}/{}/{}.{}", cache_dir, kind, path_key(path), extension);
}

namespace {

std::mutex bounds_mutex;
std::map<std::string, uint64_t>& bounds() {
  static auto* bounds = new std::map<std::string, uint64_t>;  // never destroyed: used at exit
  return *bounds;
}

}  // namespace

void set_saved_form_bound(const std::string& cache_dir, uint64_t bytes) {
  std::lock_guard lock(bounds_mutex);
  bounds()[cache_dir] = bytes;
}

uint64_t saved_form_bound(const std::string& cache_dir) {
  std::lock_guard lock(bounds_mutex);
  const auto at = bounds().find(cache_dir);
  return at == bounds().end() ? 0 : at->second;
}

void save_cache_file(const std::string& file, const std::string& bytes) {
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ignored);
  (void)write_file_atomically(file, bytes);
}

}  // namespace stoker
