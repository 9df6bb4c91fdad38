// `stoker verify DIR`: everything a reader relies on (store/dataset_check.h): Dataset::open's
// checks of manifest, schema, shard headers, index bounds and footers, then every record's
// checksum, layout and label. DIR is a dataset or a folder of them (each is verified). Lists
// every bad record and exits 1 if any. DIR may be a URL (access/data_source.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/data_access_options.h"
#include "cli/usage.h"
#include "stoker/access/data_source.h"
#include "stoker/store/dataset_check.h"

namespace stoker::cli {

void add_verify_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a dataset's format and every record's checksum; list the bad records");
  auto access = std::make_shared<DataAccessOptions>();
  cmd->add_option("DIR", *dir,
                  "Dataset directory, or a folder of datasets (train/, test/, ...); or its s3:// "
                  "or http(s):// URL")
      ->required()
      ->check(path_value("DIR"));
  add_data_access_options(*cmd, *access);
  cmd->callback([dir, access] {
    const DataLocation where = remote::locate(*dir).value_or_throw();
    std::vector<std::string> failed;
    for (const std::string& location : where.datasets) {
      auto dataset =
          remote::open_dataset(location, *access, remote::kShardByShard).value_or_throw();
      const std::string& path = dataset->dir();
      const uint64_t bad = check_records(
          *dataset, [](const Status& s) { std::fprintf(stderr, "%s\n", s.message().c_str()); });
      const std::string note = new_notes_line(dataset->source().stats(), 0);
      if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
      if (bad > 0) {
        failed.push_back(fmt::format("{}: {} of {} records", path, bad, dataset->size()));
        continue;
      }
      fmt::print("{}: all {} records in {} shard{} verified\n", path, dataset->size(),
                 dataset->num_shards(), dataset->num_shards() == 1 ? "" : "s");
    }
    if (!failed.empty())
      throw Error(corrupt(fmt::format("{} failed verification", fmt::join(failed, "; "))));
  });
}

}  // namespace stoker::cli
