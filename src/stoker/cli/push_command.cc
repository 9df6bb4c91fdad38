// `stoker push DIR s3://bucket/prefix`: uploads a verified dataset (or a folder of them) so that
// readers of the URL see the previous version or the new one whole (cli/dataset_upload.h,
// access/dataset_push.h).
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/dataset_upload.h"
#include "cli/usage.h"

namespace stoker::cli {

void add_push_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto url = std::make_shared<std::string>();
  auto prune = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "push",
      "Upload a dataset to S3: verified first, shards under content-qualified names, the "
      "manifest last, so readers see the old version or the new one whole");
  cmd->add_option("DIR", *dir, "Dataset directory, or a folder of datasets (train/, test/, ...)")
      ->required()
      ->check(path_value("DIR"));
  cmd->add_option("URL", *url,
                  "s3://bucket/prefix (keys and endpoint from AWS_ACCESS_KEY_ID, "
                  "AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL or the AWS profile files)")
      ->required();
  cmd->add_flag("--prune", *prune,
                "Then delete the shards (*.stk) beside each manifest that it does not name: "
                "older versions' (their readers lose them) and interrupted pushes'");
  cmd->callback([dir, url, prune] { push_and_report(*dir, open_push_target(*url), *prune); });
}

}  // namespace stoker::cli
