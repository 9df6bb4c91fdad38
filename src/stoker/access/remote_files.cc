#include "stoker/access/remote_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "stoker/access/remote_objects.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/webdataset_tars.h"
#include "stoker/store/shard_schedule.h"
#include "stoker/util/checksum.h"
#include "stoker/util/thread_annotations.h"

namespace stoker::remote {
namespace {

bool file_has_suffix(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The URLs one line of a spec names: a folder's files with `suffix` (an s3:// folder's
// listing, an http(s):// folder's index page), or a brace pattern's URLs.
Result<std::vector<std::string>> file_urls(const std::string& line, const std::string& suffix) {
  if (!is_remote_url(line))
    return invalid_argument(shown_location(line) +
                            ": not a URL (remote data names every file by URL)");
  if (line.back() != '/') return expand_braces(line);
  STOKER_ASSIGN_OR_RETURN(RemoteUrl folder, parse_remote_url(line));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(folder));
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> names, store->list(""));
  std::vector<std::string> urls;  // in the listing's order: by name
  for (const std::string& name : names)
    if (file_has_suffix(name, suffix)) urls.push_back(line + uri_encode_path(name));
  if (urls.empty())
    return not_found(folder.redacted() + "/: no " + suffix + " files in this folder" +
                     (folder.scheme == UrlScheme::kS3 ? "" : " (its index page links to none)"));
  return urls;
}

}  // namespace

AheadHorizon ahead_horizon(const RemoteFilesOptions& options, const PrefetchInputs& measured) {
  if (options.units_ahead > 0) return {options.units_ahead, RemoteFiles::kAheadDownloads};
  const int streams = download_streams(measured);
  return {std::max({prefetch_depth(measured), streams, measured.unmeasured_depth}), streams};
}

Result<std::shared_ptr<const RemoteFiles>> RemoteFiles::open(const std::string& spec,
                                                             const std::string& suffix,
                                                             std::shared_ptr<ShardCache> cache,
                                                             RemoteFilesOptions options) {
  std::vector<std::string> urls, shown;
  std::istringstream lines(spec);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    shown.push_back(redact_url_text(line));
    STOKER_ASSIGN_OR_RETURN(std::vector<std::string> expanded, file_urls(line, suffix));
    urls.insert(urls.end(), expanded.begin(), expanded.end());
  }
  if (urls.empty()) return invalid_argument("no files named");
  std::string location;
  for (const std::string& line : shown) location += (location.empty() ? "" : "\n") + line;

  std::map<std::string, std::shared_ptr<const ObjectStore>> stores;  // by folder
  std::vector<ListedFile> files;
  std::string folders;  // the files' one folder, or "" when they are in several
  for (size_t i = 0; i < urls.size(); ++i) {
    STOKER_ASSIGN_OR_RETURN(RemoteUrl url, parse_remote_url(urls[i]));
    const size_t slash = url.path.rfind('/');
    const std::string name = slash == std::string::npos ? url.path : url.path.substr(slash + 1);
    if (!file_has_suffix(name, suffix))
      return invalid_argument(url.redacted() + ": not a name ending in " + suffix);
    RemoteUrl folder = url;
    folder.path = slash == std::string::npos ? "" : url.path.substr(0, slash);
    std::shared_ptr<const ObjectStore>& store = stores[folder.normal()];
    if (!store) {
      STOKER_ASSIGN_OR_RETURN(store, store_of(folder));
    }
    folders = i == 0 || folders == folder.redacted() ? folder.redacted() : std::string();
    STOKER_ASSIGN_OR_RETURN(HttpResponse head, store->head(name));
    if (!head.size) return io_error(url.redacted() + ": the server gives no size for it");
    files.push_back({store, name, std::move(url), *head.size, head.etag, head.etag, Status()});
  }
  const std::string part = folders.empty() ? location : folders;
  return create(std::move(files), part, std::move(location), std::move(cache), std::move(options));
}

Result<std::shared_ptr<const RemoteFiles>> RemoteFiles::open_listed(
    std::vector<ListedFile> files, std::string location, std::shared_ptr<ShardCache> cache,
    RemoteFilesOptions options) {
  if (files.empty()) return invalid_argument(location + ": no files named");
  const std::string part = location;
  return create(std::move(files), part, std::move(location), std::move(cache), std::move(options));
}

Result<std::shared_ptr<const RemoteFiles>> RemoteFiles::create(std::vector<ListedFile> listed,
                                                               const std::string& part,
                                                               std::string location,
                                                               std::shared_ptr<ShardCache> cache,
                                                               RemoteFilesOptions options) {
  std::vector<File> files;
  std::vector<std::string> names;
  std::vector<std::string> identities;  // each file's, as its cache object names it
  uint64_t bytes = 0;
  for (ListedFile& l : listed) {
    File file;
    file.store = std::move(l.store);
    file.name = std::move(l.name);
    file.normal = l.url.normal();
    file.etag = std::move(l.etag);
    file.identity.size = l.size;
    file.identity.stamp = static_cast<int64_t>(xxh3_64(l.version.data(), l.version.size()));
    file.key = l.url.cache_key();
    file.unreadable = std::move(l.unreadable);
    identities.push_back(fmt::format("{}\n{}\n{}", file.normal, l.version, l.size));
    names.push_back(l.url.redacted());
    bytes += l.size;
    files.push_back(std::move(file));
  }
  // Groups of consecutive files (a file each by default), each an object of the cache; an
  // unreadable file is alone in its group.
  std::vector<Group> groups;
  std::vector<ShardInfo> objects;
  for (size_t first = 0; first < files.size();) {
    Group group{first, first + 1};
    uint64_t group_bytes = files[first].identity.size;
    while (group.end < files.size() && files[first].unreadable.is_ok() &&
           files[group.end].unreadable.is_ok() &&
           group.end - group.first < static_cast<size_t>(std::max(options.group_files, 1)) &&
           group_bytes + files[group.end].identity.size <= options.group_bytes) {
      group_bytes += files[group.end].identity.size;
      ++group.end;
    }
    ShardInfo object;
    // In the cache by its first file's name in its folder (the checksum of its files' URLs
    // tells it from others so named).
    const std::string& name = files[first].name;
    object.file = name.substr(name.rfind('/') + 1);
    if (group.end - group.first > 1) object.file += fmt::format("+{}", group.end - group.first - 1);
    std::string identity;
    for (size_t i = group.first; i < group.end; ++i) {
      files[i].group = groups.size();
      files[i].offset = object.bytes;
      object.bytes += files[i].identity.size;
      identity += (i == group.first ? "" : "\n") + identities[i];
    }
    object.index_checksum = xxh3_64(identity.data(), identity.size());
    objects.push_back(std::move(object));
    groups.push_back(group);
    first = group.end;
  }
  STOKER_ASSIGN_OR_RETURN(DatasetCache objects_part, cache->objects(part, std::move(objects)));
  std::shared_ptr<RemoteFiles> opened(
      new RemoteFiles(std::move(cache), std::move(objects_part), std::move(options)));
  {
    MutexLock lock(opened->files_measured_.mutex);
    opened->files_measured_.unit_bytes =
        static_cast<double>(bytes) / static_cast<double>(files.size());
  }
  opened->files_ = std::move(files);
  opened->groups_ = std::move(groups);
  opened->names_ = std::move(names);
  opened->location_ = std::move(location);
  return std::shared_ptr<const RemoteFiles>(std::move(opened));
}

// Downloads into the cache the units a reader needs next (files: fetch_ahead; pieces:
// fetch_pieces_ahead), the soonest first not cached nor being downloaded, among the horizon's
// first units listed, on as many of its threads as the horizon's streams; a unit that fails is
// left to the reader (its own read says why), one that finds no room in the cache waits for the
// next list (the reader's move). Its destructor cancels the downloads and joins the threads.
class RemoteFiles::Ahead {
 public:
  // `holds(object)`: the cache has it; `fetch(object, cancelled)`: into the cache (the pin goes
  // at once), its error when it fails; `cancelled` turning true ends it. `horizon()`: the horizon
  // now, in units; a thread is started for each of its streams, up to `most_threads`.
  // `object_of(unit)`: the object of the cache a unit is kept in (a file's group; a piece is
  // its own).
  Ahead(std::function<bool(size_t)> holds,
        std::function<Status(size_t, const std::function<bool()>&)> fetch,
        std::function<AheadHorizon()> horizon, int most_threads,
        std::function<size_t(size_t)> object_of)
      : holds_(std::move(holds)),
        fetch_(std::move(fetch)),
        horizon_(std::move(horizon)),
        object_of_(std::move(object_of)),
        most_threads_(most_threads) {}
  ~Ahead() {
    std::vector<std::thread> threads;
    {
      MutexLock lock(mutex_);
      stop_ = true;
      threads.swap(threads_);
    }
    cancel_ = true;
    wake_.notify_all();
    for (std::thread& thread : threads) thread.join();
  }
  void want(std::vector<size_t> units) {
    {
      MutexLock lock(mutex_);
      wanted_ = std::move(units);
      no_room_ = false;
      start_threads();
    }
    wake_.notify_all();
  }

 private:
  // The object for thread `index` to download next (of the horizon's units), or -1.
  int64_t next(int index) const STOKER_REQUIRES(mutex_) {
    if (no_room_) return -1;
    const AheadHorizon horizon = horizon_();
    if (index >= horizon.streams) return -1;
    const size_t units = std::min(wanted_.size(), static_cast<size_t>(horizon.units));
    for (size_t i = 0; i < units; ++i) {
      const size_t o = object_of_(wanted_[i]);
      if (!busy_.count(o) && !failed_.count(o) && !holds_(o)) return static_cast<int64_t>(o);
    }
    return -1;
  }
  // Threads up to the horizon's streams (idle ones would only wake at every change).
  void start_threads() STOKER_REQUIRES(mutex_) {
    if (stop_) return;  // the destructor joins those it found
    const size_t wanted = static_cast<size_t>(std::min(horizon_().streams, most_threads_));
    while (threads_.size() < wanted) {
      const int index = static_cast<int>(threads_.size());
      threads_.emplace_back([this, index] { download(index); });
    }
  }
  void download(int index) {
    MutexLock lock(mutex_);
    while (true) {
      int64_t unit = -1;
      lock.wait(wake_,
                [&]() STOKER_REQUIRES(mutex_) { return stop_ || (unit = next(index)) >= 0; });
      if (stop_) return;
      busy_.insert(static_cast<size_t>(unit));
      lock.unlock();
      const Status fetched = fetch_(static_cast<size_t>(unit), [this] { return cancel_.load(); });
      lock.lock();
      busy_.erase(static_cast<size_t>(unit));
      if (fetched.code() == StatusCode::kNoRoom) {
        no_room_ = true;
      } else if (!fetched.is_ok()) {
        failed_.insert(static_cast<size_t>(unit));
      }
      start_threads();  // the horizon may have moved with the bandwidth measured
      wake_.notify_all();
    }
  }

  const std::function<bool(size_t)> holds_;
  const std::function<Status(size_t, const std::function<bool()>&)> fetch_;
  const std::function<AheadHorizon()> horizon_;
  const std::function<size_t(size_t)> object_of_;
  std::atomic<bool> cancel_{false};
  Mutex mutex_;
  std::condition_variable wake_;
  std::vector<size_t> wanted_ STOKER_GUARDED_BY(mutex_);
  std::set<size_t> busy_ STOKER_GUARDED_BY(mutex_);    // objects being downloaded
  std::set<size_t> failed_ STOKER_GUARDED_BY(mutex_);  // objects left to the reader
  bool no_room_ STOKER_GUARDED_BY(mutex_) = false;     // until the next list
  bool stop_ STOKER_GUARDED_BY(mutex_) = false;
  const int most_threads_;
  std::vector<std::thread> threads_ STOKER_GUARDED_BY(mutex_);
};

RemoteFiles::RemoteFiles(std::shared_ptr<ShardCache> cache, DatasetCache objects,
                         RemoteFilesOptions options)
    : cache_(std::move(cache)),
      objects_(std::move(objects)),
      options_(options),
      max_streams_(options.max_streams) {}

RemoteFiles::~RemoteFiles() = default;

AheadHorizon RemoteFiles::horizon_of(const Measured& measured) const {
  RemoteFilesOptions options = options_;
  options.max_streams = max_streams_;
  MutexLock lock(measured.mutex);
  return ahead_horizon(options, measured.meter.inputs(measured.unit_bytes, 1, options.max_streams));
}

AheadHorizon RemoteFiles::horizon(bool pieces) const {
  return horizon_of(pieces ? pieces_measured_ : files_measured_);
}

ShardDownload RemoteFiles::timed(ShardDownload download, Measured& measured) {
  return [download = std::move(download), &measured](const ShardInfo& info, int fd,
                                                     const std::function<bool()>& cancelled) {
    const int64_t start = steady_now_ns();
    Status status = download(info, fd, cancelled);
    if (status.is_ok()) {
      MutexLock lock(measured.mutex);
      measured.meter.downloaded(static_cast<double>(info.bytes), (steady_now_ns() - start) / 1e9);
    }
    return status;
  };
}

ShardDownload RemoteFiles::download_of(size_t group) const {
  return [this, group](const ShardInfo& /*info*/, int fd, const std::function<bool()>& cancelled) {
    // The group's files, each at its place, options_.group_streams GETs at once (a small
    // file's GET is mostly a round trip).
    const Group g = groups_[group];
    std::atomic<size_t> next{g.first};
    Mutex failed_mutex;
    Status failed;
    const auto work = [&] {
      for (size_t i; (i = next++) < g.end;) {
        // The object's name in its store, which may be below the store's folder (an image
        // folder's).
        const File& f = files_[i];
        ShardInfo named;
        named.file = f.name;
        named.bytes = f.identity.size;
        Status status = download_from(f.store, f.etag, f.offset)(named, fd, cancelled);
        if (!status.is_ok()) {
          next = g.end;  // the others need not start
          MutexLock lock(failed_mutex);
          if (failed.is_ok()) failed = std::move(status);
        }
      }
    };
    std::vector<std::thread> threads;
    const size_t count = std::min<size_t>(std::max(options_.group_streams, 1), g.end - g.first);
    for (size_t t = 1; t < count; ++t) threads.emplace_back(work);
    work();
    for (std::thread& thread : threads) thread.join();
    return failed;
  };
}

Result<CachedShard> RemoteFiles::fetch_group(size_t group, bool now,
                                             const std::function<bool()>& cancelled) const {
  if (const Status& unreadable = files_[groups_[group].first].unreadable; !unreadable.is_ok())
    return unreadable;
  return objects_.fetch(static_cast<int>(group), timed(download_of(group), files_measured_),
                        advice(group, now), cancelled);
}

int RemoteFiles::threads_ahead() const {
  return options_.units_ahead > 0 ? kAheadDownloads : std::max(max_streams_.load(), 1);
}

void RemoteFiles::count_read(Measured& measured) const {
  {
    MutexLock lock(plan_mutex_);
    if (!next_read_) return;  // not the reader's pace (a tar indexed at open)
  }
  MutexLock lock(measured.mutex);
  measured.meter.moved(++measured.reads, steady_now_ns());
}

void RemoteFiles::fetch_ahead(const std::vector<size_t>& files) const {
  std::call_once(ahead_started_, [&] {
    ahead_ = std::make_unique<Ahead>(
        [this](size_t group) { return objects_.holds(static_cast<int>(group)); },
        [this](size_t group, const std::function<bool()>& cancelled) {
          return fetch_group(group, /*now=*/false, cancelled).status();
        },
        [this] { return horizon_of(files_measured_); }, threads_ahead(),
        // The horizon counts files; what is fetched is their groups.
        [this](size_t file) { return files_[file].group; });
  });
  ahead_->want(files);
}

void RemoteFiles::fetch_pieces_ahead(const std::vector<size_t>& pieces) const {
  const std::shared_ptr<const Pieces> declared = this->declared();
  if (!declared) return;
  std::call_once(pieces_ahead_started_, [&] {
    pieces_ahead_ = std::make_unique<Ahead>(
        [declared](size_t piece) { return declared->cache.holds(static_cast<int>(piece)); },
        [this, declared](size_t piece, const std::function<bool()>& cancelled) {
          return fetch_piece(*declared, piece, /*now=*/false, cancelled).status();
        },
        [this] { return horizon_of(pieces_measured_); }, threads_ahead(),
        [](size_t piece) { return piece; });
  });
  pieces_ahead_->want(pieces);
}

void RemoteFiles::plan(std::function<int64_t(size_t file)> next_read, int64_t position) const {
  MutexLock lock(plan_mutex_);
  next_read_ = std::move(next_read);
  position_ = position;
}

EvictionAdvice RemoteFiles::advice(size_t unit, bool now) const {
  EvictionAdvice advice;
  advice.policy = options_.policy;
  MutexLock lock(plan_mutex_);
  if (!next_read_) return advice;  // no plan yet: every file alike
  // A unit needed now comes before every unit read later, whatever its next read says (it may
  // be read again within its use, e.g. after a resume). A group is next read when its first
  // file to be read is (a file each: the unit is its file, or a declared piece).
  std::function<int64_t(size_t)> next_read = next_read_;
  if (options_.group_files > 1) {
    next_read = [next_read = std::move(next_read), this](size_t group) {
      int64_t soonest = ShardSchedule::kNever;
      for (size_t i = groups_[group].first; i < groups_[group].end; ++i)
        soonest = std::min(soonest, next_read(i));
      return soonest;
    };
  }
  advice.next_use = [next_read = std::move(next_read), unit, at = now ? position_ : -1](int u) {
    const size_t asked = static_cast<size_t>(u);
    return asked == unit && at >= 0 ? at : next_read(asked);
  };
  return advice;
}

Result<std::string> RemoteFiles::read_ranges(const FilePiece& piece) const {
  const File& f = files_[piece.file];
  std::string bytes;
  for (const FileRange& range : piece.ranges) bytes.resize(bytes.size() + range.size);
  STOKER_RETURN_IF_ERROR(get_ranges(*f.store, f.name, f.identity.size, piece.ranges, f.etag,
                                    piece.what, [&](uint64_t at, const char* data, size_t size) {
                                      std::copy(data, data + size,
                                                bytes.begin() + static_cast<ptrdiff_t>(at));
                                      return Status::ok();
                                    }));
  return bytes;
}

Status RemoteFiles::declare_pieces(const std::vector<FilePiece>& pieces) const {
  std::vector<ShardInfo> objects;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const File& f = files_[pieces[i].file];
    // The piece's identity: its file's and its ranges.
    std::string identity = fmt::format("{}\n{}\n{}", f.normal, f.etag, f.identity.size);
    ShardInfo object;
    for (const FileRange& range : pieces[i].ranges) {
      identity += fmt::format("\n{}+{}", range.offset, range.size);
      object.bytes += range.size;
    }
    object.file = fmt::format("{}#{}", f.name, i);
    object.index_checksum = xxh3_64(identity.data(), identity.size());
    objects.push_back(std::move(object));
  }
  if (!objects.empty()) {
    uint64_t bytes = 0;
    for (const ShardInfo& object : objects) bytes += object.bytes;
    MutexLock lock(pieces_measured_.mutex);
    pieces_measured_.unit_bytes = static_cast<double>(bytes) / static_cast<double>(objects.size());
  }
  STOKER_ASSIGN_OR_RETURN(DatasetCache part, cache_->objects(location_, std::move(objects)));
  MutexLock lock(plan_mutex_);
  pieces_ = std::make_shared<const Pieces>(Pieces{pieces, std::move(part)});
  return Status::ok();
}

std::shared_ptr<const RemoteFiles::Pieces> RemoteFiles::declared() const {
  MutexLock lock(plan_mutex_);
  return pieces_;
}

Result<CachedShard> RemoteFiles::fetch_piece(const Pieces& declared, size_t index, bool now,
                                             const std::function<bool()>& cancelled) const {
  const FilePiece& piece = declared.pieces[index];
  const File& f = files_[piece.file];
  const std::string shown = names_[piece.file];
  const ShardDownload download = [&](const ShardInfo& /*info*/, int fd,
                                     const std::function<bool()>& cancelled_download) {
    return get_ranges(*f.store, f.name, f.identity.size, piece.ranges, f.etag, piece.what,
                      file_writer(fd, shown + ": " + piece.what), cancelled_download);
  };
  return declared.cache.fetch(static_cast<int>(index), timed(download, pieces_measured_),
                              advice(index, now), cancelled);
}

Result<std::string> RemoteFiles::read_piece(size_t index, const FilePiece& piece,
                                            const std::function<bool()>& cancelled) const {
  const std::shared_ptr<const Pieces> declared = this->declared();
  if (!declared) return read_ranges(piece);  // none declared: not kept
  const std::string shown = names_[piece.file];
  STOKER_ASSIGN_OR_RETURN(CachedShard copy, fetch_piece(*declared, index, /*now=*/true, cancelled));
  count_read(pieces_measured_);
  uint64_t size = 0;
  for (const FileRange& range : piece.ranges) size += range.size;
  std::string bytes(size, '\0');
  STOKER_ASSIGN_OR_RETURN(size_t got, read_at(copy.fd(), declared->cache.dir(), 0,
                                              reinterpret_cast<uint8_t*>(bytes.data()), size));
  if (got != size)
    return io_error(fmt::format("{}: {}: its cached copy is short", shown, piece.what));
  return bytes;
}

Result<OpenFile> RemoteFiles::open(size_t file, const std::function<bool()>& cancelled) const {
  const File& f = files_[file];
  const size_t group = f.group;
  Result<CachedShard> copy = fetch_group(group, /*now=*/true, cancelled);
  const bool alone = groups_[group].end - groups_[group].first == 1;
  if (!copy.is_ok() && !alone && copy.status().code() != StatusCode::kNoRoom &&
      copy.status().code() != StatusCode::kCancelled)
    return open_alone(file, cancelled);  // a file of the group fails: which one, and why
  if (!copy.is_ok()) return copy.status();
  count_read(files_measured_);
  auto held = std::make_shared<CachedShard>(std::move(copy).value());
  return OpenFile{held->fd(), f.identity, std::move(held), f.offset};
}

Result<OpenFile> RemoteFiles::open_alone(size_t file,
                                         const std::function<bool()>& cancelled) const {
  const File& f = files_[file];
  const int fd = ::open(objects_.dir().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return io_error(fmt::format("{}: cannot make a file in {}: {}", names_[file], objects_.dir(),
                                std::strerror(errno)));
  auto held = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  ShardInfo named;
  named.file = f.name;
  named.bytes = f.identity.size;
  STOKER_RETURN_IF_ERROR(download_from(f.store, f.etag)(named, fd, cancelled));
  return OpenFile{fd, f.identity, std::move(held)};
}

}  // namespace stoker::remote
