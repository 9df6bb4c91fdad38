// `stoker verify DIR`: a full checksum pass; lists every bad record and exits 1 if any.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "stoker/store/dataset.h"

namespace stoker::cli {

void add_verify_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("verify", "Check every record's checksum; list the bad ones");
  cmd->add_option("dir", *dir, "Dataset directory")->required();
  cmd->callback([dir] {
    auto dataset = Dataset::open(*dir).value_or_throw();
    uint64_t bad = 0;
    for (uint64_t i = 0; i < dataset->size(); ++i) {
      Status s = dataset->verify_record(i);
      if (!s.is_ok()) {
        std::fprintf(stderr, "%s\n", s.message().c_str());
        ++bad;
      }
    }
    if (bad > 0)
      throw Error(corrupt(
          fmt::format("{}: {} of {} records failed verification", *dir, bad, dataset->size())));
    fmt::print("{}: all {} records in {} shard{} verified\n", *dir, dataset->size(),
               dataset->num_shards(), dataset->num_shards() == 1 ? "" : "s");
  });
}

}  // namespace stoker::cli
