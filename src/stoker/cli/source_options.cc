#include "cli/source_options.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "cli/usage.h"
#include "stoker/access/data_source.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"

namespace stoker::cli {
namespace {

bool is_local_file(const std::string& path) {
  std::error_code error;
  return !remote::is_remote_url(path) && std::filesystem::is_regular_file(path, error);
}

// Whether `auto` reads the local `path` (a file, Megatron-LM's prefix) as a source other than
// stoker's datasets.
bool recognised(const std::string& path) {
  Result<const SourceSpec*> spec = source_for("auto", path);
  return spec.is_ok() && spec.value()->name != "stoker";
}

}  // namespace

void add_source_options(CLI::App& command, SourceChoice& choice) {
  std::vector<std::string> names{"auto"};
  for (const SourceSpec& source : data_sources()) names.push_back(source.name);
  command
      .add_option("--source", choice.name,
                  "What the data is: auto (recognised by its path: stoker's datasets, image "
                  "folders, WebDataset tars, Parquet, a .npy of tokens, Megatron-LM's .bin/.idx) "
                  "or a source by name (tokens: a nanoGPT .bin too)")
      ->check(one_of("--source", names))
      ->capture_default_str();
  command.add_option("--param", choice.params,
                     "A parameter of the source, KEY=VALUE, repeated (as Python's keywords: "
                     "--param seq_len=2048 --param vocab_size=50257)");
}

DataLocation locate_source(const std::string& path, const SourceChoice& choice) {
  DataLocation one;
  one.path = path;
  one.datasets = {path};
  one.train = path;
  if (choice.name != "auto") return one;
  Result<DataLocation> where = remote::locate(path);
  if (where.is_ok() || remote::is_remote_url(path)) return std::move(where).value_or_throw();
  if (recognised(path)) return one;
  if (!is_local_file(path)) return std::move(where).value_or_throw();
  throw Error(Status(where.status().code(),
                     where.status().message() +
                         "; a token file (nanoGPT's headerless .bin) reads with --source tokens "
                         "--param dtype=uint16|uint32"));
}

std::shared_ptr<const Dataset> open_source(const std::string& location,
                                           const DataAccessOptions& access, int64_t shuffle_window,
                                           const SourceChoice& choice) {
  SourceParams params;
  for (const std::string& text : choice.params) {
    const size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0)
      throw UsageError("--param: '" + text + "' is not KEY=VALUE (seq_len=2048)");
    std::string key = text.substr(0, equals);
    std::replace(key.begin(), key.end(), '-', '_');
    params.emplace_back(key, text.substr(equals + 1));
  }
  return remote::open_dataset(location, access, shuffle_window, choice.name, params)
      .value_or_throw();
}

}  // namespace stoker::cli
