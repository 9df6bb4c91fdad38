#include "cli/augment_option.h"

#include <CLI/CLI.hpp>

#include "cli/usage.h"
#include "stoker/train/training_setup.h"

namespace stoker::cli {

CLI::Option* add_augment_option(CLI::App& command, std::vector<std::string>& ops) {
  return command
      .add_option("--augment", ops,
                  "An operation on each training image after the crop, NAME[:key=value,...], "
                  "repeatable, applied in order (`stoker ops` lists them), e.g. "
                  "color_jitter:brightness=0.4,contrast=0.4,saturation=0.4,hue=0.1")
      ->allow_extra_args(false)
      ->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            Result<OpCall> op = augment_op(text);
            if (!op.is_ok()) throw UsageError("--augment: " + op.status().message());
            text = to_text(op.value());
            return "";
          },
          "", "operation"));
}

}  // namespace stoker::cli
