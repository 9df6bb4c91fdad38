#include "stoker/cache/cache_ledger.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <random>

#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHeaderStart = "stoker cache ledger 1 ";
// A rewrite once the file holds more than twice the lines its files need, and this many.
constexpr uint64_t kRewriteLines = 4096;

// The machine's boot, so that a ledger a crash may have cut short is not trusted after it.
const std::string& boot_id() {
  static const std::string id = [] {
    Result<std::string> read = read_file("/proc/sys/kernel/random/boot_id", 64);
    std::string text = read.is_ok() ? read.value() : std::string("unknown");
    text.erase(
        std::remove_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == ' '; }),
        text.end());
    return text;
  }();
  return id;
}

// A path in a line: '%' and newlines escaped.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && s.compare(i, 3, "%25") == 0) {
      out += '%';
      i += 2;
    } else if (s[i] == '%' && s.compare(i, 3, "%0A") == 0) {
      out += '\n';
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string line_of(char op, const std::string& rel, uint64_t bytes, int64_t last_use) {
  const std::string body = fmt::format("{} {} {} {}", op, bytes, last_use, escape(rel));
  return fmt::format("{:016x} {}\n", xxh3_64(body.data(), body.size()), body);
}

template <typename T>
bool parse_number(const std::string& s, size_t& at, T& out) {
  const size_t end = s.find(' ', at);
  if (end == std::string::npos) return false;
  const auto [ptr, ec] = std::from_chars(s.data() + at, s.data() + end, out);
  if (ec != std::errc() || ptr != s.data() + end) return false;
  at = end + 1;
  return true;
}

}  // namespace

int64_t modified_ns(const struct stat& st) {
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

bool is_cached_file_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot != std::string::npos && dot > 0 && name.size() - dot - 1 == 16 &&
         name.find_first_not_of("0123456789abcdef", dot + 1) == std::string::npos;
}

bool is_download_name(const std::string& name) {
  return name.size() >= 5 && name.compare(name.size() - 5, 5, ".part") == 0;
}

std::vector<CacheFile> list_cache_files(const std::string& dir, bool (*named)(const std::string&)) {
  std::vector<CacheFile> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string path = it->path().string();
    if (!named(it->path().filename().string())) continue;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    files.push_back({path, static_cast<uint64_t>(st.st_size)});
  }
  std::sort(files.begin(), files.end(),  // the same order on every file system
            [](const CacheFile& a, const CacheFile& b) { return a.path < b.path; });
  return files;
}

std::vector<std::string> cache_dataset_dirs(const std::string& cache_dir) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (fs::directory_iterator it(cache_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec) && !name.empty() &&
        name.find_first_not_of("0123456789abcdef") == std::string::npos)
      dirs.push_back(it->path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::string CacheLedger::relative(const std::string& path) const {
  return path.compare(0, dir_.size() + 1, dir_ + "/") == 0 ? path.substr(dir_.size() + 1) : path;
}

uint64_t CacheLedger::version() const {
  return xxh3_64(header_.data(), header_.size()) ^ (offset_ * 0x9e3779b97f4a7c15ull);
}

void CacheLedger::clear() {
  header_.clear();
  offset_ = 0;
  lines_ = 0;
  entries_.clear();
  by_use_.clear();
  bytes_ = 0;
  folders_.clear();
  last_op_ = 0;
}

void CacheLedger::put(const std::string& rel, const Entry& entry) {
  erase(rel);
  entries_.emplace(rel, entry);
  by_use_.emplace(entry.last_use, rel);
  bytes_ += entry.bytes;
}

void CacheLedger::erase(const std::string& rel) {
  const auto it = entries_.find(rel);
  if (it == entries_.end()) return;
  by_use_.erase({it->second.last_use, rel});
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

bool CacheLedger::apply(const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) return false;  // torn: its writer was killed mid-line
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    uint64_t hash = 0;
    if (line.size() < 19 || line[16] != ' ' ||
        std::from_chars(line.data(), line.data() + 16, hash, 16).ptr != line.data() + 16)
      return false;
    const std::string body = line.substr(17);
    if (xxh3_64(body.data(), body.size()) != hash || body.size() < 3 || body[1] != ' ')
      return false;
    Entry entry;
    size_t pos = 2;
    if (!parse_number(body, pos, entry.bytes) || !parse_number(body, pos, entry.last_use))
      return false;
    const std::string rel = unescape(body.substr(pos));
    ++lines_;
    if (body[0] == 'd') {
      folders_[rel] = entry.last_use;
      continue;
    }
    if (body[0] == '+') {
      put(rel, entry);
    } else if (body[0] == '-') {
      erase(rel);
    } else {
      return false;
    }
    last_op_ = body[0];
    last_rel_ = rel;
    last_entry_ = entry;
  }
  return true;
}

bool CacheLedger::holds() const {
  struct stat st;
  if (last_op_ != 0) {
    const bool there = ::lstat((dir_ + "/" + last_rel_).c_str(), &st) == 0;
    if (last_op_ == '-' && there) return false;
    if (last_op_ == '+' &&
        !(there && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == last_entry_.bytes))
      return false;
  }
  for (const std::string& d : cache_dataset_dirs(dir_)) {
    const auto folder = folders_.find(relative(d) + "/shards");
    if (::lstat((d + "/shards").c_str(), &st) != 0) continue;  // not made yet: nothing in it
    if (folder == folders_.end() || folder->second != modified_ns(st)) return false;
  }
  return true;
}

Status CacheLedger::sync() {
  const int fd = ::open(ledger_path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) return io_error(ledger_path() + ": " + std::strerror(errno));
    rebuild();
    return Status::ok();
  }
  std::string text;
  struct stat st;
  bool readable = ::fstat(fd, &st) == 0;
  if (readable) {
    size_t got = 0;
    // The header, and what others appended since this copy's last read (all after a rewrite).
    char head[256];
    const ssize_t n = ::pread(fd, head, sizeof head, 0);
    const std::string first(head, n > 0 ? static_cast<size_t>(n) : 0);
    const size_t eol = first.find('\n');
    const std::string header = eol == std::string::npos ? std::string() : first.substr(0, eol + 1);
    readable =
        header.rfind(kHeaderStart, 0) == 0 && header.size() > boot_id().size() + 1 &&
        header.compare(header.size() - boot_id().size() - 1, boot_id().size(), boot_id()) == 0;
    if (readable && (header != header_ || static_cast<uint64_t>(st.st_size) < offset_)) {
      clear();
      header_ = header;
      offset_ = header.size();
    }
    text.resize(readable ? static_cast<size_t>(st.st_size - offset_) : 0);
    while (readable && got < text.size()) {
      const ssize_t r =
          ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(offset_ + got));
      if (r <= 0) readable = false;
      got += r > 0 ? static_cast<size_t>(r) : 0;
    }
  }
  ::close(fd);
  if (!readable || !apply(text)) {
    rebuild();
    return Status::ok();
  }
  offset_ += text.size();
  if (!holds()) rebuild();
  return Status::ok();
}

void CacheLedger::rebuild() {
  clear();
  for (const std::string& d : cache_dataset_dirs(dir_)) {
    struct stat folder;
    if (::lstat((d + "/shards").c_str(), &folder) == 0)
      folders_[relative(d) + "/shards"] = modified_ns(folder);
    for (const CacheFile& f : list_cache_files(d + "/shards", is_cached_file_name)) {
      struct stat st;
      if (::lstat(f.path.c_str(), &st) == 0) put(relative(f.path), {f.bytes, modified_ns(st)});
    }
  }
  // The copy is the listing's either way; a file that cannot be written (a full disk) is
  // removed, so that each sync lists the cache again until one can (as before the ledger).
  if (!write_whole().is_ok()) ::unlink(ledger_path().c_str());
}

Status CacheLedger::write_whole() {
  thread_local std::mt19937_64 nonce(std::random_device{}());
  header_ = fmt::format("{}{:016x} {}\n", kHeaderStart, nonce(), boot_id());
  std::string text = header_;
  for (const auto& [rel, entry] : entries_) text += line_of('+', rel, entry.bytes, entry.last_use);
  for (const auto& [rel, mtime] : folders_) text += line_of('d', rel, 0, mtime);
  const std::string temp = ledger_path() + ".tmp";  // one writer: under cache.lock
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot write " + temp + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written || ::rename(temp.c_str(), ledger_path().c_str()) != 0) {
    ::unlink(temp.c_str());
    header_.clear();  // the next sync rebuilds it
    return io_error("cannot write " + ledger_path() + ": " + std::strerror(errno));
  }
  offset_ = text.size();
  lines_ = entries_.size() + folders_.size();
  last_op_ = 0;
  return Status::ok();
}

void CacheLedger::append(char op, const std::string& rel, const Entry& entry) {
  const std::string line = line_of(op, rel, entry.bytes, entry.last_use);
  const int fd = ::open(ledger_path().c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  const bool written =
      fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  if (fd >= 0) ::close(fd);
  if (!written) {  // a short line would be read as torn: the file goes, rebuilt at the next sync
    ::unlink(ledger_path().c_str());
    header_.clear();
    return;
  }
  offset_ += line.size();
  ++lines_;
  if (op == 'd') return;
  last_op_ = op;
  last_rel_ = rel;
  last_entry_ = entry;
  // (a rewrite that fails leaves the file as it was: complete)
  if (lines_ > kRewriteLines && lines_ > 2 * (entries_.size() + folders_.size()))
    (void)write_whole();
}

void CacheLedger::add(const std::string& path, uint64_t bytes, int64_t mtime_ns) {
  const std::string rel = relative(path);
  const Entry entry{bytes, mtime_ns};
  put(rel, entry);
  append('+', rel, entry);
}

void CacheLedger::remove(const std::string& path) {
  const std::string rel = relative(path);
  erase(rel);
  append('-', rel, Entry());
}

void CacheLedger::changed(const std::string& path) {
  const std::string folder = relative(path.substr(0, path.rfind('/')));
  struct stat st;
  if (::lstat((dir_ + "/" + folder).c_str(), &st) != 0) return;
  folders_[folder] = modified_ns(st);
  append('d', folder, Entry{0, modified_ns(st)});
}

std::vector<CacheFile> CacheLedger::files_of(const std::string& dataset_dir) const {
  const std::string prefix = relative(dataset_dir) + "/shards/";
  std::vector<CacheFile> files;
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    files.push_back({dir_ + "/" + it->first, it->second.bytes});
  return files;
}

void CacheLedger::by_last_use(const std::function<bool(const CacheFile& file)>& visit) {
  auto it = by_use_.begin();
  while (it != by_use_.end()) {
    const auto [use, rel] = *it;
    const auto next = std::next(it);
    const std::string path = dir_ + "/" + rel;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {  // removed by hand
      remove(path);
      changed(path);
      it = next;
      continue;
    }
    if (modified_ns(st) != use) {  // used since: placed again by its last use
      Entry entry = entries_.at(rel);
      entry.last_use = modified_ns(st);
      by_use_.erase(it);
      entries_[rel] = entry;
      const auto placed = by_use_.emplace(entry.last_use, rel).first;
      it = next == by_use_.end() || *placed < *next ? placed : next;
      continue;
    }
    if (!visit({path, entries_.at(rel).bytes})) return;
    it = next;
  }
}

}  // namespace stoker
