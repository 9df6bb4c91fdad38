// `stoker convert idx|fashion-mnist`: build datasets from source files.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/usage.h"
#include "stoker/store/import/fashion_mnist.h"
#include "stoker/store/import/idx.h"

namespace stoker::cli {

void add_convert_command(CLI::App& app) {
  CLI::App* convert = app.add_subcommand("convert", "Convert source data into a stoker dataset");
  convert->require_subcommand(1);

  auto idx = std::make_shared<IdxImportOptions>();
  auto shard_mb = std::make_shared<uint64_t>(256);
  CLI::App* idx_cmd = convert->add_subcommand(
      "idx", "Convert an IDX images/labels pair (MNIST family, gzip or raw)");
  idx_cmd->add_option("--images", idx->images, "IDX file of images (N, rows, cols)")->required();
  idx_cmd->add_option("--labels", idx->labels, "IDX file of labels (N)")->required();
  idx_cmd->add_option("--out", idx->out, "Dataset directory to create (must not exist)")
      ->required();
  add_whole_number(*idx_cmd, "--shard-mb", *shard_mb, "Shard size in MiB", 1, 1 << 20, "1 TiB")
      ->capture_default_str();
  idx_cmd->callback([idx, shard_mb] {
    idx->shard_bytes = *shard_mb << 20;
    uint64_t n = import_idx(*idx).value_or_throw();
    fmt::print("wrote {} records to {}\n", n, idx->out);
  });

  auto src = std::make_shared<std::string>(kFashionMnistDebianDir);
  auto out = std::make_shared<std::string>(default_fashion_mnist_dir());
  CLI::App* fm =
      convert->add_subcommand("fashion-mnist", "Convert Fashion-MNIST into OUT/train and OUT/test");
  fm->add_option("--src", *src, "Directory with the four IDX .gz files")->capture_default_str();
  fm->add_option("--out", *out,
                 "Output directory ($STOKER_DATA or ~/.cache/stoker + /fashion-mnist)")
      ->capture_default_str();
  fm->callback([src, out] {
    auto start = std::chrono::steady_clock::now();
    throw_if_error(convert_fashion_mnist(*src, *out, /*skip_existing=*/false));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("wrote {0}/train and {0}/test in {1:.2f} s\n", *out, s);
  });
}

}  // namespace stoker::cli
