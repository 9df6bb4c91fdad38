#include "stoker/store/import/fashion_mnist.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "stoker/store/import/idx.h"
#include "stoker/store/manifest.h"
#include "stoker/util/directory_lock.h"

namespace stoker {

std::string default_data_root() {
  if (const char* env = std::getenv("STOKER_DATA"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/stoker";
}

std::string default_fashion_mnist_dir() { return default_data_root() + "/fashion-mnist"; }

bool fashion_mnist_converted(const std::string& out) {
  return Manifest::load(out + "/train").is_ok() && Manifest::load(out + "/test").is_ok();
}

Status convert_fashion_mnist(const std::string& src, const std::string& out, bool skip_existing,
                             const std::function<bool()>& stop_requested) {
  static const std::vector<std::string> kClassNames = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  struct Split {
    const char* name;
    const char* prefix;
  };
  if (!std::filesystem::is_directory(src))
    return not_found(src +
                     ": no such directory (install Debian's dataset-fashion-mnist or pass --src)");
  // Both splits there: a finished conversion, refused as any existing output.
  if (!skip_existing && fashion_mnist_converted(out))
    return already_exists(out + "/train: output directory exists");
  // One conversion into `out` at a time: a second one would take the resume path above and
  // race the first for the split it writes next, failing whichever comes second to it.
  std::optional<DirectoryLock> converting;
  if (!skip_existing) {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    Result<DirectoryLock> lock = DirectoryLock::acquire(out, "output directory");
    if (lock.status().code() == StatusCode::kAlreadyExists)
      return already_exists(out +
                            "/: another process is converting into it; wait for it to end "
                            "or write elsewhere");
    if (!lock.is_ok()) return lock.status();
    converting.emplace(std::move(lock).value());
  }
  for (Split split : {Split{"train", "train"}, Split{"test", "t10k"}}) {
    const std::string dir = out + "/" + split.name;
    IdxImportOptions options;
    options.images = src + "/" + split.prefix + "-images-idx3-ubyte.gz";
    options.labels = src + "/" + split.prefix + "-labels-idx1-ubyte.gz";
    // A split this very conversion wrote before it was killed (its manifest names the same
    // files) is kept: the conversion resumes with the next split.
    const Result<Manifest> existing = Manifest::load(dir);
    if (existing.is_ok() && (skip_existing || existing.value().source == idx_source(options)))
      continue;
    options.out = dir;
    options.class_names = kClassNames;
    options.stop_requested = stop_requested;
    STOKER_RETURN_IF_ERROR(import_idx(options).status());
  }
  return Status::ok();
}

}  // namespace stoker
