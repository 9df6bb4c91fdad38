#include "stoker/util/output_set.h"

#include <sys/stat.h>

#include <filesystem>

#include "stoker/util/resolved_path.h"

namespace stoker {
namespace {

// Whether `name` is one of the names `pattern` stands for (a name, or a prefix ending in '*').
bool matches(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*')
    return name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return name == pattern;
}

// Whether two patterns stand for a common name.
bool overlap(const std::string& a, const std::string& b) {
  const bool a_prefix = !a.empty() && a.back() == '*';
  const bool b_prefix = !b.empty() && b.back() == '*';
  if (a_prefix && b_prefix) {
    const size_t n = std::min(a.size(), b.size()) - 1;
    return a.compare(0, n, b, 0, n) == 0;
  }
  return a_prefix ? matches(a, b) : matches(b, a);
}

// Whether the existing files `a` and `b` are one file (a hard link, another mount).
bool same_inode(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

std::string quoted(const std::string& flag, const std::string& path) {
  return flag + " '" + path + "'";
}

}  // namespace

std::string OutputSet::clash(const Output& a, const Output& b) {
  if (a.resolved == b.resolved || (!a.dir && !b.dir && same_inode(a.resolved, b.resolved))) {
    if (a.dir && b.dir) {
      for (const std::string& x : a.writes)
        for (const std::string& y : b.writes)
          if (overlap(x, y)) return "both write '" + (x.back() == '*' ? y : x) + "' in it";
      return "";
    }
    return "name the same " + std::string(a.dir || b.dir ? "path" : "file");
  }
  // A file that a directory output writes into it.
  const Output* file = a.dir ? &b : &a;
  const Output* dir = a.dir ? &a : &b;
  if (file->dir || !dir->dir) return "";
  const std::filesystem::path path(file->resolved);
  if (path.parent_path().string() != dir->resolved) return "";
  const std::string name = path.filename().string();
  for (const std::string& pattern : dir->writes)
    if (matches(pattern, name)) return "is a file " + quoted(dir->flag, dir->given) + " writes";
  return "";
}

Status OutputSet::add(Output output) {
  if (output.given.empty()) return Status::ok();
  Result<std::string> resolved = resolved_path(output.given);
  if (!resolved.is_ok()) return Status::ok();  // the output's own check reports it
  output.resolved = std::move(resolved).value();
  for (const Output& earlier : outputs_) {
    const std::string why = clash(output, earlier);
    if (why.empty()) continue;
    const bool file_in_dir = why.rfind("is a file", 0) == 0;
    const Output& file = !output.dir ? output : earlier;
    const std::string subject = file_in_dir ? quoted(file.flag, file.given) + " " + why
                                            : quoted(earlier.flag, earlier.given) + " and " +
                                                  quoted(output.flag, output.given) + " " + why;
    return invalid_argument(subject +
                            ": one output would replace the other; give each its own path");
  }
  outputs_.push_back(std::move(output));
  return Status::ok();
}

Status OutputSet::add_file(const std::string& flag, const std::string& path) {
  return add({flag, path, "", false, {}});
}

Status OutputSet::add_dir(const std::string& flag, const std::string& path,
                          std::vector<std::string> writes) {
  return add({flag, path, "", true, std::move(writes)});
}

}  // namespace stoker
