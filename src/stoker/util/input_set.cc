#include "stoker/util/input_set.h"

#include <sys/stat.h>

#include <filesystem>

#include "stoker/util/resolved_path.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Adds the regular files directly inside `dir` to `inputs` (by `add`).
template <typename Add>
void add_files_in(const fs::path& dir, const Add& add) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec)) add(entry.path().string());
  }
}

}  // namespace

void InputSet::add(const std::string& path, const std::string& what, bool tree) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return;
  inputs_.push_back({st.st_dev, st.st_ino, path, what, tree});
}

void InputSet::add_tree(const std::string& path, const std::string& what) {
  add(path, what, /*tree=*/true);
}

void InputSet::add_datasets(const std::string& path, const std::string& what) {
  add_tree(path, what);
  const auto add_file_of_tree = [&](const std::string& file) { add(file, what, false); };
  add_files_in(path, add_file_of_tree);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_directory(ec)) add_files_in(entry.path(), add_file_of_tree);
  }
}

void InputSet::add_file(const std::string& path, const std::string& what) {
  add(path, what, /*tree=*/false);
}

const InputSet::Input* InputSet::find(dev_t device, ino_t inode) const {
  for (const Input& input : inputs_) {
    if (input.device == device && input.inode == inode) return &input;
  }
  return nullptr;
}

Status InputSet::check_output(const std::string& flag, const std::string& path) const {
  if (inputs_.empty() || path.empty()) return Status::ok();
  // As the kernel resolves it, the path that the writer then uses (util/resolved_path.h).
  Result<std::string> resolved = resolved_path(path);
  if (!resolved.is_ok()) return Status::ok();  // the output's own check reports it
  fs::path where = std::move(resolved).value();
  for (bool first = true;; first = false) {
    struct stat st {};
    if (::stat(where.c_str(), &st) == 0) {
      if (const Input* input = find(st.st_dev, st.st_ino); input && (first || input->tree)) {
        const std::string relation = !first ? "is inside " + input->what + " '" + input->path + "'"
                                     : input->tree
                                         ? "is " + input->what + " '" + input->path + "'"
                                         : "is '" + input->path + "', a file of " + input->what;
        return invalid_argument(flag + " '" + path + "' " + relation +
                                ": an output never replaces or goes into an input; give another "
                                "path");
      }
    }
    if (!where.has_relative_path()) return Status::ok();  // the root
    where = where.parent_path();
  }
}

}  // namespace stoker
