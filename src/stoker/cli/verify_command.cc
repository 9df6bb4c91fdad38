// `stoker verify DIR`: everything a reader relies on (store/dataset_check.h): Dataset::open's
// checks of manifest, schema, shard headers, index bounds and footers, then every record's
// checksum, layout and label. Lists every bad record and exits 1 if any.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "stoker/store/dataset_check.h"

namespace stoker::cli {

void add_verify_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a dataset's format and every record's checksum; list the bad records");
  cmd->add_option("DIR", *dir, "Dataset directory")->required();
  cmd->callback([dir] {
    auto dataset = Dataset::open(*dir).value_or_throw();
    const uint64_t bad = check_records(
        *dataset, [](const Status& s) { std::fprintf(stderr, "%s\n", s.message().c_str()); });
    if (bad > 0)
      throw Error(corrupt(
          fmt::format("{}: {} of {} records failed verification", *dir, bad, dataset->size())));
    fmt::print("{}: all {} records in {} shard{} verified\n", *dir, dataset->size(),
               dataset->num_shards(), dataset->num_shards() == 1 ? "" : "s");
  });
}

}  // namespace stoker::cli
